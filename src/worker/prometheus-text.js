// Prometheus' text exposition format 0.0.4 (prometheus/docs,
// content/docs/instrumenting/exposition_formats.md, "Text format details"): a `# HELP`
// and a `# TYPE` line before each family's samples, each family one uninterrupted
// group; a label value escapes backslash, double quote and line feed as `\\`, `\"` and
// `\n`, a HELP text backslash and line feed; `\n` line ends, the last line too. The
// writer alone, without the families (metrics.js), so that Node tests can import it:
// metrics.js reads its label values from modules that only workerd can load.
//
// Why not also OpenMetrics 1.0 (`application/openmetrics-text`), which Prometheus
// asks for first: Prometheus parses what the Content-Type names, and its Accept
// lists text/plain;version=0.0.4 too (scrape/scrape.go `acceptHeader`), so this
// answer is read as it is; serving a second format would need a second writer, and
// no OpenMetrics parser is at hand to test it against.

/** The Content-Type of the text format 0.0.4. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * One family's lines: HELP, TYPE, then its samples in the order of their labels' text;
 * `samples` a number (one sample without labels), null (none) or `[[labels, value]]`.
 */
export function family(name, type, help, samples) {
  const lines = [`# HELP ${name} ${help.replaceAll("\\", "\\\\").replaceAll("\n", "\\n")}`, `# TYPE ${name} ${type}`];
  const rows = samples === null ? [] : typeof samples === "number" ? [[{}, samples]] : samples;
  const written = rows.map(([labels, value]) => `${name}${labelText(labels)} ${value}`);
  lines.push(...written.sort());
  return lines.map((l) => `${l}\n`).join("");
}

/** `{a="x",b="y"}`, or "" without labels. */
function labelText(labels) {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${String(v).replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`);
  return pairs.length ? `{${pairs.join(",")}}` : "";
}
