// Appended to wasm-bindgen's glue (pkg/reconnect_dedupe.js) by scripts/lib-pkg.mjs,
// with one `guardInstances(...)` line naming the glue's exported classes; it runs in
// the glue's module scope. Two misuses of an instance otherwise end in wasm-bindgen's
// own uncoded errors:
// * a call on an instance already freed: "null pointer passed to rust";
// * free() from inside the instance's own call (a getter or valueOf of an argument it
//   is reading): "attempted to take ownership of Rust value while it was borrowed"
//   thrown through that call, the instance unusable after and its memory never freed.
// Here the first throws `instance_freed`, naming the call; the second throws
// `instance_busy` from free() and frees nothing, so the call goes on and the instance
// stays usable. A call's own re-entry (a getter calling another method of the same
// instance) is refused the same way, `instance_busy`.

function guardInstances(...classes) {
  const busy = Symbol('reconnect-dedupe: in a call');
  const coded = (code, message) => Object.assign(new Error(message), { code });
  for (const C of classes) {
    const proto = C.prototype;
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (name === 'constructor' || name.startsWith('__')) continue;
      const d = Object.getOwnPropertyDescriptor(proto, name);
      const f = d.value ?? d.get;
      if (typeof f !== 'function') continue;
      const label = d.get ? `${C.name}.${name}` : `${C.name}.${name}()`;
      const guarded = function (...args) {
        if (this.__wbg_ptr === 0) throw coded('instance_freed', `${C.name}.${name}: this ${C.name} was freed (free() was called); make a new one`);
        if (this[busy]) {
          throw coded('instance_busy', `${label} during a call of the same instance (from a getter or valueOf of its argument): refused, nothing changed`);
        }
        if (name === 'free') return f.apply(this, args);
        this[busy] = true;
        try {
          return f.apply(this, args);
        } finally {
          this[busy] = false;
        }
      };
      Object.defineProperty(proto, name, d.get ? { ...d, get: guarded } : { ...d, value: guarded });
    }
    if (Symbol.dispose) proto[Symbol.dispose] = proto.free;
  }
}
