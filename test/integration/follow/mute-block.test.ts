/**
 * mute and block through a real client over HTTP (and graphql-ws for the live feed), in every
 * feed model, and in the embedded pass on SQLite (pull):
 * - mute hides an author from the feed and the live feed without unfollowing, unmute brings
 *   their blogs back; a mute of someone not followed applies when they are followed later;
 * - block ends the follows both ways with exact counts, refuses follows either way, and hides
 *   each from the other's feed, social lists, likers and search;
 * - User.muted and User.blocked: the viewer's own, most recent first, paged with cursors, empty
 *   on anyone else and for an anonymous viewer;
 * - followFeedRemoved tells a live client of the blogs a mute or a block took out of its feed;
 * - bad input: typed errors naming userId, and nothing changed.
 * Every feed read is compared with the truth (MySQL: live blogs of the unmuted followees).
 */
import { fromGlobalId } from '../../../src/kernel/global-id';
import {
  EMBEDDED,
  errorCode,
  follow,
  ok,
  publish,
  scrollFeed,
  signUp,
  startTestApp,
  TestApp,
  TestUser,
} from '../../support/harness';
import { FOLLOW_FEED_REMOVED, liveClient, LiveClient } from '../../support/live-client';
import { waitFor } from '../../support/processes';

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

const MUTE = `mutation($u: ID!, $m: Boolean!) { mute(userId: $u, muted: $m) { id nickName followerCount isFollowedByViewer } }`;
const BLOCK = `mutation($u: ID!, $b: Boolean!) { block(userId: $u, blocked: $b) { id nickName followerCount followingCount isFollowedByViewer } }`;
const FOLLOW = `mutation($u: ID!) { follow(userId: $u) { id } }`;
const LIST = (field: 'muted' | 'blocked' | 'followers' | 'following') => `query($id: ID!, $first: Int, $after: String) {
  user(id: $id) { list: ${field}(first: $first, after: $after) { edges { cursor node { id nickName } } pageInfo { hasNextPage endCursor } } } }`;
const COUNTS = `query($id: ID!) { user(id: $id) { followerCount followingCount } }`;

const clients: LiveClient[] = [];
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.dispose()));
});

/** The reader's feed as the truth says it must be: live blogs of the followees not muted, canonical order. */
async function truth(app: TestApp, reader: TestUser): Promise<string[]> {
  const rows = await app.query<{ id: string }>(
    `SELECT b.id FROM tb_blog b JOIN tb_follow f ON f.follow_user_id = b.user_id
     WHERE f.user_id = ? AND f.muted = 0 AND b.deleted_at IS NULL ORDER BY b.created_at DESC, b.id DESC`,
    [dbId(reader)],
  );
  return rows.map((row) => Buffer.from(`Blog:${row.id}`).toString('base64'));
}

/** The feed scrolled with pages of 1 and 3 (fan-out finished first), checked against the truth; the ids. */
async function feed(app: TestApp, reader: TestUser): Promise<string[]> {
  await app.services.fanout?.idle();
  const expected = await truth(app, reader);
  for (const first of [1, 3]) expect(await scrollFeed(app, reader, first)).toEqual(expected);
  return expected;
}

/** Every page of a user's list as `viewer` reads it, with pages of `first`: the nickNames in order. */
async function list(
  app: TestApp,
  field: 'muted' | 'blocked' | 'followers' | 'following',
  owner: TestUser,
  viewer: TestUser | null,
  first = 2,
): Promise<string[]> {
  const names: string[] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 50; pages += 1) {
    const data: any = ok(await app.gql(LIST(field), { id: owner.id, first, after }, viewer?.token));
    names.push(...data.user.list.edges.map((edge: any) => edge.node.nickName));
    if (!data.user.list.pageInfo.hasNextPage) return names;
    after = data.user.list.pageInfo.endCursor;
  }
  throw new Error('the list did not end');
}

