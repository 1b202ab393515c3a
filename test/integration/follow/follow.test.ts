/** follow: idempotent, exact counts under concurrency, and the feed follows at once (inboxes: inbox.test.ts). */
import { fromGlobalId, toGlobalId } from '../../../src/kernel/global-id';
import {
  errorCode,
  follow,
  ok,
  publish,
  publishInTurns,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';
import { TestClock } from '../../support/clock';

const FOLLOW = `mutation($u: ID!, $f: Boolean!) {
  follow(userId: $u, follow: $f) { id followerCount followingCount isFollowedByViewer }
}`;
const VIEWER = '{ viewer { followingCount followerCount } }';
const BACKFILL = 5;

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('follow', { now: clock.now, env: { FOLLOW_BACKFILL_ITEMS: String(BACKFILL) } });
});
afterAll(() => app.close());

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

it('is idempotent and keeps both counts', async () => {
  const a = await signUp(app, 'a');
  const b = await signUp(app, 'b');
  const set = (f: boolean) => app.gql(FOLLOW, { u: b.id, f }, a.token);
  expect(ok(await set(true)).follow).toMatchObject({ followerCount: 1, followingCount: 0, isFollowedByViewer: true });
  expect(ok(await set(true)).follow).toMatchObject({ followerCount: 1, isFollowedByViewer: true });
  expect(ok(await app.gql(VIEWER, {}, a.token)).viewer).toEqual({ followingCount: 1, followerCount: 0 });
  expect(ok(await set(false)).follow).toMatchObject({ followerCount: 0, isFollowedByViewer: false });
  expect(ok(await set(false)).follow).toMatchObject({ followerCount: 0, isFollowedByViewer: false });
  expect(ok(await app.gql(VIEWER, {}, a.token)).viewer).toEqual({ followingCount: 0, followerCount: 0 });
  // follow defaults to true
  const data = ok(
    await app.gql('mutation($u: ID!) { follow(userId: $u) { isFollowedByViewer } }', { u: b.id }, a.token),
  );
  expect(data.follow.isFollowedByViewer).toBe(true);
});

it('followUser answers both users as the change left them, even after a field that read them before it', async () => {
  const a = await signUp(app, 'payloada');
  const b = await signUp(app, 'payloadb');
  // The viewer's and the target's rows are read first by an earlier field of the same document:
  // the payload must not answer from what that field read.
  const FOLLOW_USER = `mutation($u: ID!, $f: Boolean!) {
    before: followUser(userId: $u, follow: $f) { user { id followerCount } viewer { id followingCount } }
    after: followUser(userId: $u, follow: $f) {
      user { id followerCount isFollowedByViewer } viewer { id followingCount followerCount }
    }
  }`;
  const set = (f: boolean) => app.gql(FOLLOW_USER, { u: b.id, f }, a.token);
  expect(ok(await set(true))).toEqual({
    before: { user: { id: b.id, followerCount: 1 }, viewer: { id: a.id, followingCount: 1 } },
    after: {
      user: { id: b.id, followerCount: 1, isFollowedByViewer: true },
      viewer: { id: a.id, followingCount: 1, followerCount: 0 },
    },
  });
  expect(ok(await set(false))).toEqual({
    before: { user: { id: b.id, followerCount: 0 }, viewer: { id: a.id, followingCount: 0 } },
    after: {
      user: { id: b.id, followerCount: 0, isFollowedByViewer: false },
      viewer: { id: a.id, followingCount: 0, followerCount: 0 },
    },
  });
  expect(ok(await app.gql(VIEWER, {}, a.token)).viewer).toEqual({ followingCount: 0, followerCount: 0 });
});

it('keeps counts exact under concurrent follows, unfollows and mutual follows', async () => {
  const star = await signUp(app, 'star');
  const crowd: TestUser[] = [];
  for (let i = 0; i < 30; i += 1) crowd.push(await signUp(app, `crowd${i}`));
  // Everyone follows the star twice at once, and the star follows everyone back at the same time
  // (mutual follows lock the same two rows from both sides).
  const responses = await Promise.all([
    ...crowd.flatMap((user) => [0, 1].map(() => app.gql(FOLLOW, { u: star.id, f: true }, user.token))),
    ...crowd.map((user) => app.gql(FOLLOW, { u: user.id, f: true }, star.token)),
  ]);
  for (const response of responses) ok(response);
  const starRow = async () =>
    (await app.query('SELECT follower_count f, following_count g FROM tb_user WHERE id = ?', [dbId(star)]))[0];
  expect(await starRow()).toEqual({ f: 30, g: 30 });
  await Promise.all(
    crowd.slice(0, 10).flatMap((user) => [0, 1].map(() => app.gql(FOLLOW, { u: star.id, f: false }, user.token))),
  );
  expect(await starRow()).toEqual({ f: 20, g: 30 });
  const [{ n }] = await app.query('SELECT COUNT(*) n FROM tb_follow WHERE follow_user_id = ?', [dbId(star)]);
  expect(Number(n)).toBe(20);
  for (const user of crowd.slice(10)) {
    const [row] = await app.query('SELECT follower_count f, following_count g FROM tb_user WHERE id = ?', [dbId(user)]);
    expect(row).toEqual({ f: 1, g: 1 });
  }
});

