// One bin's fill level as an SVG string: the real level (grey) and what a strategy
// handed downstream (a step line; red dots where it passed a duplicate). Pure.

const W = 320;
const H = 130;
const PAD = { l: 36, r: 6, t: 8, b: 20 };

const fmtTime = (ms) => new Date(ms).toISOString().slice(11, 16);

/**
 * `truth`: the real fill at the end of each minute; `points`: `[minute, fill, dup]`
 * in arrival order; `upto`: minutes simulated so far; `minutes`: the run length.
 */
export function chartSvg({ truth, points, upto, minutes, startMs, tickMs, label }) {
  const x = (m) => PAD.l + ((W - PAD.l - PAD.r) * m) / Math.max(1, minutes);
  const y = (f) => PAD.t + ((H - PAD.t - PAD.b) * (100 - f)) / 100;
  const r1 = (v) => Math.round(v * 10) / 10;

  const real = [];
  for (let m = 0; m < upto; m++) real.push(`${r1(x(m + 1))},${r1(y(truth[m]))}`);

  // A step line: the level stays at the last reading handed over until the next.
  const seen = [];
  const dups = [];
  let prevY = null;
  for (const [m, fill, dup] of points) {
    const px = r1(x(m + 1));
    const py = r1(y(fill));
    if (prevY !== null) seen.push(`${px},${prevY}`);
    seen.push(`${px},${py}`);
    prevY = py;
    if (dup) dups.push(`<circle cx="${px}" cy="${py}" r="2.6" class="dup"/>`);
  }
  if (prevY !== null && upto > 0) seen.push(`${r1(x(upto))},${prevY}`);

  const grid = [0, 50, 100]
    .map((f) => `<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${y(f)}" y2="${y(f)}" class="grid"/>` +
      `<text x="${PAD.l - 4}" y="${y(f) + 3.5}" text-anchor="end">${f}%</text>`)
    .join('');
  const axis =
    `<text x="${PAD.l}" y="${H - 5}">${fmtTime(startMs)}</text>` +
    `<text x="${W - PAD.r}" y="${H - 5}" text-anchor="end">${fmtTime(startMs + minutes * tickMs)} UTC</text>`;

  return (
    `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="${label}">` +
    grid + axis +
    `<polyline class="real" points="${real.join(' ')}"/>` +
    `<polyline class="seen" points="${seen.join(' ')}"/>` +
    dups.join('') +
    `</svg>`
  );
}
