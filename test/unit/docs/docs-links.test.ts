/**
 * The documentation points at things that exist: every test file that docs/testing.md's rule
 * tables name, and every relative link of README.md and docs/*.md (a file, or a folder). A file
 * moved or renamed without its documentation fails here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const DOCS = join(ROOT, 'docs');

/** Test file paths in the first column that holds one, in every table row of docs/testing.md. */
function testedFiles(): string[] {
  const files: string[] = [];
  for (const line of readFileSync(join(DOCS, 'testing.md'), 'utf8').split('\n')) {
    if (!line.startsWith('|')) continue;
    const cells = line.split('|').map((cell) => cell.trim());
    const path = cells.find((cell) => /^test\/\S+\.test\.ts$/.test(cell));
    if (path !== undefined) files.push(path);
  }
  return files;
}

/** The relative targets of the Markdown links of a file, without their #anchors; code spans and blocks left out. */
function relativeLinks(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const links: string[] = [];
  for (const match of prose.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
    const target = match[1].split('#')[0];
    if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    links.push(target);
  }
  return links;
}

const documents = [
  'README.md',
  ...readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name)),
];

test('docs/testing.md names test files, and each of them exists', () => {
  const files = testedFiles();
  expect(files.length).toBeGreaterThan(50);
  expect(files.filter((file) => !existsSync(join(ROOT, file)))).toEqual([]);
});

test.each(documents)('every relative link of %s points to a file or folder that exists', (document) => {
  const path = join(ROOT, document);
  const broken = relativeLinks(readFileSync(path, 'utf8')).filter(
    (target) => !existsSync(resolve(dirname(path), decodeURIComponent(target))),
  );
  expect(broken).toEqual([]);
});

test('the link check sees links, and would see a broken one', () => {
  expect(relativeLinks('[a](docs/api.md#errors) [b](https://example.com) [c](#here) `[d](nowhere.md)`')).toEqual([
    'docs/api.md',
  ]);
  expect(existsSync(resolve(ROOT, 'docs/no-such-page.md'))).toBe(false);
});
