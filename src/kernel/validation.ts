/**
 * Rules for user-supplied text, shared by every service that takes text input. Each failure is
 * a BAD_USER_INPUT that names the field and what was received.
 */
import { badUserInput } from './errors';

/** Length in characters (Unicode code points), the way MySQL's utf8mb4 VARCHAR counts them. */
export function charLength(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/**
 * A lone UTF-16 surrogate is not a character: MySQL would store it as U+FFFD, so the text would
 * not come back as sent, and two different inputs could become the same stored value.
 */
function isWellFormed(text: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

export interface TextRule {
  min: number;
  max: number;
  /** Reject text that is only white space (a title of spaces is an empty title). */
  notBlank?: boolean;
}

export function checkText(field: string, value: string, rule: TextRule): void {
  if (!isWellFormed(value)) {
    throw badUserInput(`${field} contains an unpaired UTF-16 surrogate (not valid Unicode text)`, field);
  }
  const length = charLength(value);
  if (length < rule.min || length > rule.max) {
    throw badUserInput(`${field} must be ${rule.min}..${rule.max} characters (got ${length})`, field);
  }
  if (rule.notBlank && value.trim().length === 0) {
    throw badUserInput(`${field} must not be blank (got ${length} white-space characters)`, field);
  }
}

/** C0 controls, DEL and C1 controls (U+0000-U+001F, U+007F-U+009F). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point of this pattern
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
/** The same but newline (U+000A) and tab (U+0009): text a person writes in several lines. */
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_BUT_NEWLINE_OR_TAB = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

/**
 * Refuses control characters, naming the first one and where it stands: they show as nothing
 * or as garbage in an app, can rewrite a terminal that prints them (ESC), and each weighs 6 bytes
 * in a JSON answer (`\u0001`). `newlineAndTab` lets those two through.
 */
export function checkNoControlCharacters(field: string, value: string, options: { newlineAndTab: boolean }): void {
  const found = (options.newlineAndTab ? CONTROL_BUT_NEWLINE_OR_TAB : CONTROL_CHARACTER).exec(value);
  if (!found) return;
  const codePoint = `U+${found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  const allowed = options.newlineAndTab ? ' other than newline and tab' : '';
  throw badUserInput(
    `${field} must not contain control characters${allowed} (got ${codePoint} at character ${charLength(value.slice(0, found.index)) + 1})`,
    field,
  );
}

/** The schemes an image or icon URL may have: what an app can load; `javascript:`, `data:` and the like are refused. */
const WEB_SCHEMES = new Set(['http:', 'https:']);

/**
 * Why `value` is not an absolute http or https URL as the WHATWG URL standard parses it, or null
 * when it is one. The value is stored as sent (not normalised): clients get back what they gave.
 */
export function httpUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (!WEB_SCHEMES.has(url.protocol))
    return `must be an http or https URL (got the scheme "${url.protocol.slice(0, 20)}")`;
  return null;
}

/** Refuses a value that is not an absolute http or https URL (httpUrlProblem), naming the field. */
export function checkHttpUrl(field: string, value: string): void {
  const problem = httpUrlProblem(value);
  if (problem !== null) throw badUserInput(`${field} ${problem}`, field);
}
