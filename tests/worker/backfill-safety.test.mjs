// Asking a sensor for what is missing, kept safe (docs/sequence-health.md "Asking the sensor for what is missing"), in workerd against
// stub network servers on 127.0.0.1: a redirect from an allowed host to one
// BACKFILL_HOSTS does not allow, a network server that echoes the credential it was
// given, a queued request whose gap closed by itself, and a window that forgot the
// range (a reset) while a request waited for it.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { chirpstack, EM500, history, live, tts as ttsUplink } from "../support/em500.mjs";
import { gapsOf, logged, logSettled, origin, putConfig, start, until } from "../support/harness.mjs";

const CS_TOKEN = "cs-secret-token-0123456789";

/** The Things Stack's and ChirpStack's downlink APIs: one stub, answers decided per test. */
let answer = () => ({ status: 200 });
const ns = await origin({ answer: (r) => answer(r) });
const base = `http://127.0.0.1:${ns.port}`;
/** A host BACKFILL_HOSTS does not allow. */
const elsewhere = await origin();
const BACKFILL = { BACKFILL: "on", BACKFILL_AFTER_MS: "0", BACKFILL_INTERVAL_MS: "0", BACKFILL_HOSTS: base, STATS_FLUSH_MS: "10" };
const worker = await start({ vars: { ...BACKFILL, RETRY_BASE_MS: "1", CHIRPSTACK_API_URL: base, CHIRPSTACK_API_TOKEN: CS_TOKEN } });
after(async () => {
  await worker.mf.dispose();
  await elsewhere.close();
  await ns.close();
});

const ttsPath = (dev) => `/api/v3/as/applications/bins/webhooks/dedupe/devices/${dev}/down/push`;
const keyOf = (dev) => `NNSXS.SECRET-KEY-OF-${dev}`;
/** A TTS uplink with `dev`'s downlink headers (at the stub). */
const tts = (w, eui, dev, bytes) => ttsUplink(w, eui, dev, bytes, { "x-downlink-push": `${base}${ttsPath(dev)}`, "x-downlink-apikey": keyOf(dev) });
const health = (w, id) => gapsOf(w.call, id);
const to = (path) => ns.requests.filter((r) => r.path === path);

