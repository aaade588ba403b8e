// What a PromQL expression reads: its vector selectors (metric name and label matchers)
// and the labels it groups or matches by. Enough of PromQL's lexical rules
// (prometheus/promql/parser/lex.go) to find them, not a parser: the expression's
// syntax is promtool's to check (tests/worker/metrics-queries.test.mjs). An
// identifier is a metric name unless a `(` follows it (a function) or it is one of the
// keywords below (operators, aggregations: the lexer's `key` table).

const AGGREGATIONS = ["sum", "avg", "count", "min", "max", "group", "stddev", "stdvar", "topk", "bottomk", "count_values", "quantile", "limitk", "limit_ratio"];
const KEYWORDS = new Set([...AGGREGATIONS, "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "atan2", "inf", "nan"]);
/** Keywords followed by a parenthesised list of label names. */
const LABEL_LISTS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);

/**
 * `{selectors: [{name, matchers: [{label, op, value}]}], labels: [label]}`: every vector
 * selector of `expr` (`name` null for one without a metric name) and every label of a
 * `by`, `without`, `on`, `ignoring`, `group_left` or `group_right` list.
 */
export function readsOf(expr) {
  const selectors = [];
  const labels = [];
  let i = 0;
  const skipSpace = () => {
    while (i < expr.length && /\s/.test(expr[i])) i++;
  };
  const string = () => {
    const quote = expr[i++];
    let value = "";
    while (i < expr.length && expr[i] !== quote) {
      if (expr[i] === "\\" && quote !== "`") value += expr[++i];
      else value += expr[i];
      i++;
    }
    i++;
    return value;
  };
  const identifier = () => {
    const m = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(expr.slice(i));
    i += m[0].length;
    return m[0];
  };
  const matchers = () => {
    i++; // {
    const out = [];
    for (;;) {
      skipSpace();
      if (expr[i] === ",") i++;
      skipSpace();
      if (i >= expr.length || expr[i] === "}") break;
      const label = identifier();
      skipSpace();
      const op = /^(=~|!~|!=|=)/.exec(expr.slice(i))[0];
      i += op.length;
      skipSpace();
      out.push({ label, op, value: string() });
    }
    i++; // }
    return out;
  };
  while (i < expr.length) {
    const c = expr[i];
    if (/\s/.test(c)) i++;
    else if (c === '"' || c === "'" || c === "`") string();
    else if (c === "[") i = expr.indexOf("]", i) + 1; // a range or a subquery's: durations
    else if (c === "{") selectors.push({ name: null, matchers: matchers() });
    else if (/[0-9.]/.test(c)) i += /^[0-9.]+([eE][+-]?[0-9]+)?[a-z]*/.exec(expr.slice(i))[0].length; // a number or a duration
    else if (/[a-zA-Z_:]/.test(c)) {
      const word = identifier();
      skipSpace();
      const lower = word.toLowerCase();
      if (LABEL_LISTS.has(lower) && expr[i] === "(") {
        const end = expr.indexOf(")", i);
        labels.push(...expr.slice(i + 1, end).split(",").map((l) => l.trim()).filter(Boolean));
        i = end + 1;
      } else if (KEYWORDS.has(lower) || expr[i] === "(") {
        // an operator, or a function's or an aggregation's name
      } else selectors.push({ name: word, matchers: expr[i] === "{" ? matchers() : [] });
    } else i++;
  }
  return { selectors, labels };
}
