/**
 * PeekableLoader (graphql/loaders.ts): what peek answers without a promise is always what load
 * would answer, checked against DataLoader's own cache over random sequences of prime, load,
 * clear and clearAll.
 */
import fc from 'fast-check';
import { PeekableLoader } from '../../../src/graphql/loaders';

type Step =
  | { op: 'prime'; key: number; value: 'a' | 'b' | 'error' | 'promise' }
  | { op: 'load'; key: number }
  | { op: 'clear'; key: number }
  | { op: 'clearAll' };

const key = fc.integer({ min: 1, max: 4 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant('prime' as const), key, value: fc.constantFrom('a', 'b', 'error', 'promise') }),
  fc.record({ op: fc.constant('load' as const), key }),
  fc.record({ op: fc.constant('clear' as const), key }),
  fc.constant({ op: 'clearAll' as const }),
);

/** Loads answer "loaded:<key>", so a loaded value is never mistaken for a primed one. */
const loaderOf = () => new PeekableLoader<number, string>(async (keys) => keys.map((k) => `loaded:${k}`));

describe('PeekableLoader', () => {
  it('peeks only what load would answer, the first plain value primed since the last clear', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 30 }), async (steps) => {
        const loader = loaderOf();
        const pending: Promise<unknown>[] = [];
        for (const s of steps) {
          if (s.op === 'prime') {
            const value =
              s.value === 'error' ? new Error('primed error') : s.value === 'promise' ? Promise.resolve('p') : s.value;
            loader.prime(s.key, value);
          } else if (s.op === 'load') pending.push(loader.load(s.key).catch(() => undefined));
          else if (s.op === 'clear') loader.clear(s.key);
          else loader.clearAll();
        }
        await Promise.all(pending);
        for (const k of [1, 2, 3, 4]) {
          const peeked = loader.peek(k);
          if (peeked === undefined) continue;
          await expect(loader.load(k)).resolves.toBe(peeked);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('peeks a primed value, keeps the first one primed, and forgets it on clear', () => {
    const loader = loaderOf();
    expect(loader.peek(1)).toBeUndefined();
    loader.prime(1, 'first').prime(1, 'second');
    expect(loader.peek(1)).toBe('first');
    loader.clear(1);
    expect(loader.peek(1)).toBeUndefined();
    loader.prime(1, 'again');
    expect(loader.peek(1)).toBe('again');
    loader.clearAll();
    expect(loader.peek(1)).toBeUndefined();
  });

  it('does not peek a key that was loaded before it was primed (load keeps what it loaded)', async () => {
    const loader = loaderOf();
    await loader.load(2);
    loader.prime(2, 'primed later');
    expect(loader.peek(2)).toBeUndefined();
    await expect(loader.load(2)).resolves.toBe('loaded:2');
  });
});