it("brings the followee's blogs into the feed at once, and takes them out on unfollow", async () => {
  const reader = await signUp(app, 'reader');
  const kept = await signUp(app, 'kept');
  const dropped = await signUp(app, 'dropped');
  const [keptIds, droppedIds] = await publishInTurns(app, clock, [kept, dropped], 8);
  await app.services.fanout?.idle();
  await follow(app, reader, kept);
  expect(await scrollFeed(app, reader, 3)).toEqual(keptIds);
  await follow(app, reader, dropped);
  // Published alternately, each a tick after the last: newest first, each dropped before its kept.
  expect(await scrollFeed(app, reader, 4)).toEqual(keptIds.flatMap((kept, i) => [droppedIds[i], kept]));
  clock.tick();
  const fresh = await publish(app, dropped, 'fresh');
  await app.services.fanout?.idle();
  expect((await scrollFeed(app, reader, 4))[0]).toBe(fresh);
  await follow(app, reader, dropped, false);
  expect(await scrollFeed(app, reader, 4)).toEqual(keptIds);
});

describe('bad input', () => {
  it('rejects following yourself, changing nothing', async () => {
    const me = await signUp(app, 'narcissus');
    const response = await app.gql(FOLLOW, { u: me.id, f: true }, me.token);
    expect(errorCode(response)).toBe('BAD_USER_INPUT');
    expect(ok(await app.gql(VIEWER, {}, me.token)).viewer).toEqual({ followingCount: 0, followerCount: 0 });
  });

  it('rejects unknown, malformed and wrong-type ids', async () => {
    const me = await signUp(app, 'prober');
    expect(
      errorCode(await app.gql(FOLLOW, { u: Buffer.from('User:99999').toString('base64'), f: true }, me.token)),
    ).toBe('NOT_FOUND');
    expect(errorCode(await app.gql(FOLLOW, { u: '!!', f: true }, me.token))).toBe('BAD_USER_INPUT');
    expect(errorCode(await app.gql(FOLLOW, { u: Buffer.from('Blog:1').toString('base64'), f: true }, me.token))).toBe(
      'BAD_USER_INPUT',
    );
    expect(ok(await app.gql(VIEWER, {}, me.token)).viewer).toEqual({ followingCount: 0, followerCount: 0 });
  });

  it('needs a viewer', async () => {
    const someone = await signUp(app, 'someone');
    expect(errorCode(await app.gql(FOLLOW, { u: someone.id, f: true }))).toBe('UNAUTHENTICATED');
  });
});

