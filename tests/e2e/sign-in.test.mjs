// An operator opening a /v1 page in a browser is asked to sign in (docs/network-servers.md
// "Auth"): headless Chromium (Debian's) against the real worker in workerd.
// A browser asks for credentials only for a challenge it acts on; Playwright's
// `httpCredentials` answer exactly that request (Chromium's auth handler, where a
// headed browser shows its prompt), and are never sent unasked (Playwright sends them
// only in answer to a challenge), so a 200 is a challenge the browser acted on.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium } from '../support/browser.mjs';
import { start, TOKEN } from '../support/harness.mjs';

let worker;
let browser;
let base;

before(async () => {
  worker = await start();
  base = String(await worker.mf.ready);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await worker?.mf.dispose();
});

/** Opens `path` in a fresh context (`credentials` given to the browser's prompt, or none); the main response. */
async function open(path, credentials) {
  const context = await browser.newContext(credentials ? { httpCredentials: credentials } : {});
  try {
    const page = await context.newPage();
    const res = await page.goto(new URL(path, base).href);
    return { status: res.status(), body: await res.text() };
  } finally {
    await context.close();
  }
}

test('a /v1 page opened without credentials: the browser is challenged and, signed in, shows the page', async () => {
  // Before, `WWW-Authenticate: Bearer, Basic realm=…` was one Bearer challenge to
  // Chromium: no prompt, and the operator saw a 401 whatever they knew.
  const signedIn = await open('/v1/stats', { username: 'ops', password: TOKEN });
  assert.equal(signedIn.status, 200, signedIn.body);
  assert.equal(typeof JSON.parse(signedIn.body).devices, 'number');
  // Nobody to answer the prompt: Chromium asked for credentials and, refused them,
  // ends the navigation (a challenge it does not act on would show the 401 page).
  await assert.rejects(open('/v1/stats'), /net::ERR_INVALID_AUTH_CREDENTIALS/);
  // A wrong password is challenged again and ends in the worker's own 401 body.
  const wrong = await open('/v1/stats', { username: 'ops', password: 'not-the-token' });
  assert.equal(wrong.status, 401);
  assert.equal(JSON.parse(wrong.body).error.code, 'unauthorized');
  assert.ok(!wrong.body.includes('not-the-token'), 'the 401 shows no password');
});
