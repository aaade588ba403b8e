// `npm run screenshot`: the README's picture of the demo (www/demo-screenshot.png), made
// from the page itself: www/ served on an ephemeral port, Debian's Chromium
// (tests/support/browser.mjs), the default scenario run to the end, the page at 1200 px wide
// down to the gaps panel's backfill requests (its log of gaps, the counters and the sensor
// panel below are left out: the picture stays under 0.5 MB). Then it writes the figures of that run into
// the README's caption of the picture, so that the two cannot drift apart; the browser
// test `tests/demo/page.test.mjs` checks that caption against the same run.
import fs from 'node:fs';
import { closeAll, launchChromium, listen } from '../tests/support/browser.mjs';
import { serveWww } from './serve-www.mjs';

const OUT = new URL('../www/demo-screenshot.png', import.meta.url);
const README = new URL('../README.md', import.meta.url);
const CAPTION = /^!\[The demo after a default run:[^\]\n]*\]\(www\/demo-screenshot\.png\)$/m;
const server = serveWww();
let browser;
try {
  const base = await listen(server);
  browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  await page.goto(base);
  await page.waitForSelector('body[data-run="idle"]', { timeout: 60_000 });
  await page.click('#toEnd');
  await page.waitForSelector('body[data-run="done"]', { timeout: 120_000 });
  await page.evaluate(() => window.scrollTo(0, 0));
  // Down to the backfill requests' end (#backfill, in the gaps panel), whatever their height.
  const bottom = await page.evaluate(() => {
    const list = document.getElementById('backfill');
    return list ? Math.ceil(list.getBoundingClientRect().bottom + window.scrollY + 16) : null;
  });
  if (!bottom) throw new Error('screenshot: the page has no backfill requests (#backfill); has the page changed?');
  const text = async (sel) => (await page.textContent(sel)).trim();
  const figure = (stat) => text(`[data-stat="${stat}"]`);
  // The caption says a backfill closes a gap: a default scenario without one would make it untrue.
  if (Number(await text('[data-counter="gaps-by-backfill"]')) === 0) throw new Error('screenshot: the default run has no backfill; has the default scenario changed?');
  await page.screenshot({ path: OUT.pathname, fullPage: true, clip: { x: 0, y: 0, width: 1200, height: bottom } });

  const caption =
    `![The demo after a default run: no dedupe passes ${await figure('none-dups')} duplicates, ` +
    `naive device+timestamp dedupe loses ${await figure('naive-lost')} real readings, ` +
    `device+seq dedupe ${await figure('seq-lost')} after battery swaps, reconnect-dedupe none; ` +
    `each chart marks where its strategy lost or doubled a reading; below, the gaps of one bin, ` +
    `closed by its replays and by a backfill](www/demo-screenshot.png)`;
  const readme = fs.readFileSync(README, 'utf8');
  if (!CAPTION.test(readme)) throw new Error("screenshot: README.md has no line `![The demo after a default run: …](www/demo-screenshot.png)` to update");
  fs.writeFileSync(README, readme.replace(CAPTION, caption));
  console.log(`screenshot: ${OUT.pathname} (${fs.statSync(OUT).size} bytes); README.md: ${caption}`);
} finally {
  await closeAll(browser, server);
}
