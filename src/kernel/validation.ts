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