// Before, only the key as sent was cut out: an echo of it in base64 (inside a longer
// encoded text too) stayed readable in last_error and the log; then a key percent-encoded
// by an encoder stricter than encodeURIComponent (`!'()*~`, Go's url.QueryEscape, PHP's
// rawurlencode), or written in JSON's `\u` escapes, stayed readable too. A TTS key is
// dots and base32, but the header that carries it is the network server's to fill.
const ODD_KEY = "NNSXS.K3Y!'(O)*F~\"B\\IN.Z2";
const everyByte = (k) => [...Buffer.from(k)].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
const ECHOES = [
  ["base64 of the key", (k) => `token ${Buffer.from(k).toString("base64")} denied`],
  ["base64 of a JSON echo (another alignment)", (k) => `request ${Buffer.from(JSON.stringify({ authorization: `Bearer ${k}` })).toString("base64")}`],
  ["base64url, one byte further", (k) => `jwt ${Buffer.from(`x${k}`).toString("base64url")}`],
  ["with every byte percent-encoded", (k) => `token=${everyByte(k)} denied`, ODD_KEY],
  ["as Go's url.QueryEscape writes it (`!'()*` encoded)", (k) => `token=${encodeURIComponent(k).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`, ODD_KEY],
  ["in JSON's \\u escapes", (k) => `token ${[...k].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}`, ODD_KEY],
  ["base64 of the key, percent-encoded", (k) => `token=${encodeURIComponent(Buffer.from(k).toString("base64"))}`, ODD_KEY],
  // Before, the search cost grew with the square of a run of backslashes (a megabyte:
  // hours of the group object's time); now it is linear, over the answer's first 64 KiB.
  ["then a megabyte of backslashes", (k) => `token ${k} ${"\\".repeat(1 << 20)}`, ODD_KEY],
];
ECHOES.forEach(([what, echo, key = null], i) => {
  test(`a TTS refusal that echoes the API key ${what}: no spelling of it in GET /gaps or the log`, async () => {
    const eui = `A84041000000A1E${i}`;
    const dev = `bin-echo-${i}`;
    const keyOf = (d) => key ?? `NNSXS.SECRET-KEY-OF-${d}`;
    const tts = (w, eui, dev, bytes) => ttsUplink(w, eui, dev, bytes, { "x-downlink-push": `${base}${ttsPath(dev)}`, "x-downlink-apikey": keyOf(dev) });
    await putConfig(worker.call, eui, EM500);
    answer = (r) => (r.path === ttsPath(dev) ? { status: 403, body: JSON.stringify({ message: echo(r.headers.authorization.slice("Bearer ".length)) }) } : { status: 200 });
    try {
      await tts(worker, eui, dev, history([0, 2]));
      await tts(worker, eui, dev, live(600));
      const failed = await until(async () => (await health(worker, eui)).backfill.recent[0], "the refusal recorded");
      assert.match(failed.last_error, /answered 403: .*\[credential\]/);
      await logSettled(worker);
      const key = keyOf(dev);
      // The spellings an attacker reading the text could decode (the key's middle is enough).
      const middle = key.slice(6, -2);
      const readable = (text) => {
        const unescaped = text.replace(/\\+u([0-9a-fA-F]{4})/g, (_, h) => String.fromCharCode(parseInt(h, 16))).replace(/\\+(["\\/])/g, "$1");
        const decoded = [text, unescaped];
        for (const t of [text, unescaped]) {
          const bytes = t.replace(/%(?![0-9A-Fa-f]{2})/g, "%25");
          decoded.push(decodeURIComponent(bytes));
        }
        for (const t of [...decoded]) for (const m of t.match(/[A-Za-z0-9+/_-]{8,}={0,2}/g) ?? []) for (const skip of [0, 1, 2, 3]) decoded.push(Buffer.from(m.slice(skip), "base64").toString("latin1"));
        return decoded.some((t) => t.includes(middle));
      };
      assert.equal(readable(JSON.stringify(await health(worker, eui))), false, `GET /gaps: ${failed.last_error}`);
      assert.deepEqual(worker.lines.filter(readable), []);
    } finally {
      answer = () => ({ status: 200 });
    }
  });
});

test("a redirect from an allowed network server is not followed: nothing reaches a host BACKFILL_HOSTS does not allow", async () => {
  const eui = "A84041000000A101";
  await putConfig(worker.call, eui, EM500);
  answer = (r) => (r.path === ttsPath("bin-r1") ? { status: 307, headers: { location: `${elsewhere.url}?stolen=1` } } : { status: 200 });
  try {
    await tts(worker, eui, "bin-r1", history([0, 2]));
    await tts(worker, eui, "bin-r1", live(600));
    const open = await until(async () => {
      const o = (await health(worker, eui)).backfill;
      return (o.open?.last_error || o.open?.state === "sent" || o.recent[0]) && o;
    }, "the send recorded");
    assert.equal(to(ttsPath("bin-r1")).length, 1);
    assert.deepEqual(elsewhere.requests.map((r) => [r.method, r.path, r.headers.authorization]), [], "the redirect was followed to a host not allowed");
    assert.notEqual(open.open?.state, "sent", "a redirect is not an accepted request");
  } finally {
    answer = () => ({ status: 200 });
  }
});

test("a TTS refusal that echoes the API key: the key is in no log line and not in GET /gaps", async () => {
  const eui = "A84041000000A102";
  await putConfig(worker.call, eui, EM500);
  answer = (r) => (r.path === ttsPath("bin-s1") ? { status: 403, body: JSON.stringify({ message: `token ${r.headers.authorization} has no rights` }) } : { status: 200 });
  try {
    await tts(worker, eui, "bin-s1", history([0, 2]));
    const next = await tts(worker, eui, "bin-s1", live(600));
    const failed = await until(async () => (await health(worker, eui)).backfill.recent[0], "the refusal recorded");
    assert.equal(failed.state, "failed");
    assert.match(failed.last_error, /answered 403/);
    assert.ok(!JSON.stringify(await health(worker, eui)).includes(keyOf("bin-s1")), `GET /gaps shows the key: ${failed.last_error}`);
    await logSettled(worker);
    assert.ok(logged(worker, "backfill_failed", next.burst_id).length);
    const leaks = worker.lines.filter((l) => l.includes(keyOf("bin-s1")));
    assert.deepEqual(leaks, []);
  } finally {
    answer = () => ({ status: 200 });
  }
});

test("a ChirpStack error that echoes CHIRPSTACK_API_TOKEN: the token is in no log line and not in GET /gaps", async () => {
  const eui = "A84041000000A103";
  await putConfig(worker.call, eui, EM500);
  const path = `/api/devices/${eui.toLowerCase()}/queue`;
  answer = (r) => (r.path === path ? { status: 503, body: JSON.stringify({ error: `upstream rejected ${r.headers["grpc-metadata-authorization"]}` }) } : { status: 200 });
  try {
    await chirpstack(worker, eui, history([10, 12]));
    await chirpstack(worker, eui, live(800));
    const open = await until(async () => {
      const o = (await health(worker, eui)).backfill.open;
      return o?.last_error && o;
    }, "the failure recorded");
    assert.match(open.last_error, /answered 503/);
    assert.ok(!open.last_error.includes(CS_TOKEN), `GET /gaps shows the token: ${open.last_error}`);
    await logSettled(worker);
    assert.deepEqual(worker.lines.filter((l) => l.includes(CS_TOKEN)), []);
  } finally {
    answer = () => ({ status: 200 });
  }
});

test("a queued request (its first send failed) whose gap the replay then closed is not sent again", async () => {
  const eui = "A84041000000A104";
  await putConfig(worker.call, eui, EM500);
  answer = (r) => (r.path === ttsPath("bin-q1") ? { status: 503 } : { status: 200 });
  try {
    await tts(worker, eui, "bin-q1", history([0, 3]));
    await tts(worker, eui, "bin-q1", live(600));
    await until(async () => (await health(worker, eui)).backfill.open?.last_error, "the failure recorded");
    answer = () => ({ status: 200 });
    // The reconnect replay brings slots 1 and 2 by itself: the gap is closed.
    const back = await tts(worker, eui, "bin-q1", history([1, 2]));
    assert.equal(back.unique, 2);
    await tts(worker, eui, "bin-q1", live(601));
    const h = await health(worker, eui);
    assert.deepEqual(h.gaps, []);
    assert.equal(h.backfill.open, null, "the request of a closed gap is still open");
    await logSettled(worker);
    assert.equal(to(ttsPath("bin-q1")).length, 1, "the request of a closed gap was sent again");
  } finally {
    answer = () => ({ status: 200 });
  }
});

test("a sent request whose range the window forgot (a reset) is not reported answered", async () => {
  const eui = "A84041000000A105";
  await putConfig(worker.call, eui, EM500);
  await tts(worker, eui, "bin-w1", history([0, 3]));
  await tts(worker, eui, "bin-w1", live(600));
  await until(async () => (await health(worker, eui)).backfill.open?.state === "sent", "sent");
  // The device's clock set back by 5000 slots (more than twice the window): a reset,
  // which closes the gap 1..2 without any of its records.
  const reset = await tts(worker, eui, "bin-w1", history([-5000]));
  const h = await health(worker, eui);
  assert.deepEqual(h.gaps, []);
  const closed = h.backfill.recent[0];
  assert.equal(closed?.recovered, 0);
  assert.notEqual(closed?.state, "answered", "nothing came back, yet the request reads answered");
  await logSettled(worker);
  assert.deepEqual(logged(worker, "backfill_answered", reset.burst_id), []);
});

test("a request the replay closes while its send is in flight stays closed when the network server then accepts it", async () => {
  const eui = "A84041000000A106";
  await putConfig(worker.call, eui, EM500);
  answer = (r) => (r.path === ttsPath("bin-f1") ? { status: 200, delay: 1500 } : { status: 200 });
  try {
    await tts(worker, eui, "bin-f1", history([0, 3]));
    await tts(worker, eui, "bin-f1", live(600));
    await until(() => to(ttsPath("bin-f1")).length, "the push in flight");
    // The replay closes the gap before the network server answers.
    await tts(worker, eui, "bin-f1", history([1, 2]));
    const closed = await health(worker, eui);
    assert.deepEqual([closed.gaps, closed.backfill.open, closed.backfill.recent[0]?.state], [[], null, "cancelled"]);
    await new Promise((r) => setTimeout(r, 2000)); // the 200 arrives
    const after = await health(worker, eui);
    assert.equal(after.backfill.open, null, "the accepted send reopened a closed request");
    assert.equal(after.backfill.recent[0].state, "cancelled");
  } finally {
    answer = () => ({ status: 200 });
  }
});
