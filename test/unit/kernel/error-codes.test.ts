/**
 * The API guide's error table (docs/api.md) and the error vocabulary (src/kernel/errors.ts) list the same codes:
 * a code added to one without the other fails here, so clients' documentation cannot drift.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES } from '../../../src/kernel/errors';

/** The codes named in the first column of the table headed "| `extensions.code` |". */
const API_GUIDE = join(__dirname, '..', '..', '..', 'docs', 'api.md');

function guideErrorCodes(): string[] {
  const lines = readFileSync(API_GUIDE, 'utf8').split('\n');
  const header = lines.findIndex((line) => line.startsWith('| `extensions.code` |'));
  expect(header).toBeGreaterThanOrEqual(0);
  const codes: string[] = [];
  // Skip the header and its |---| separator; the table ends at the first line that is not a row.
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const firstCell = line.split('|')[1];
    for (const match of firstCell.matchAll(/`([A-Z][A-Z_]+)`/g)) codes.push(match[1]);
  }
  return codes;
}

test("the API guide's error table lists exactly the codes of the error vocabulary", () => {
  expect(new Set(guideErrorCodes())).toEqual(new Set(ERROR_CODES));
});

test('every code of the vocabulary has a row of its own in the API guide', () => {
  // A row may repeat a code with an extra extension (GRAPHQL_VALIDATION_FAILED + extensions.limit),
  // but each code needs at least one row that names it alone.
  const lines = readFileSync(API_GUIDE, 'utf8').split('\n');
  for (const code of ERROR_CODES)
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^\\| \`${code}\` \\|`)));
});
