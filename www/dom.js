// The one DOM helper the page's modules share.

/** A new element: `props` assigned to it (className, title, ...), then `children` appended. */
export function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}
