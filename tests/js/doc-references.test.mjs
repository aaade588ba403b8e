// Every reference from one file of the repository to a part of another resolves: a
// Markdown link's relative target exists (and its #anchor is a heading there, as GitHub
// names them), and a section named in quotes after README, a docs/ page or SECURITY.md
// (`README "Configuration"`, `(docs/benchmarks.md, "Sequence window")`) is a heading or a
// bold run-in title (`**Auth.**`) of that file, or the start of one. A section renamed
// or moved fails here, in the file that names it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
const read = (f) => fs.readFileSync(path.join(ROOT, f), 'utf8');
// Text a person wrote (not fixtures, which are the vendors' own, nor binaries).
const texts = tracked.filter((f) => !f.startsWith('tests/fixtures/') && !/\.(wasm|png|jpg|ico|bin|lock)$|package-lock\.json$/.test(f) && fs.existsSync(path.join(ROOT, f)));
const markdown = tracked.filter((f) => f.endsWith('.md'));
const outsideCode = (md) => md.replace(/^```[\s\S]*?^```/gm, '');

/** A Markdown file's section titles: its headings and its bold run-in titles, without inline code marks. */
function titles(md) {
  const text = outsideCode(read(md));
  const headings = [...text.matchAll(/^#{1,6} +(.+?) *#*$/gm)].map((m) => m[1]);
  const runIn = [...text.matchAll(/^\*\*([^*\n]+?)\.?\*\*/gm)].map((m) => m[1]);
  return [...headings, ...runIn].map((t) => t.replaceAll('`', '').trim());
}

/** GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces as -. */
const anchor = (heading) => heading.replaceAll('`', '').toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replaceAll(' ', '-');

test('every relative Markdown link points at a file of the repository, and its anchor at a heading there', () => {
  const broken = [];
  for (const md of markdown) {
    for (const [, target] of outsideCode(read(md)).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
      const [file, hash] = target.split('#');
      const resolved = file ? path.posix.normalize(path.posix.join(path.posix.dirname(md), file)) : md;
      if (!fs.existsSync(path.join(ROOT, resolved))) {
        broken.push(`${md}: ${target} (no ${resolved})`);
        continue;
      }
      if (hash && resolved.endsWith('.md')) {
        const headings = [...outsideCode(read(resolved)).matchAll(/^#{1,6} +(.+?) *#*$/gm)].map((m) => anchor(m[1]));
        if (!headings.includes(hash)) broken.push(`${md}: ${target} (no heading #${hash} in ${resolved})`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('every section named after README, a docs/ page or SECURITY.md is one of that file', () => {
  const pages = ['README.md', 'SECURITY.md', ...markdown.filter((f) => f.startsWith('docs/'))];
  const known = Object.fromEntries(pages.map((f) => [f, titles(f)]));
  const broken = [];
  let seen = 0;
  for (const f of texts) {
    // `README "X"`, `README.md "X"`, `(README, "X")`, `README: "X"`, `docs/delivery.md "X"`.
    // A reference may wrap: the lines are joined, their comment marks and indentation dropped.
    const text = read(f).replace(/\n[ \t]*(?:\/\/[!/]?|\*|#+)?[ \t]*/g, ' ');
    for (const m of text.matchAll(/(?<![\w/])README(?:\.md)?(?:'s)? step \d+/g)) broken.push(`${f}: "${m[0]}" (the README's steps are docs/network-servers.md's)`);
    for (const m of text.matchAll(/(?<![\w/])(README|SECURITY|docs\/[a-z-]+)(?:\.md)?[,:]? +\\?"([^"\n\\]{3,100})\\?"/g)) {
      if (f.startsWith('lib/') && m[1] === 'README') continue; // the library's own README is another file
      seen++;
      const page = `${m[1]}.md`;
      const name = m[2].replaceAll('`', '').trim();
      if (!known[page]) broken.push(`${f}: ${m[1]} "${m[2]}" (no ${page})`);
      else if (!known[page].some((t) => t === name || t.startsWith(name))) broken.push(`${f}: ${m[1]} "${m[2]}"`);
    }
  }
  assert.ok(seen > 40, `only ${seen} references found: has the way sections are named changed?`);
  assert.deepEqual(broken, []);
});

test('every docs/ page opens with its title, a line of what it holds, and contents that list its sections', () => {
  const wrong = [];
  for (const md of markdown.filter((f) => f.startsWith('docs/'))) {
    const text = read(md);
    const headings = [...outsideCode(text).matchAll(/^(#{2,3}) +(.+?) *$/gm)].filter((m) => m[2] !== 'Contents');
    const listed = [...text.matchAll(/^( *)- \[(.+?)\]\(#([^)]+)\)$/gm)].map((m) => `${m[1].length / 2 + 2} ${m[2]} ${m[3]}`);
    const wanted = headings.map((m) => `${m[1].length} ${m[2]} ${anchor(m[2])}`);
    if (!/^# .+\n\n(?:[^#\n].*\n)+\n## Contents\n/.test(text)) wrong.push(`${md}: not "# Title", a paragraph, "## Contents"`);
    if (listed.join('\n') !== wanted.join('\n')) wrong.push(`${md}: its contents do not list its sections (## and ###) in order`);
    const anchors = headings.map((m) => anchor(m[2]));
    for (const a of new Set(anchors.filter((x, i) => anchors.indexOf(x) !== i))) wrong.push(`${md}: two sections are #${a} (a link reaches only the first)`);
  }
  assert.deepEqual(wrong, []);
});