describe.each(EMBEDDED ? ['pull'] : ['push', 'hybrid', 'pull'])('FEED_MODEL=%s', (model) => {
  let app: TestApp;
  let n = 0;
  const user = (name: string) => signUp(app, `${name}${(n += 1)}`);
  beforeAll(async () => {
    // hybrid with BIG_V_FOLLOWERS=2: an author with two followers is pulled at read time.
    app = await startTestApp(`mute_block_${model}`, {
      env: EMBEDDED ? {} : { FEED_MODEL: model, BIG_V_FOLLOWERS: '2' },
    });
  });
  afterAll(() => app.close());

  it("mute hides a followee's blogs from the feed without unfollowing; unmute brings them back; both idempotent", async () => {
    const [reader, loud, quiet, fan] = [
      await user('reader'),
      await user('loud'),
      await user('quiet'),
      await user('fan'),
    ];
    await follow(app, reader, loud);
    await follow(app, reader, quiet);
    await follow(app, fan, loud); // loud has two followers: a big author in hybrid
    const loudBlogs = [await publish(app, loud, 'l1'), await publish(app, loud, 'l2')];
    const quietBlogs = [await publish(app, quiet, 'q1')];
    expect(await feed(app, reader)).toHaveLength(3);

    for (let twice = 0; twice < 2; twice += 1) {
      const muted = ok(await app.gql(MUTE, { u: loud.id, m: true }, reader.token)).mute;
      expect(muted).toEqual({ id: loud.id, nickName: loud.nickName, followerCount: 2, isFollowedByViewer: true });
    }
    expect(await feed(app, reader)).toEqual(quietBlogs);
    // Still followed: counts and lists keep the follow; the other follower's feed is untouched.
    expect(ok(await app.gql(COUNTS, { id: reader.id }, reader.token)).user).toEqual({
      followerCount: 0,
      followingCount: 2,
    });
    expect(await list(app, 'followers', loud, reader)).toEqual([fan.nickName, reader.nickName]);
    expect(await feed(app, fan)).toEqual([...loudBlogs].reverse());
    // New blogs of a muted author stay out too.
    const later = await publish(app, loud, 'l3');
    expect(await feed(app, reader)).toEqual(quietBlogs);
    expect(await list(app, 'muted', reader, reader)).toEqual([loud.nickName]);

    for (let twice = 0; twice < 2; twice += 1) ok(await app.gql(MUTE, { u: loud.id, m: false }, reader.token));
    expect(await feed(app, reader)).toEqual([later, ...quietBlogs, loudBlogs[1], loudBlogs[0]]);
    expect(await list(app, 'muted', reader, reader)).toEqual([]);
    // muted defaults to true.
    ok(await app.gql('mutation($u: ID!) { mute(userId: $u) { id } }', { u: quiet.id }, reader.token));
    expect(await feed(app, reader)).toEqual([later, loudBlogs[1], loudBlogs[0]]);
  });

  it('pages up (last/before) and the new-post count leave a muted author out too', async () => {
    const [reader, muted, kept] = [await user('upreader'), await user('upmuted'), await user('upkept')];
    await follow(app, reader, muted);
    await follow(app, reader, kept);
    await publish(app, kept, 'oldest');
    await app.services.fanout?.idle();
    const [{ cursor }] = ok(await app.gql('{ followFeed(first: 1) { edges { cursor } } }', {}, reader.token)).followFeed
      .edges;
    await publish(app, muted, 'muted 1');
    const newer = await publish(app, kept, 'kept 1');
    await publish(app, muted, 'muted 2');
    ok(await app.gql(MUTE, { u: muted.id, m: true }, reader.token));
    await app.services.fanout?.idle();
    const up = ok(
      await app.gql(
        'query($b: String!) { followFeed(last: 10, before: $b) { edges { node { id } } } followFeedNewCount(before: $b) }',
        { b: cursor },
        reader.token,
      ),
    );
    expect(up.followFeed.edges.map((edge: any) => edge.node.id)).toEqual([newer]);
    expect(up.followFeedNewCount).toBe(1);
  });

  it('a mute of someone not followed is kept and applies when they are followed later', async () => {
    const [reader, author] = [await user('reader'), await user('author')];
    await publish(app, author, 'before');
    ok(await app.gql(MUTE, { u: author.id, m: true }, reader.token));
    await follow(app, reader, author);
    expect(ok(await app.gql(COUNTS, { id: author.id }, reader.token)).user.followerCount).toBe(1);
    expect(await feed(app, reader)).toEqual([]);
    await publish(app, author, 'after');
    expect(await feed(app, reader)).toEqual([]);
    ok(await app.gql(MUTE, { u: author.id, m: false }, reader.token));
    expect(await feed(app, reader)).toHaveLength(2);
  });

  it("a muted author's new blogs do not reach the live feed; after unmute they do", async () => {
    const [reader, muted, other] = [await user('reader'), await user('muted'), await user('other')];
    await follow(app, reader, muted);
    await follow(app, reader, other);
    ok(await app.gql(MUTE, { u: muted.id, m: true }, reader.token));
    const client = liveClient(app.url, reader.token);
    clients.push(client);
    const buses = app.services.liveBuses;
    // Listening: on the reader's channel, and (pull, hybrid) on the unmuted followee's only.
    await waitFor(
      'the subscription to be live',
      async () => (await buses.readers.liveAmong([dbId(reader)])).length === 1,
    );
    if (model !== 'push') {
      await waitFor('the followee channel', async () => (await buses.authors.liveAmong([dbId(other)])).length === 1);
      expect(await buses.authors.liveAmong([dbId(muted)])).toEqual([]);
    }
    await publish(app, muted, 'hidden');
    const shown = await publish(app, other, 'shown');
    await client.received(1);
    await app.services.fanout?.idle();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(client.edges.map((edge) => edge.node.id)).toEqual([shown]);
    ok(await app.gql(MUTE, { u: muted.id, m: false }, reader.token));
    if (model !== 'push')
      await waitFor('the unmuted channel', async () => (await buses.authors.liveAmong([dbId(muted)])).length === 1);
    const back = await publish(app, muted, 'back');
    await client.received(2);
    expect(client.edges.map((edge) => edge.node.id)).toEqual([shown, back]);
  });

  it('followFeedRemoved tells of the blogs a mute takes out, and of those a block takes out on either side', async () => {
    const [reader, muted, blocker, kept] = [
      await user('rmreader'),
      await user('rmmuted'),
      await user('rmblocker'),
      await user('rmkept'),
    ];
    for (const author of [muted, blocker, kept]) await follow(app, reader, author);
    const mutedBlogs = [await publish(app, muted, 'm1'), await publish(app, muted, 'm2')];
    const blockerBlogs = [await publish(app, blocker, 'b1')];
    await publish(app, kept, 'k1');
    await app.services.fanout?.idle();
    const client = liveClient(app.url, reader.token, FOLLOW_FEED_REMOVED);
    clients.push(client);
    const buses = app.services.liveBuses;
    await waitFor(
      'the subscription to be live',
      async () => (await buses.readers.liveAmong([dbId(reader)])).length === 1,
    );
    ok(await app.gql(MUTE, { u: muted.id, m: true }, reader.token));
    await waitFor('the mute', async () => client.removals.length >= 2);
    expect([...client.removals].sort()).toEqual([...mutedBlogs].sort());
    // The author blocks the reader: the reader's follow ends, and the reader hears of it.
    ok(await app.gql(BLOCK, { u: reader.id, b: true }, blocker.token));
    await waitFor('the block', async () => client.removals.length >= 3);
    expect(client.removals.slice(2)).toEqual(blockerBlogs);
    // Nothing else: the kept author's blog is still seen, a repeated mute tells nothing again.
    ok(await app.gql(MUTE, { u: muted.id, m: true }, reader.token));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(client.removals).toHaveLength(3);
    expect(client.errors).toEqual([]);
  });

  it('block ends the follows both ways with exact counts, refuses new ones either way, and unblock allows them again', async () => {
    const [alice, bob, carol] = [await user('alice'), await user('bob'), await user('carol')];
    await follow(app, alice, bob);
    await follow(app, bob, alice);
    await follow(app, carol, bob);
    const bobBlog = await publish(app, bob, 'by bob');
    const aliceBlog = await publish(app, alice, 'by alice');
    expect(await feed(app, alice)).toEqual([bobBlog]);
    expect(await feed(app, bob)).toEqual([aliceBlog]);

    for (let twice = 0; twice < 2; twice += 1) {
      const blocked = ok(await app.gql(BLOCK, { u: bob.id, b: true }, alice.token)).block;
      expect(blocked).toEqual({
        id: bob.id,
        nickName: bob.nickName,
        followerCount: 1,
        followingCount: 0,
        isFollowedByViewer: false,
      });
    }
    expect(ok(await app.gql(COUNTS, { id: alice.id }, alice.token)).user).toEqual({
      followerCount: 0,
      followingCount: 0,
    });
    expect(await feed(app, alice)).toEqual([]);
    expect(await feed(app, bob)).toEqual([]);
    expect(await feed(app, carol)).toEqual([bobBlog]);
    // Either way a follow is FORBIDDEN, reason "blocked", naming userId; nothing changes.
    for (const [who, whom] of [
      [alice, bob],
      [bob, alice],
    ]) {
      const refused = await app.gql(FOLLOW, { u: whom.id }, who.token);
      expect(refused.errors?.[0].extensions).toMatchObject({ code: 'FORBIDDEN', field: 'userId', reason: 'blocked' });
    }
    expect(ok(await app.gql(COUNTS, { id: bob.id }, bob.token)).user).toEqual({ followerCount: 1, followingCount: 0 });
    const [{ n: rows }] = await app.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM tb_follow WHERE user_id IN (?, ?) AND follow_user_id IN (?, ?)',
      [dbId(alice), dbId(bob), dbId(alice), dbId(bob)],
    );
    expect(Number(rows)).toBe(0);
    expect(await list(app, 'blocked', alice, alice)).toEqual([bob.nickName]);
    expect(await list(app, 'blocked', bob, bob)).toEqual([]);

    for (let twice = 0; twice < 2; twice += 1) ok(await app.gql(BLOCK, { u: bob.id, b: false }, alice.token));
    expect(await list(app, 'blocked', alice, alice)).toEqual([]);
    await follow(app, bob, alice);
    await follow(app, alice, bob);
    expect(await feed(app, alice)).toEqual([bobBlog]);
    expect(ok(await app.gql(COUNTS, { id: alice.id }, alice.token)).user).toEqual({
      followerCount: 1,
      followingCount: 1,
    });
  });

  it('block hides each from the other in followers, following, likers and search, and no one else', async () => {
    const [alice, bob, carol] = [await user('hidea'), await user('hideb'), await user('hidec')];
    await follow(app, alice, carol);
    await follow(app, bob, carol);
    await follow(app, carol, alice);
    await follow(app, carol, bob);
    const blog = await publish(app, carol, 'liked');
    for (const liker of [alice, bob])
      ok(await app.gql('mutation($b: ID!) { likeBlog(blogId: $b) { id } }', { b: blog }, liker.token));
    ok(await app.gql(BLOCK, { u: alice.id, b: true }, bob.token));
    const likers = async (viewer: TestUser | null) =>
      ok(
        await app.gql(
          'query($b: ID!) { blog(id: $b) { likeCount likers { edges { node { nickName } } } } }',
          { b: blog },
          viewer?.token,
        ),
      ).blog;
    const search = async (viewer: TestUser | null) =>
      ok(
        await app.gql('query { users(search: "hide") { edges { node { nickName } } } }', {}, viewer?.token),
      ).users.edges.map((e: any) => e.node.nickName);
    for (const [viewer, other] of [
      [alice, bob],
      [bob, alice],
    ]) {
      expect(await list(app, 'followers', carol, viewer)).toEqual([viewer.nickName]);
      expect(await list(app, 'following', carol, viewer)).toEqual([viewer.nickName]);
      expect(await likers(viewer)).toEqual({
        likeCount: 2,
        likers: { edges: [{ node: { nickName: viewer.nickName } }] },
      });
      expect(await search(viewer)).not.toContain(other.nickName);
    }
    // Anyone else sees both.
    for (const viewer of [carol, null]) {
      expect((await list(app, 'followers', carol, viewer)).sort()).toEqual([alice.nickName, bob.nickName].sort());
      expect((await likers(viewer)).likers.edges).toHaveLength(2);
      expect(await search(viewer)).toEqual(expect.arrayContaining([alice.nickName, bob.nickName]));
    }
    // A profile stays readable by id.
    expect(
      ok(await app.gql('query($id: ID!) { user(id: $id) { nickName } }', { id: bob.id }, alice.token)).user,
    ).toEqual({ nickName: bob.nickName });
  });

  it('keeps counts, follows and feeds exact under concurrent follows, mutes and blocks of the same users', async () => {
    const [a, b, c] = [await user('racea'), await user('raceb'), await user('racec')];
    for (const [author, title] of [
      [a, 'by a'],
      [b, 'by b'],
      [c, 'by c'],
    ] as const)
      await publish(app, author, title);
    const ops = [];
    for (let i = 0; i < 6; i += 1) {
      ops.push(
        app.gql(FOLLOW, { u: b.id }, a.token),
        app.gql(FOLLOW, { u: a.id }, b.token),
        app.gql(FOLLOW, { u: c.id }, a.token),
      );
      ops.push(
        app.gql(MUTE, { u: c.id, m: i % 2 === 0 }, a.token),
        app.gql(MUTE, { u: b.id, m: i % 3 === 0 }, a.token),
      );
      if (i === 3) ops.push(app.gql(BLOCK, { u: a.id, b: true }, b.token));
    }
    const answers = await Promise.all(ops);
    // Every answer is a success or the refusal of a follow across the block.
    for (const answer of answers)
      if (answer.errors) expect(answer.errors[0].extensions).toMatchObject({ code: 'FORBIDDEN', reason: 'blocked' });
    const ids = [a, b, c].map(dbId);
    const counts = await app.query<{ id: string; follower_count: number; following_count: number }>(
      'SELECT id, follower_count, following_count FROM tb_user WHERE id IN (?)',
      [ids],
    );
    for (const row of counts) {
      const [followers] = await app.query<{ n: number }>(
        'SELECT COUNT(*) AS n FROM tb_follow WHERE follow_user_id = ?',
        [row.id],
      );
      const [following] = await app.query<{ n: number }>('SELECT COUNT(*) AS n FROM tb_follow WHERE user_id = ?', [
        row.id,
      ]);
      expect({ id: row.id, followers: Number(row.follower_count), following: Number(row.following_count) }).toEqual({
        id: row.id,
        followers: Number(followers.n),
        following: Number(following.n),
      });
    }
    // The block stands: neither follows the other; the muted flags agree with the mutes.
    const [between] = await app.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM tb_follow WHERE user_id IN (?, ?) AND follow_user_id IN (?, ?)',
      [ids[0], ids[1], ids[0], ids[1]],
    );
    expect(Number(between.n)).toBe(0);
    const [disagreeing] = await app.query<{ n: number }>(
      `SELECT COUNT(*) AS n FROM tb_follow f
       WHERE f.muted <> (CASE WHEN EXISTS (SELECT 1 FROM tb_user_mute m WHERE m.user_id = f.user_id AND m.muted_user_id = f.follow_user_id) THEN 1 ELSE 0 END)`,
    );
    expect(Number(disagreeing.n)).toBe(0);
    for (const reader of [a, b, c]) await feed(app, reader);
  });

  it('lists mutes and blocks on the viewer only, most recent first, with cursors and a bounded first', async () => {
    const viewer = await user('lister');
    const others: TestUser[] = [];
    for (let i = 0; i < 5; i += 1) others.push(await user(`target${i}`));
    for (const other of others) {
      ok(await app.gql(MUTE, { u: other.id, m: true }, viewer.token));
      ok(await app.gql(BLOCK, { u: other.id, b: true }, viewer.token));
      await new Promise((resolve) => setTimeout(resolve, 5)); // distinct times; ties go by id anyway
    }
    const newestFirst = [...others].reverse().map((other) => other.nickName);
    for (const first of [1, 2, 5, 10]) {
      expect(await list(app, 'muted', viewer, viewer, first)).toEqual(newestFirst);
      expect(await list(app, 'blocked', viewer, viewer, first)).toEqual(newestFirst);
    }
    // On anyone else, or anonymously: empty.
    for (const reader of [others[0], null]) {
      expect(await list(app, 'muted', viewer, reader)).toEqual([]);
      expect(await list(app, 'blocked', viewer, reader)).toEqual([]);
    }
    const viewerQuery = ok(
      await app.gql(
        '{ viewer { muted(first: 2) { edges { node { nickName } } } blocked { edges { node { nickName } } } } }',
        {},
        viewer.token,
      ),
    );
    expect(viewerQuery.viewer.muted.edges.map((e: any) => e.node.nickName)).toEqual(newestFirst.slice(0, 2));
    expect(viewerQuery.viewer.blocked.edges).toHaveLength(5);
    for (const bad of [{ first: 101 }, { first: -1 }, { after: 'not-a-cursor' }]) {
      const response = await app.gql(LIST('muted'), { id: viewer.id, ...bad }, viewer.token);
      expect(response.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: Object.keys(bad)[0] });
    }
  });

  it('refuses bad input with a typed error naming userId, and changes nothing', async () => {
    const [viewer, target] = [await user('bad'), await user('badtarget')];
    await follow(app, viewer, target);
    const rows = async () => {
      const [mutes] = await app.query<{ n: number }>('SELECT COUNT(*) AS n FROM tb_user_mute WHERE user_id = ?', [
        dbId(viewer),
      ]);
      const [blocks] = await app.query<{ n: number }>('SELECT COUNT(*) AS n FROM tb_user_block WHERE user_id = ?', [
        dbId(viewer),
      ]);
      const [follows] = await app.query<{ n: number }>(
        'SELECT COUNT(*) AS n FROM tb_follow WHERE user_id = ? AND muted = 0',
        [dbId(viewer)],
      );
      return [Number(mutes.n), Number(blocks.n), Number(follows.n)];
    };
    const before = await rows();
    const unknown = Buffer.from('User:987654321').toString('base64');
    const blogId = await publish(app, target, 'a blog');
    for (const mutation of [
      'mutation($u: ID!) { mute(userId: $u) { id } }',
      'mutation($u: ID!) { block(userId: $u) { id } }',
    ]) {
      const run = (u: string, token: string | null = viewer.token) => app.gql(mutation, { u }, token ?? undefined);
      expect((await run(viewer.id)).errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'userId' });
      expect((await run(unknown)).errors?.[0].extensions).toMatchObject({ code: 'NOT_FOUND', field: 'userId' });
      expect((await run('%%%')).errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'userId' });
      expect((await run(blogId)).errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'userId' });
      expect(errorCode(await run(target.id, null))).toBe('UNAUTHENTICATED');
    }
    expect(await rows()).toEqual(before);
  });
});
