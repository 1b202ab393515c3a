/** The lanes of the fan-out queue: which job options put which job first (fanout.queue.ts). */
import { PRIORITY_LIMIT } from 'bullmq';
import { chunkJob, chunkPriority, dispatchJob } from '../../../src/fanout/fanout.queue';

const chunk = (seq: number) =>
  chunkJob({ taskId: 7, seq, kind: 'deliver', blogId: 1, authorId: 2, score: 3, followerIds: [4] });

it('dispatch jobs carry no priority: BullMQ serves them before every prioritized chunk', () => {
  expect(dispatchJob(7).opts.priority).toBeUndefined();
});

it("a chunk's priority is its position in its task, so every task's k-th chunk goes before any (k+1)-th", () => {
  expect([1, 2, 3, 1000].map((seq) => chunk(seq).opts.priority)).toEqual([1, 2, 3, 1000]);
});

it("chunks past BullMQ's priority limit share the last priority (BullMQ refuses a larger one)", () => {
  expect(chunkPriority(PRIORITY_LIMIT + 5)).toBe(PRIORITY_LIMIT);
  expect(chunkPriority(0)).toBe(1);
});
