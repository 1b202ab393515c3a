/**
 * The live bus's message format (src/live/live.bus.ts): every event survives the trip through
 * Redis pub/sub as it was sent, and a message that is not one of ours is dropped, not guessed at.
 */
import fc from 'fast-check';
import {
  decodeLiveEvent,
  encodeLiveEvent,
  LiveEvent,
  MAX_AUTHORS_PER_FOLLOWS_EVENT,
  MAX_REMOVED_PER_EVENT,
} from '../../../src/live/live.bus';

const id = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });

const eventArb: fc.Arbitrary<LiveEvent> = fc.oneof(
  fc.record({ kind: fc.constant('added' as const), blogId: id, score: fc.nat(), authorId: id }),
  fc.constant({ kind: 'follows' as const }),
  fc.record({
    kind: fc.constant('follows' as const),
    authorIds: fc.array(id, { maxLength: MAX_AUTHORS_PER_FOLLOWS_EVENT }),
  }),
  fc.record({ kind: fc.constant('removed' as const), blogIds: fc.array(id, { maxLength: 50 }) }),
);

it('decodes every event as it was encoded', () => {
  fc.assert(fc.property(eventArb, (event) => expect(decodeLiveEvent(encodeLiveEvent(event))).toEqual(event)));
});

it('drops what is not an event of ours', () => {
  for (const message of [
    'not json',
    'null',
    JSON.stringify({ kind: 'removed' }),
    JSON.stringify({ kind: 'removed', blogIds: ['1'] }),
    JSON.stringify({ kind: 'removed', blogIds: [1.5] }),
    JSON.stringify({ kind: 'removed', blogIds: Array.from({ length: MAX_REMOVED_PER_EVENT + 1 }, (_, i) => i + 1) }),
    JSON.stringify({ kind: 'added', blogId: 1, score: 'soon', authorId: 2 }),
    JSON.stringify({ kind: 'unknown' }),
  ]) {
    expect({ message: message.slice(0, 60), event: decodeLiveEvent(message) }).toEqual({
      message: message.slice(0, 60),
      event: null,
    });
  }
  expect(
    decodeLiveEvent(
      JSON.stringify({ kind: 'removed', blogIds: Array.from({ length: MAX_REMOVED_PER_EVENT }, (_, i) => i + 1) }),
    ),
  ).not.toBeNull();
});

it('reads a follows event whose author list is not one of ours as "every followee changed"', () => {
  // Never dropped: a relist of every followee is always right, only dearer.
  for (const authorIds of [
    ['1'],
    [1.5],
    'all',
    Array.from({ length: MAX_AUTHORS_PER_FOLLOWS_EVENT + 1 }, (_, i) => i + 1),
  ]) {
    expect(decodeLiveEvent(JSON.stringify({ kind: 'follows', authorIds }))).toEqual({ kind: 'follows' });
  }
});
