// Who may call the /v1 routes (src/worker/auth.js), in workerd (Miniflare): one table
// of credentials, each row the headers sent, the status and code answered, a fragment
// of the 401 message (what was received, then what is expected), and, for every row,
// that the message never holds the token or a password the row sent. A 200 row's
// reading must be in its device's ledger, a 401 row's must not. Two workers: the
// defaults (AUTH_HEADER = authorization, any Basic user name), and one with
// AUTH_HEADER = x-ingest-token and BASIC_AUTH_USER set.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { start, post, fixture, TOKEN } from "../support/harness.mjs";

const USER = "ttn-webhook";
const workers = {
  plain: await start(),
  named: await start({ vars: { AUTH_HEADER: "x-ingest-token", BASIC_AUTH_USER: USER } }),
};
after(() => Promise.all(Object.values(workers).map((w) => w.mf.dispose())));

const WRONG = "Wr0ng-passw0rd";
const basic = (credentials) => `Basic ${Buffer.from(credentials, "utf8").toString("base64")}`;
const reading = (device_id) => ({ device_id, seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 50 });
const LONG_USER = `u${"x".repeat(99)}`;

// secrets: strings the reply must not contain besides the token (passwords sent).
const ROWS = [
  // the default worker
  { name: "no credentials", auth: null, status: 401, message: /^no credentials: no Authorization header; expected/ },
  { name: "Bearer with the token", auth: `Bearer ${TOKEN}`, status: 200 },
  { name: "Bearer in lower case with spaces around the token", auth: `bearer   ${TOKEN}  `, status: 200 },
  { name: "Bearer with a wrong token", auth: `Bearer ${WRONG}`, status: 401, message: /^Authorization: Bearer with a wrong token; expected/, secrets: [WRONG] },
  { name: "Bearer with the token and more", auth: `Bearer ${TOKEN}, Bearer x`, status: 401, message: /Bearer with a wrong token/ },
  { name: "Bearer without a token", auth: "Bearer", status: 401, message: /^Authorization: Bearer without a token/ },
  { name: "Basic with the token as password", auth: basic(`any-user:${TOKEN}`), status: 200 },
  { name: "Basic with an empty user name", auth: basic(`:${TOKEN}`), status: 200 },
  { name: "Basic in lower case, the password with spaces around it", auth: `basic ${Buffer.from(`u: ${TOKEN} `).toString("base64")}`, status: 200 },
  { name: "Basic with a password that holds a colon", auth: basic(`u:${TOKEN}:x`), status: 401, message: /Basic for user "u" with a wrong password/, secrets: [`${TOKEN}:x`] },
  { name: "Basic with a wrong password", auth: basic(`ttn:${WRONG}`), status: 401, message: /^Authorization: Basic for user "ttn" with a wrong password; expected/, secrets: [WRONG] },
  { name: "Basic with a long user name: shown cut to 64 characters", auth: basic(`${LONG_USER}:${WRONG}`), status: 401, message: new RegExp(`Basic for user "${LONG_USER.slice(0, 64)}" \\(first 64 of 100 characters\\) with a wrong password`), secrets: [WRONG, LONG_USER.slice(0, 65)] },
  { name: "Basic with a user name needing JSON escapes", auth: basic(`a"b\\c:${WRONG}`), status: 401, message: /Basic for user "a\\"b\\\\c" with a wrong password/, secrets: [WRONG] },
  { name: "Basic with the token as user name", auth: basic(`${TOKEN}:`), status: 401, message: /^Authorization: Basic with the token as the user name; expected/ },
  { name: "Basic with a user name holding the token is not shown", auth: basic(`Bearer ${TOKEN}:${WRONG}`), status: 401, message: /^Authorization: Basic for user \(not shown\) with a wrong password; expected/, secrets: [WRONG] },
  { name: "Basic with the token and no colon", auth: basic(TOKEN), status: 401, message: /^Authorization: Basic whose credentials are not base64 of "user:password"/ },
  { name: "Basic with the bare token, not base64", auth: `Basic ${TOKEN}`, status: 401, message: /^Authorization: Basic whose credentials are not base64 of "user:password"/ },
  { name: "Basic of bytes that are not UTF-8", auth: `Basic ${Buffer.from([0x75, 0x3a, 0xff, 0xfe]).toString("base64")}`, status: 401, message: /Basic whose credentials are not base64 of "user:password"/ },
  { name: "Basic with two credentials", auth: `${basic(`u:${TOKEN}`)} ${basic(`u:${TOKEN}`)}`, status: 401, message: /Basic whose credentials are not base64/ },
  { name: "Basic without credentials", auth: "Basic", status: 401, message: /^Authorization: Basic without credentials; expected/ },
  { name: "an unsupported scheme is named", auth: `Digest username="${WRONG}"`, status: 401, message: /^Authorization: the scheme "Digest", which is not supported; expected/, secrets: [WRONG] },
  { name: "a scheme over 32 characters is not shown", auth: `${"S".repeat(33)} x`, status: 401, message: /^Authorization: a scheme of 33 characters \(not shown\), which is not supported/, secrets: ["S".repeat(32)] },
  { name: "the token as a scheme is not shown", auth: `${TOKEN} x`, status: 401, message: /^Authorization: a value with no known scheme \(not shown\)/ },
  { name: "a bare token in Authorization is not shown", auth: TOKEN, status: 401, message: /^Authorization: a value with no known scheme \(not shown\)/ },
  { name: "a bare wrong value in Authorization is not shown", auth: WRONG, status: 401, message: /^Authorization: a value with no known scheme \(not shown\)/, secrets: [WRONG] },
  { name: "the token in x-ingest-token, not configured", auth: null, headers: { "x-ingest-token": TOKEN }, status: 401, message: /^no credentials/ },

  // AUTH_HEADER = x-ingest-token, BASIC_AUTH_USER set
  { worker: "named", name: "named: no credentials names both ways", auth: null, status: 401, message: /^no credentials: no Authorization header and no x-ingest-token header; expected .*as the value of x-ingest-token/ },
  { worker: "named", name: "named: Basic with the configured user", auth: basic(`${USER}:${TOKEN}`), status: 200 },
  { worker: "named", name: "named: Basic with another user and the token", auth: basic(`other:${TOKEN}`), status: 401, message: /^Authorization: Basic for user "other", not the user name BASIC_AUTH_USER sets; expected/ },
  { worker: "named", name: "named: Basic with another user and a wrong password", auth: basic(`other:${WRONG}`), status: 401, message: /Basic for user "other", not the user name BASIC_AUTH_USER sets/, secrets: [WRONG] },
  { worker: "named", name: "named: Basic with the configured user and a wrong password", auth: basic(`${USER}:${WRONG}`), status: 401, message: /Basic for user "ttn-webhook" with a wrong password/, secrets: [WRONG] },
  { worker: "named", name: "named: the token in x-ingest-token", auth: null, headers: { "x-ingest-token": TOKEN }, status: 200 },
  { worker: "named", name: "named: a wrong value in x-ingest-token", auth: null, headers: { "x-ingest-token": WRONG }, status: 401, message: /^x-ingest-token: a wrong token; expected/, secrets: [WRONG] },
  { worker: "named", name: "named: an unsupported scheme and a wrong x-ingest-token", auth: "Digest x", headers: { "x-ingest-token": WRONG }, status: 401, message: /^x-ingest-token: a wrong token/, secrets: [WRONG] },
  { worker: "named", name: "named: Bearer still works", auth: `Bearer ${TOKEN}`, status: 200 },
];

ROWS.forEach((row, i) => {
  test(`auth: ${row.name} → ${row.status}`, async () => {
    const w = workers[row.worker ?? "plain"];
    const device = `auth-row-${i}`;
    const headers = { "content-type": "application/json", ...row.headers };
    if (row.auth !== null) headers.authorization = row.auth;
    const res = await w.call("/v1/readings", { method: "POST", headers, body: JSON.stringify([reading(device)]) });
    const text = await res.text();
    assert.equal(res.status, row.status, text);
    for (const secret of [TOKEN, ...(row.secrets ?? [])]) assert.equal(text.includes(secret), false, `the reply holds ${JSON.stringify(secret)}: ${text}`);
    if (row.status === 401) {
      const { error } = JSON.parse(text);
      assert.equal(error.code, "unauthorized");
      assert.match(error.message, row.message);
      assert.match(error.message, /expected the token as "Authorization: Bearer <token>" or as the password of "Authorization: Basic"/);
      assert.equal(res.headers.get("www-authenticate"), 'Basic realm="reconnect-dedupe", charset="UTF-8"');
    } else {
      assert.equal(JSON.parse(text).unique, 1, text);
    }
    const ledger = await w.call(`/v1/devices/${device}/readings`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal((await ledger.json()).readings.length, row.status === 200 ? 1 : 0, "stored only when authenticated");
  });
});

test("auth: a 401 challenges for Basic alone, on the wire as a browser reads it", async () => {
  // Chromium reads one WWW-Authenticate field as one challenge: `Bearer, Basic realm=...`
  // was a Bearer challenge with odd parameters, and no sign-in prompt.
  const url = new URL(await workers.plain.mf.ready);
  const head = await new Promise((resolve, reject) => {
    const s = net.connect(Number(url.port), url.hostname);
    let data = "";
    s.on("error", reject);
    s.on("data", (d) => {
      data += d;
      if (data.includes("\r\n\r\n")) {
        s.destroy();
        resolve(data.slice(0, data.indexOf("\r\n\r\n")));
      }
    });
    s.write(`GET /v1/stats HTTP/1.1\r\nhost: ${url.host}\r\n\r\n`);
  });
  assert.match(head, /^HTTP\/1\.1 401 /);
  const challenges = head.split("\r\n").filter((l) => /^www-authenticate:/i.test(l)).map((l) => l.slice(l.indexOf(":") + 1).trim());
  assert.deepEqual(challenges, ['Basic realm="reconnect-dedupe", charset="UTF-8"']);
});

test("auth: a TTS uplink sent with Basic auth (the webhook's Request authentication) is stored", async () => {
  const { call } = workers.named;
  const res = await post(call, "/v1/uplinks/ttn", fixture("with-fill/tts-v3-uplink.json"), { authorization: basic(`${USER}:${TOKEN}`) });
  assert.equal(res.status, 200);
  assert.deepEqual((await res.json()).admitted, [{ index: 0, key: "0004A30B001C0530:1:d7f366a3cb678f45" }]);
  const ledger = await call("/v1/devices/0004A30B001C0530/readings", { headers: { authorization: basic(`${USER}:${TOKEN}`) } });
  assert.deepEqual((await ledger.json()).readings.map((r) => r.key), ["0004A30B001C0530:1:d7f366a3cb678f45"]);
});

for (const [what, value] of [["a colon", "ttn:webhook"], ["a newline", "ttn\nwebhook"], ["non-ASCII", "tтn"], ["a control character", "ttn\u0001"]]) {
  test(`auth config: BASIC_AUTH_USER with ${what} → every route 500 invalid_config`, async () => {
    const w = await start({ vars: { BASIC_AUTH_USER: value } });
    try {
      for (const p of ["/v1/health", "/v1/stats"]) {
        const res = await w.call(p, { headers: { authorization: basic(`${value}:${TOKEN}`) } });
        assert.equal(res.status, 500);
        const { error } = await res.json();
        assert.equal(error.code, "invalid_config");
        assert.match(error.message, /^BASIC_AUTH_USER must be printable ASCII \(0x20-0x7E\) without ":"/);
      }
    } finally {
      await w.mf.dispose();
    }
  });
}

test("auth config: BASIC_AUTH_USER of white space only is not set; one with spaces around it is trimmed", async () => {
  const blank = await start({ vars: { BASIC_AUTH_USER: "   " } });
  const padded = await start({ vars: { BASIC_AUTH_USER: `  ${USER} ` } });
  try {
    assert.equal((await post(blank.call, "/v1/readings", [reading("auth-cfg-1")], { authorization: basic(`anyone:${TOKEN}`) })).status, 200);
    assert.equal((await post(padded.call, "/v1/readings", [reading("auth-cfg-2")], { authorization: basic(`${USER}:${TOKEN}`) })).status, 200);
    assert.equal((await post(padded.call, "/v1/readings", [reading("auth-cfg-3")], { authorization: basic(`anyone:${TOKEN}`) })).status, 401);
  } finally {
    await Promise.all([blank.mf.dispose(), padded.mf.dispose()]);
  }
});

test("auth: a scheme name that holds the token is not shown", async () => {
  const w = await start();
  try {
    const res = await post(w.call, "/v1/readings", [reading("auth-scheme")], { authorization: `x${TOKEN}y credentials` });
    const text = await res.text();
    assert.equal(res.status, 401, text);
    assert.equal(text.includes(TOKEN), false, text);
  } finally {
    await w.mf.dispose();
  }
});

test("auth: a token that holds a colon, sent bare as Basic credentials: 401 without the token's start", async () => {
  const token = "tenant7:s3cr3t-part";
  const w = await start({ vars: { INGEST_TOKEN: token } });
  try {
    const res = await post(w.call, "/v1/readings", [reading("auth-colon")], { authorization: basic(token) });
    const text = await res.text();
    assert.equal(res.status, 401, text);
    assert.equal(text.includes("tenant7"), false, text);
    assert.match(JSON.parse(text).error.message, /Basic for user \(not shown\) with a wrong password/);
    // No oracle for the token's first part: a guess of it is answered like any other user.
    const guess = async (user) => JSON.parse(await (await post(w.call, "/v1/readings", [reading("auth-colon")], { authorization: basic(`${user}:x`) })).text()).error.message;
    assert.equal(await guess("tenant7"), await guess("tenant8"));
    assert.equal((await post(w.call, "/v1/readings", [reading("auth-colon")], { authorization: basic(`u:${token}`) })).status, 200);
  } finally {
    await w.mf.dispose();
  }
});

// A page on another site can make a browser send a form, or a fetch() without a body,
// with the Basic credentials it holds for the worker: before, a form POST to .../reset
// from evil.example reset the device, and the stored readings' replays were admitted
// again. Every route that can change state refuses it, and changes nothing.
test("auth: every route that can change state refuses a cross-site request and a form body, and nothing changes", async () => {
  const { call } = workers.plain;
  const ambient = { authorization: basic(`operator:${TOKEN}`) };
  const held = { device_id: "xs-bin", seq: 1, ts: "2026-07-16T09:00:00Z", fill_pct: 40 };
  const first = await post(call, "/v1/readings", [held]);
  assert.equal(first.status, 200);
  const key = (await first.json()).admitted[0].key;
  const json = { "content-type": "application/json" };
  const routes = [
    ["POST", "/v1/readings", json, JSON.stringify([{ ...held, device_id: "xs-new" }])],
    ["POST", "/v1/uplinks/ttn", json, fixture("with-fill/tts-v3-uplink.json")],
    ["POST", "/v1/uplinks/chirpstack?event=up", json, "{}"],
    ["POST", "/v1/uplinks/helium", json, "{}"],
    ["POST", "/v1/uplinks/loriot", json, "{}"],
    ["POST", "/v1/devices/xs-bin/reset", {}, undefined],
    ["POST", "/v1/devices/xs-bin/redrive", {}, undefined],
    ["POST", "/v1/devices/xs-bin/forget", json, JSON.stringify({ key })],
    ["PUT", "/v1/devices/xs-bin/config", json, JSON.stringify({ codec: "dingtek/df703", bin_depth_mm: 1200 })],
  ];
  const sites = [
    [{ "sec-fetch-site": "cross-site", origin: "http://evil.example" }, /Sec-Fetch-Site: cross-site/],
    [{ "sec-fetch-site": "same-site", origin: "http://bins.example" }, /Sec-Fetch-Site: same-site/],
    [{ origin: "http://evil.example" }, /Origin: http:\/\/evil\.example/],
    [{ origin: "null" }, /Origin: null/],
  ];
  for (const [method, p, headers, body] of routes) {
    for (const [site, message] of sites) {
      const res = await call(p, { method, headers: { ...ambient, ...headers, ...site }, body });
      const text = await res.text();
      assert.equal(res.status, 403, `${method} ${p} ${JSON.stringify(site)}: ${text}`);
      assert.equal(JSON.parse(text).error.code, "cross_site_request");
      assert.match(JSON.parse(text).error.message, message);
    }
  }
  // A form body, even where the route reads none (reset, redrive), and even same-origin.
  for (const type of ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"]) {
    for (const p of ["/v1/devices/xs-bin/reset", "/v1/devices/xs-bin/redrive", "/v1/devices/xs-bin/forget"]) {
      const res = await call(p, { method: "POST", headers: { ...ambient, "content-type": type, "sec-fetch-site": "same-origin" }, body: "key=x" });
      const text = await res.text();
      assert.equal(res.status, 415, `${p} ${type}: ${text}`);
      assert.equal(JSON.parse(text).error.code, "unsupported_media_type");
    }
  }
  // Nothing changed: the held reading is still a duplicate (no reset, no forget), no
  // other device was stored, none configured.
  const again = await post(call, "/v1/readings", [held]);
  assert.deepEqual((await again.json()).verdicts.map((v) => [v.verdict, v.key]), [["duplicate", key]]);
  assert.equal((await (await call("/v1/devices/xs-new/readings", { headers: ambient })).json()).readings.length, 0);
  assert.equal((await call("/v1/devices/xs-bin/config", { headers: ambient })).status, 404);
  // The same requests from the worker's own pages, or from a server, are served.
  const own = await call("/v1/devices/xs-bin/reset", { method: "POST", headers: { ...ambient, "sec-fetch-site": "same-origin" } });
  assert.equal(own.status, 200, await own.text());
  const typed = await call("/v1/devices/xs-bin/reset", { method: "POST", headers: { ...ambient, "sec-fetch-site": "none" } });
  assert.equal(typed.status, 200, await typed.text());
});
