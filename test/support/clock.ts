/**
 * A test clock for created_at values: each call returns the current time, and `tick` moves it.
 * Lets a test publish many blogs in one millisecond (tie groups) deterministically.
 */
export class TestClock {
  constructor(private ms = Date.parse('2026-01-01T00:00:00.000Z')) {}

  now = (): Date => new Date(this.ms);

  tick(ms = 1): void {
    this.ms += ms;
  }
}