describe('limits on following', () => {
  const MAX_FOLLOWING = 3;
  const FOLLOWS_PER_WINDOW = 8;
  let limited: TestApp;
  let stars: TestUser[];

  beforeAll(async () => {
    limited = await startTestApp('follow_limits', {
      env: {
        RATE_LIMITS: 'on',
        RATE_LIMIT_SIGNUP_PER_IP: '1000/60',
        MAX_FOLLOWING: String(MAX_FOLLOWING),
        RATE_LIMIT_FOLLOW_PER_USER: `${FOLLOWS_PER_WINDOW}/600`,
      },
    });
    stars = [];
    for (let i = 0; i < MAX_FOLLOWING + 3; i += 1) stars.push(await signUp(limited, `star${i}`));
  });
  afterAll(() => limited.close());

  const followingCount = async (user: TestUser) => ok(await limited.gql(VIEWER, {}, user.token)).viewer.followingCount;
  const rows = async (user: TestUser) => {
    const [{ n }] = await limited.query('SELECT COUNT(*) n FROM tb_follow WHERE user_id = ?', [
      fromGlobalId(user.id).id,
    ]);
    return Number(n);
  };

  it('refuses a follow past MAX_FOLLOWING with FORBIDDEN naming the limit, changing nothing; unfollow stays allowed', async () => {
    const fan = await signUp(limited, 'fan');
    for (const star of stars.slice(0, MAX_FOLLOWING)) ok(await limited.gql(FOLLOW, { u: star.id, f: true }, fan.token));
    const refused = await limited.gql(FOLLOW, { u: stars[MAX_FOLLOWING].id, f: true }, fan.token);
    expect(refused.errors?.map((error) => error.extensions)).toEqual([
      expect.objectContaining({ code: 'FORBIDDEN', limit: 'maxFollowing', max: MAX_FOLLOWING, field: 'userId' }),
    ]);
    expect(refused.errors![0].message).toContain(`at most ${MAX_FOLLOWING}`);
    expect(await followingCount(fan)).toBe(MAX_FOLLOWING);
    expect(await rows(fan)).toBe(MAX_FOLLOWING);
    const [{ f }] = await limited.query('SELECT follower_count f FROM tb_user WHERE id = ?', [
      fromGlobalId(stars[MAX_FOLLOWING].id).id,
    ]);
    expect(Number(f)).toBe(0);
    // Following someone already followed changes nothing and is no new follow: still allowed.
    ok(await limited.gql(FOLLOW, { u: stars[0].id, f: true }, fan.token));
    // Unfollowing is always allowed, and makes room for one more.
    ok(await limited.gql(FOLLOW, { u: stars[0].id, f: false }, fan.token));
    ok(await limited.gql(FOLLOW, { u: stars[MAX_FOLLOWING].id, f: true }, fan.token));
    expect(await followingCount(fan)).toBe(MAX_FOLLOWING);
  });

  it('lets no two concurrent follows pass the cap together', async () => {
    const eager = await signUp(limited, 'eager');
    ok(await limited.gql(FOLLOW, { u: stars[0].id, f: true }, eager.token));
    // One place left, five follows at once: exactly one gets it.
    const responses = await Promise.all(
      stars.slice(1, 6).map((star) => limited.gql(FOLLOW, { u: star.id, f: true }, eager.token)),
    );
    const codes = responses.map((response) => (response.errors ? response.errors[0].extensions?.code : 'ok'));
    expect(codes.filter((code) => code === 'ok')).toHaveLength(MAX_FOLLOWING - 1);
    expect(codes.filter((code) => code !== 'ok')).toEqual(Array(6 - MAX_FOLLOWING).fill('FORBIDDEN'));
    expect(await followingCount(eager)).toBe(MAX_FOLLOWING);
    expect(await rows(eager)).toBe(MAX_FOLLOWING);
  });

  it('limits follows and unfollows per user (RATE_LIMIT_FOLLOW_PER_USER), with the seconds to wait', async () => {
    const flipper = await signUp(limited, 'flipper');
    for (let i = 0; i < FOLLOWS_PER_WINDOW; i += 1)
      ok(await limited.gql(FOLLOW, { u: stars[0].id, f: i % 2 === 0 }, flipper.token));
    const over = await limited.gql(FOLLOW, { u: stars[1].id, f: true }, flipper.token);
    expect(over.errors?.map((error) => error.extensions)).toEqual([
      expect.objectContaining({ code: 'RATE_LIMITED', limit: 'followPerUser' }),
    ]);
    expect(over.errors![0].extensions!.retryAfterSeconds).toBeGreaterThan(0);
    expect(errorCode(await limited.gql(FOLLOW, { u: stars[0].id, f: false }, flipper.token))).toBe('RATE_LIMITED');
    expect(await rows(flipper)).toBe(0);
    // Another user has a count of their own.
    ok(await limited.gql(FOLLOW, { u: stars[1].id, f: true }, stars[0].token));
  });
});

it("checks a follow's target by a read only until it has found the user (users are never deleted)", async () => {
  const a = await signUp(app, 'checka');
  const b = await signUp(app, 'checkb');
  const reads = jest.spyOn(app.services.users, 'findById');
  try {
    const missing = dbId(b) + 1_000_000;
    for (let twice = 0; twice < 2; twice += 1) {
      const refused = await app.gql(FOLLOW, { u: toGlobalId('User', missing), f: true }, a.token);
      expect(errorCode(refused)).toBe('NOT_FOUND');
    }
    expect(reads).toHaveBeenCalledTimes(2);
    expect(ok(await app.gql(FOLLOW, { u: b.id, f: true }, a.token)).follow.followerCount).toBe(1);
    expect(ok(await app.gql(FOLLOW, { u: b.id, f: false }, a.token)).follow.followerCount).toBe(0);
    expect(reads.mock.calls.map(([id]) => id)).toEqual([missing, missing, dbId(b)]);
  } finally {
    reads.mockRestore();
  }
});
