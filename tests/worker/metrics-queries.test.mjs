// The alert rules and the Grafana dashboard of integrations/prometheus/ (docs/operations.md
// "Alert rules", "Dashboard (Grafana)"): the rules pass Debian's promtool (`check
// rules`, and their unit tests, `test rules`), every dashboard query parses as PromQL
// (promtool again), and every metric, label and label value the rules, their tests and
// the dashboard name is one a real worker's /v1/metrics exports (in workerd, scraped
// before any reading: every labelled family shows all its values at 0 from the start).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import YAML from "yaml";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { start, TOKEN } from "../support/harness.mjs";
import { readsOf } from "../support/promql.mjs";

const DIR = new URL("../../integrations/prometheus/", import.meta.url).pathname;
const RULES = path.join(DIR, "alerts.yml");
const RULE_TESTS = path.join(DIR, "alerts.test.yml");
const DASHBOARD = JSON.parse(fs.readFileSync(path.join(DIR, "grafana-dashboard.json"), "utf8"));
// The labels Prometheus gives every series it scrapes (its target's).
const TARGET_LABELS = ["instance", "job"];
// The series Prometheus writes itself for each target: `up` (1 when the scrape worked).
const PROMETHEUS_OWN = { up: { labels: new Set(TARGET_LABELS), values: {} } };
// What Grafana puts in place of its variables before it sends a query: `$__rate_interval`
// a duration, `$instance` (the dashboard's variable, a regex matcher's value) all instances.
const GRAFANA_VARIABLES = { __rate_interval: "5m", instance: ".*" };

/** promtool with `args`: its output; throws with that output when it exits non-zero. */
function promtool(...args) {
  try {
    return execFileSync("promtool", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    if (e.code === "ENOENT") assert.fail("promtool not found: `bash scripts/setup.sh` installs Debian's prometheus package");
    assert.fail(`promtool ${args.join(" ")} exited ${e.status}:\n${e.stdout}${e.stderr}`);
  }
}

/** Every `{expr, where}` of the dashboard's panels (rows' too) and of its query variables. */
function dashboardQueries(dashboard) {
  const out = [];
  const walk = (panels) => {
    for (const p of panels ?? []) {
      for (const t of p.targets ?? []) out.push({ expr: t.expr, legend: t.legendFormat ?? "", where: `panel "${p.title}" ${t.refId}` });
      walk(p.panels);
    }
  };
  walk(dashboard.panels);
  return out;
}

/** `expr` with the dashboard's variables replaced as Grafana replaces them; one it does not know fails. */
function substituted(expr) {
  return expr.replace(/\$(\w+)|\$\{(\w+)\}/g, (whole, a, b) => {
    const name = a ?? b;
    assert.ok(name in GRAFANA_VARIABLES, `${expr}: unknown variable ${whole}`);
    return GRAFANA_VARIABLES[name];
  });
}

/** The families of a scrape: `{name: {labels: Set, values: {label: Set}}}`. */
function exported(text) {
  return Object.fromEntries(
    parsePrometheusTextFormat(text).map((f) => {
      const values = {};
      for (const m of f.metrics) for (const [k, v] of Object.entries(m.labels ?? {})) (values[k] ??= new Set()).add(v);
      return [f.name, { labels: new Set([...Object.keys(values), ...TARGET_LABELS]), values }];
    }),
  );
}

/**
 * What `expr` reads that `families` does not export: a metric, a label of its metric, an
 * exact label value (`=`, `!=`) no sample has, a label it groups by or `legend` names
 * that none of its metrics has. Empty when it reads only what is there.
 */
function unknownIn(expr, families, legend = "") {
  const { selectors, labels } = readsOf(expr);
  const problems = [];
  const known = new Set(TARGET_LABELS);
  for (const { name, matchers } of selectors) {
    const f = families[name];
    if (!f) {
      problems.push(`metric ${name ?? "(none)"}`);
      continue;
    }
    for (const l of f.labels) known.add(l);
    for (const { label, op, value } of matchers) {
      if (!f.labels.has(label)) problems.push(`label ${label} of ${name}`);
      else if ((op === "=" || op === "!=") && !TARGET_LABELS.includes(label) && !f.values[label]?.has(value)) problems.push(`${name}{${label}="${value}"}`);
    }
  }
  const legendLabels = [...legend.matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]);
  for (const l of [...labels, ...legendLabels]) if (!known.has(l)) problems.push(`label ${l}`);
  return problems;
}

/** A fresh worker's /v1/metrics, as exported families. */
async function scrapeFresh() {
  const w = await start();
  try {
    const res = await w.call("/v1/metrics", { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 200);
    return { ...exported(await res.text()), ...PROMETHEUS_OWN };
  } finally {
    await w.mf.dispose();
  }
}

/** A fresh directory for promtool's input files. */
const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), "rd-promtool-"));

const rules = YAML.parse(fs.readFileSync(RULES, "utf8")).groups.flatMap((g) => g.rules);
const ruleTests = YAML.parse(fs.readFileSync(RULE_TESTS, "utf8"));

