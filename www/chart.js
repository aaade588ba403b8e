// One bin's fill level as an SVG string: the real level (grey) and what a strategy
// handed downstream (a step line), with a mark for each thing that makes the two differ:
// a duplicate passed, a late arrival passed, a real reading lost. Pure.

const W = 320;
const H = 130;
const PAD = { l: 36, r: 6, t: 8, b: 20 };

const fmtTime = (ms) => new Date(ms).toISOString().slice(11, 16);

/** What each line and mark means: the page's legend is made of these. */
export const MARKS = {
  real: 'real fill level',
  seen: 'what the route planner sees (the last reading it was handed)',
  replay: 'a reconnect: the readings the bin buffered offline, all handed over in the minute it came back',
  dup: 'a duplicate passed on: a replayed copy counted again',
  late: 'a late arrival: a real reading older than one passed before, which a later replay brought (its first copies came corrupted); the line dips to it and back',
  lost: 'a real reading lost, where it arrived: dropped as if it were a copy',
};

const r1 = (v) => Math.round(v * 10) / 10;
/** Each mark's shape at (x, y), the chart's and the legend's. */
const SHAPES = {
  real: (x, y) => `<path d="M${r1(x - 7)} ${y}h14" class="real"/>`,
  seen: (x, y) => `<path d="M${r1(x - 7)} ${y}h14" class="seen"/>`,
  replay: (x, y) => `<path d="M${r1(x - 4)} ${y + 4}h4v-8h4" class="seen"/>`,
  dup: (x, y, title = '') => `<circle cx="${x}" cy="${y}" r="2.6" class="dup">${title}</circle>`,
  late: (x, y, title = '') => `<path d="M${x} ${r1(y - 3.2)}l3.2 3.2-3.2 3.2-3.2-3.2z" class="late">${title}</path>`,
  lost: (x, y, title = '') => `<path d="M${r1(x - 2.6)} ${r1(y - 2.6)}l5.2 5.2m0-5.2l-5.2 5.2" class="lost">${title}</path>`,
};

/** A mark of the legend, drawn as the chart draws it. */
export const markSvg = (kind) => `<svg viewBox="0 0 16 10" class="k" aria-hidden="true">${SHAPES[kind](8, 5)}</svg>`;

/**
 * `truth`: the real fill at the end of each minute; `points`: `[minute, fill, mark]`
 * in arrival order, `mark` 'dup', 'late' or null; `lost`: `[minute, fill]` of the
 * readings the strategy lost; `upto`: minutes simulated so far; `minutes`: the run length.
 */
export function chartSvg({ truth, points, lost = [], upto, minutes, startMs, tickMs, label }) {
  const x = (m) => PAD.l + ((W - PAD.l - PAD.r) * m) / Math.max(1, minutes);
  const y = (f) => PAD.t + ((H - PAD.t - PAD.b) * (100 - f)) / 100;
  const at = (m, fill) => `${fmtTime(startMs + (m + 1) * tickMs)}, ${fill} %`;

  const real = [];
  for (let m = 0; m < upto; m++) real.push(`${r1(x(m + 1))},${r1(y(truth[m]))}`);

  // A step line: the level stays at the last reading handed over until the next.
  const seen = [];
  const marks = [];
  let prevY = null;
  for (const [m, fill, mark] of points) {
    const px = r1(x(m + 1));
    const py = r1(y(fill));
    if (prevY !== null) seen.push(`${px},${prevY}`);
    seen.push(`${px},${py}`);
    prevY = py;
    if (mark) marks.push(SHAPES[mark](px, py, `<title>${mark === 'dup' ? 'duplicate' : mark}: ${at(m, fill)}</title>`));
  }
  if (prevY !== null && upto > 0) seen.push(`${r1(x(upto))},${prevY}`);
  // Lost readings last, on top: they are what the line is missing.
  for (const [m, fill] of lost) {
    const px = r1(x(m + 1));
    const py = r1(y(fill));
    marks.push(SHAPES.lost(px, py, `<title>lost: ${at(m, fill)}</title>`));
  }

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
    marks.join('') +
    `</svg>`
  );
}
