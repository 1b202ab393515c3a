/**
 * The one place that hides passwords in URLs, for everything that shows a URL or may quote one:
 * configuration errors, replica names (/readyz, /metrics labels), log lines. It works on any
 * text, not only on a URL that parses: a configuration error quotes exactly the value that did
 * not parse.
 */

/**
 * `scheme://user:password@`: the user is kept (it says which account), the password is replaced.
 * The password runs to the last `@` before white space, a quote or a comma, so an unencoded `@`
 * or `/` inside it is hidden too; the comma separates the URLs of a list (DATABASE_REPLICA_URLS).
 */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^\s"',:@/]*):[^\s"',]*@/gi;

/** `text` with the password of every URL in it replaced by `***`. */
export function hidePasswords(text: string): string {
  return text.replace(URL_PASSWORD, '$1:***@');
}