test("the alert rules pass promtool's check and their unit tests, each alert tested firing and not", () => {
  assert.match(promtool("check", "rules", RULES), new RegExp(`SUCCESS: ${rules.length} rules found`));
  assert.match(promtool("test", "rules", RULE_TESTS), /SUCCESS/);
  // Every alert has a test where it fires and one where it must not.
  const cases = ruleTests.tests.flatMap((t) => t.alert_rule_test ?? []);
  for (const { alert } of rules) {
    assert.ok(cases.some((c) => c.alertname === alert && c.exp_alerts.length > 0), `${alert}: a case where it fires`);
    assert.ok(cases.some((c) => c.alertname === alert && c.exp_alerts.length === 0), `${alert}: a case where it does not`);
  }
});

test("docs/operations.md's scrape config, with the rules loaded as it says, is a configuration Debian's Prometheus takes", () => {
  const doc = fs.readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");
  const section = doc.slice(doc.indexOf("### Scrape config"));
  const config = YAML.parse(/```yaml\n([\s\S]*?)```/.exec(section)[1]);
  const dir = scratch();
  const scrape = config.scrape_configs[0];
  fs.writeFileSync(path.join(dir, "token"), "the INGEST_TOKEN\n");
  scrape.authorization.credentials_file = path.join(dir, "token");
  // As the docs' "Alert rules" say: copied to rules/reconnect-dedupe.yml beside prometheus.yml.
  fs.mkdirSync(path.join(dir, "rules"));
  fs.copyFileSync(RULES, path.join(dir, "rules/reconnect-dedupe.yml"));
  const file = path.join(dir, "prometheus.yml");
  fs.writeFileSync(file, YAML.stringify({ ...config, rule_files: ["rules/*.yml"] }));
  const out = promtool("check", "config", file);
  assert.match(out, /SUCCESS: 1 rule files found/);
  assert.match(out, new RegExp(`SUCCESS: ${rules.length} rules found`));
});

test("every dashboard query parses as PromQL (promtool) and uses only variables Grafana fills in", () => {
  const queries = dashboardQueries(DASHBOARD);
  assert.ok(queries.length >= 20, `${queries.length} queries`);
  // Each query as a recording rule: promtool parses its expression.
  const file = path.join(scratch(), "queries.yml");
  const group = { name: "dashboard", rules: queries.map((q, n) => ({ record: `dashboard_query_${n}`, expr: substituted(q.expr) })) };
  fs.writeFileSync(file, YAML.stringify({ groups: [group] }));
  assert.match(promtool("check", "rules", file), new RegExp(`SUCCESS: ${queries.length} rules found`));
  // The data source is the dashboard's variable, so that it imports into any Grafana.
  const variables = DASHBOARD.templating.list;
  assert.deepEqual(variables.find((v) => v.name === "datasource")?.query, "prometheus");
  const sources = [];
  JSON.stringify(DASHBOARD, (k, v) => (k === "datasource" && v !== null && typeof v === "object" && sources.push(v.uid), v));
  assert.ok(sources.length > queries.length && sources.every((uid) => uid === "${datasource}"), `data sources: ${[...new Set(sources)]}`);
});

test("the rules, their tests and the dashboard name only metrics, labels and label values the worker exports", async () => {
  const families = await scrapeFresh();
  const reads = [
    ...rules.map((r) => ({ expr: r.expr, where: `alert ${r.alert}` })),
    ...ruleTests.tests.flatMap((t) => t.input_series.map((s) => ({ expr: s.series, where: `alerts.test.yml series ${s.series}` }))),
    ...dashboardQueries(DASHBOARD).map((q) => ({ ...q, expr: substituted(q.expr) })),
    // The instance variable's `label_values(<metric>, <label>)`, read as the selector `<metric>` grouped by `<label>`.
    ...DASHBOARD.templating.list
      .filter((v) => v.type === "query")
      .map((v) => {
        const [, metric, label] = /^label_values\((\w+),\s*(\w+)\)$/.exec(v.query);
        return { expr: `group by (${label}) (${metric})`, where: `variable ${v.name}` };
      }),
  ];
  const unknown = reads.map((r) => [r.where, unknownIn(r.expr, families, r.legend)]).filter(([, p]) => p.length);
  assert.deepEqual(unknown, []);
  // The checker finds what is not there: the names before this release's renames, a
  // label a family does not have, a code no reading is rejected with.
  assert.deepEqual(unknownIn("rate(reconnect_dedupe_duplicates_suppressed_total[5m])", families), ["metric reconnect_dedupe_duplicates_suppressed_total"]);
  assert.deepEqual(unknownIn('sum by (route) (reconnect_dedupe_readings_rejected_total{code="parking_ful"})', families), [
    'reconnect_dedupe_readings_rejected_total{code="parking_ful"}',
    "label route",
  ]);
  assert.deepEqual(unknownIn("reconnect_dedupe_devices", families, "{{version}}"), ["label version"]);
});
