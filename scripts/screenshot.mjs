// `npm run screenshot`: the README's picture of the demo (www/demo-screenshot.png), made
// from the page itself: www/ served on an ephemeral port, Debian's Chromium
// (tests/support/browser.mjs), the default scenario run to the end, the page at 1200 px wide
// down to the end of its gaps panel (the counters and the sensor panel below it are
// left out: the picture stays under 0.5 MB). Prints the two figures the README's caption quotes; the browser test
// `tests/demo/page.test.mjs` checks that caption against the same run.
import { closeAll, launchChromium, listen } from '../tests/support/browser.mjs';
import { serveWww } from './serve-www.mjs';

const OUT = new URL('../www/demo-screenshot.png', import.meta.url);
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
  // Down to the gaps panel's end (#gaps), whatever its height.
  const bottom = await page.evaluate(() => {
    const panel = document.getElementById('gaps');
    return panel ? Math.ceil(panel.getBoundingClientRect().bottom + window.scrollY + 16) : null;
  });
  if (!bottom) throw new Error('screenshot: the page has no gaps panel (#gaps); has the page changed?');
  await page.screenshot({ path: OUT.pathname, fullPage: true, clip: { x: 0, y: 0, width: 1200, height: bottom } });
  const figure = async (stat) => (await page.textContent(`[data-stat="${stat}"]`)).trim();
  console.log(`screenshot: ${OUT.pathname}; no dedupe passes ${await figure('none-dups')} duplicates, naive dedupe loses ${await figure('naive-lost')} real readings`);
} finally {
  await closeAll(browser, server);
}
