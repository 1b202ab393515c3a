/**
 * The live feed end to end: real graphql-ws clients subscribed to followFeedAdded on the API's
 * /graphql address, while authors publish, delete and are unfollowed. Runs on MySQL + Redis (and
 * on the Redis Cluster pass), with the API in this process and in a second server process, and
 * the delivery cases again in the embedded mode (one process, events in memory).
 */
import { getIntrospectionQuery } from 'graphql';
import jwt from 'jsonwebtoken';
import WebSocket from 'ws';
import { fromGlobalId } from '../../../src/kernel/global-id';
import { withTimeout } from '../../../src/kernel/timeout';
import {
  dropInbox,
  EMBEDDED,
  follow,
  ok,
  publish,
  signUp,
  startTestApp,
  TEST_JWT_SECRET,
  TestApp,
  TestUser,
} from '../../support/harness';
import { liveClient, LiveClient } from '../../support/live-client';
import { freePort, startNodeProcess, waitFor, WorkerProcess } from '../../support/processes';

const dbId = (user: TestUser) => fromGlobalId(user.id).id;

/** Waits until the reader's subscription is listening (and, when given, on these authors' channels too). */
async function live(app: TestApp, reader: TestUser, authors: TestUser[] = []): Promise<void> {
  const buses = app.services.liveBuses;
  await waitFor('the subscription to be live', async () => {
    const readers = await buses.readers.liveAmong([dbId(reader)]);
    const listened = await buses.authors.liveAmong(authors.map(dbId));
    return readers.length === 1 && listened.length === authors.length;
  });
}

const clients: LiveClient[] = [];
const open = (url: string, token: string | null, query?: string | null) => {
  const client = liveClient(url, token, query);
  clients.push(client);
  return client;
};
afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.dispose()));
});

describe.each(EMBEDDED ? ['pull'] : ['push', 'hybrid', 'pull'])('followFeedAdded, FEED_MODEL=%s', (model) => {
  let app: TestApp;
  beforeAll(async () => {
    // hybrid with BIG_V_FOLLOWERS=2: "star" (two followers) is a big author whose blogs nobody fans out.
    app = await startTestApp(`live_${model}`, { env: EMBEDDED ? {} : { FEED_MODEL: model, BIG_V_FOLLOWERS: '2' } });
  });
  afterAll(() => app.close());

  it('delivers each new blog of a followed author once, with a cursor that continues the feed below it', async () => {
    const [reader, author, other] = [
      await signUp(app, 'reader'),
      await signUp(app, 'author'),
      await signUp(app, 'other'),
    ];
    await follow(app, reader, author);
    const older = await publish(app, author, 'older');
    await app.services.fanout?.idle(); // delivered before the subscription starts: not a live event
    const client = open(app.url, reader.token);
    await live(app, reader, model === 'push' ? [] : [author]);
    const id = await publish(app, author, 'fresh');
    await publish(app, other, 'not followed');
    const [edge] = await client.received(1);
    expect(edge.node).toEqual({ id, title: 'fresh', author: { nickName: 'author' } });
    // The edge's cursor is a feed cursor: the page after it starts with the blog below.
    const next = ok(
      await app.gql(
        'query($a: String) { followFeed(first: 1, after: $a) { edges { node { id } } } }',
        { a: edge.cursor },
        reader.token,
      ),
    );
    expect(next.followFeed.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([older]);
    await app.services.fanout?.idle();
    await publish(app, author, 'second');
    await client.received(2);
    expect(client.edges.map((e) => e.node.title)).toEqual(['fresh', 'second']);
    expect(client.errors).toEqual([]);
  });

  it('delivers to a subscriber whose inbox Redis lost (or that expired), before any page rebuilds it', async () => {
    const [reader, author] = [await signUp(app, 'inboxless'), await signUp(app, 'author-of-inboxless')];
    await follow(app, reader, author);
    if (!EMBEDDED) await dropInbox(app, dbId(reader)); // the embedded mode keeps no inbox to lose
    const client = open(app.url, reader.token);
    await live(app, reader, model === 'push' ? [] : [author]);
    const id = await publish(app, author, 'heard without an inbox');
    const [edge] = await client.received(1);
    expect(edge.node).toEqual({ id, title: 'heard without an inbox', author: { nickName: 'author-of-inboxless' } });
  });

  it('stops at once when the viewer unfollows, and never sends a deleted blog', async () => {
    const [reader, author, kept] = [
      await signUp(app, 'reader2'),
      await signUp(app, 'author2'),
      await signUp(app, 'kept2'),
    ];
    await follow(app, reader, author);
    await follow(app, reader, kept);
    const client = open(app.url, reader.token);
    await live(app, reader, model === 'push' ? [] : [author, kept]);
    await follow(app, reader, author, false);
    await publish(app, author, 'after the unfollow');
    const doomed = await publish(app, kept, 'deleted at once');
    ok(await app.gql('mutation($b: ID!) { deleteBlog(blogId: $b) }', { b: doomed }, kept.token));
    await publish(app, kept, 'kept');
    await app.services.fanout?.idle();
    await client.received(1);
    // Whatever was in flight has arrived by now (the fan-out is idle): only the one blog came.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(client.edges.map((e) => e.node.title).filter((title) => title !== 'deleted at once')).toEqual(['kept']);
    expect(client.edges.map((e) => e.node.title)).not.toContain('after the unfollow');
  });

  if (model === 'hybrid') {
    it("delivers a big author's blog, which nobody fans out, at its publish", async () => {
      const [reader, fan, star] = [await signUp(app, 'reader3'), await signUp(app, 'fan3'), await signUp(app, 'star3')];
      await follow(app, reader, star);
      await follow(app, fan, star); // two followers: star is big from now on
      const client = open(app.url, reader.token);
      await live(app, reader, [star]);
      const id = await publish(app, star, 'from a big author');
      const [row] = await app.query<{ pushed: number }>('SELECT pushed FROM tb_blog WHERE id = ?', [
        fromGlobalId(id).id,
      ]);
      expect(Number(row.pushed)).toBe(0);
      const [edge] = await client.received(1);
      expect(edge.node.id).toBe(id);
    });
  }
});

describe('refusals', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('live_refusals', { env: { MAX_SUBSCRIPTIONS_PER_USER: '2' } });
  });
  afterAll(() => app.close());

  it('closes an anonymous socket, and one with a forged token, with 4401 UNAUTHENTICATED', async () => {
    const anonymous = open(app.url, null);
    const forged = open(
      app.url,
      jwt.sign({}, 'not-our-secret-at-all', { algorithm: 'HS256', subject: '1', expiresIn: 60 }),
    );
    await waitFor('both sockets to close', async () => anonymous.closed() !== null && forged.closed() !== null);
    expect(anonymous.closed()).toEqual({ code: 4401, reason: expect.stringMatching(/^UNAUTHENTICATED: /) });
    expect(forged.closed()).toEqual({
      code: 4401,
      reason: 'UNAUTHENTICATED: the token is invalid (bad signature or format)',
    });
  });

  it('closes a socket that sends a malformed message (4400), and the server keeps serving the others', async () => {
    const user = await signUp(app, 'sloppy');
    const healthy = open(app.url, user.token);
    await live(app, user);
    const socket = new WebSocket(app.url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${user.token}` } }));
    await new Promise((resolve) => socket.once('message', resolve)); // connection_ack
    socket.send('{"type": "subscribe", "id": 7, "payload": "not an object"');
    expect((await closed).code).toBe(4400);
    expect(healthy.closed()).toBeNull();
    const author = await signUp(app, 'sloppy-author');
    await follow(app, user, author);
    const id = await publish(app, author, 'still served');
    expect((await healthy.received(1))[0].node.id).toBe(id);
  });

  it('ends the socket when the token expires', async () => {
    const user = await signUp(app, 'expiring');
    const token = jwt.sign({}, TEST_JWT_SECRET, { algorithm: 'HS256', subject: String(dbId(user)), expiresIn: 2 });
    const client = open(app.url, token);
    await live(app, user);
    expect(client.closed()).toBeNull();
    await waitFor('the socket to close at the expiry', async () => client.closed() !== null, 10_000);
    expect(client.closed()).toEqual({ code: 4401, reason: 'UNAUTHENTICATED: the token has expired; log in again' });
  });

  it('refuses a subscription over MAX_SUBSCRIPTIONS_PER_USER, a document over the limits and an unknown field, each with its code', async () => {
    const user = await signUp(app, 'greedy');
    const client = open(app.url, user.token);
    await live(app, user);
    client.subscribeAgain(); // the second one is allowed; it runs until the socket closes
    const third = await withTimeout(client.subscribeAgain().errors, 5000, 'the refusal of a third subscription');
    expect(third).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'RATE_LIMITED' }) })]);
    const deep = `subscription { followFeedAdded { node { author { blogs { edges { node { author { blogs { edges { node { author { nickName } } } } } } } } } } } }`;
    expect(await client.subscribeAgain(deep).errors).toEqual([
      expect.objectContaining({
        extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED', limit: 'depth' }),
      }),
    ]);
    expect(await client.subscribeAgain('subscription { nothingHere }').errors).toEqual([
      expect.objectContaining({ extensions: expect.objectContaining({ code: 'GRAPHQL_VALIDATION_FAILED' }) }),
    ]);
    expect(client.closed()).toBeNull(); // refusals end the operation, not the socket
  });
});

/** A sample of the API's /metrics (0 when the series is absent). */
async function metric(app: TestApp, series: string): Promise<number> {
  const text = await (await fetch(app.url.replace(/\/graphql$/, '/metrics'))).text();
  const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe('limits of a WebSocket', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('live_socket_limits', {
      env: { MAX_WEBSOCKETS: '3', MAX_WEBSOCKETS_PER_USER: '2', MAX_OPERATIONS_PER_WEBSOCKET: '2' },
    });
  });
  afterAll(() => app.close());

  const sockets = () => metric(app, 'graphql_ws_sockets');
  const settled = async (client: LiveClient) =>
    waitFor('the socket to be acknowledged or closed', async () => client.acknowledged() || client.closed() !== null);

  it('closes a socket over MAX_WEBSOCKETS_PER_USER, then one over MAX_WEBSOCKETS, with 4430 RATE_LIMITED, and serves the others', async () => {
    const [ann, bob, cat] = [
      await signUp(app, 'sockets-ann'),
      await signUp(app, 'sockets-bob'),
      await signUp(app, 'sockets-cat'),
    ];
    const annFirst = open(app.url, ann.token, null);
    const annSecond = open(app.url, ann.token, null);
    await Promise.all([settled(annFirst), settled(annSecond)]);
    const annThird = open(app.url, ann.token, null);
    await settled(annThird);
    expect(annThird.closed()).toEqual({
      code: 4430,
      reason: 'RATE_LIMITED: at most 2 WebSockets per user in one process (MAX_WEBSOCKETS_PER_USER); close one first',
    });
    expect([annFirst.acknowledged(), annSecond.acknowledged()]).toEqual([true, true]);

    const bobs = open(app.url, bob.token, null);
    await settled(bobs);
    expect(bobs.acknowledged()).toBe(true);
    const cats = open(app.url, cat.token, null);
    await settled(cats);
    expect(cats.closed()).toEqual({
      code: 4430,
      reason: 'RATE_LIMITED: this process holds its most WebSockets (MAX_WEBSOCKETS: 3); retry shortly',
    });
    expect(await metric(app, 'graphql_ws_refusals_total{limit="maxWebSocketsPerUser"}')).toBe(1);
    expect(await metric(app, 'graphql_ws_refusals_total{limit="maxWebSockets"}')).toBe(1);

    // A socket that closes frees its place.
    await annSecond.dispose();
    await waitFor('the server to see the close', async () => (await sockets()) === 2);
    const catAgain = open(app.url, cat.token, null);
    await settled(catAgain);
    expect(catAgain.acknowledged()).toBe(true);
    expect((await catAgain.run('{ viewer { nickName } }')).data).toEqual({ viewer: { nickName: 'sockets-cat' } });
  });

  it('counts queries and mutations in flight on a socket against MAX_OPERATIONS_PER_WEBSOCKET, as it counts subscriptions', async () => {
    const [user, author] = [await signUp(app, 'operations'), await signUp(app, 'operations-author')];
    const client = open(app.url, user.token); // a subscription: one operation running
    await live(app, user);
    const second = client.subscribeAgain(); // two
    const refusal = expect.objectContaining({
      message:
        'at most 2 operations may run at once on one WebSocket (MAX_OPERATIONS_PER_WEBSOCKET); wait for one to finish',
      extensions: expect.objectContaining({ code: 'RATE_LIMITED', limit: 'maxOperationsPerWebSocket' }),
    });
    expect((await client.run('{ viewer { nickName } }')).errors).toEqual([refusal]);
    expect((await client.run('mutation($u: ID!) { follow(userId: $u) { id } }', { u: author.id })).errors).toEqual([
      refusal,
    ]);
    expect(await client.subscribeAgain().errors).toEqual([refusal]);
    const followed = ok(
      await app.gql('query($u: ID!) { user(id: $u) { isFollowedByViewer } }', { u: author.id }, user.token),
    );
    expect(followed.user.isFollowedByViewer).toBe(false); // the refused mutation did not run

    // One finishes: the next operation runs.
    second.stop();
    let answer: Awaited<ReturnType<LiveClient['run']>> = {};
    await waitFor('a free place on the socket', async () => {
      answer = await client.run('mutation($u: ID!) { follow(userId: $u) { isFollowedByViewer } }', { u: author.id });
      return answer.errors === undefined;
    });
    expect(answer.data).toEqual({ follow: { isFollowedByViewer: true } });
    expect(client.closed()).toBeNull();
  });
});

describe('mutations over a WebSocket', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('live_ws_rate_limits', {
      env: { RATE_LIMITS: 'on', RATE_LIMIT_PUBLISH_PER_USER: '2/3600' },
    });
  });
  afterAll(() => app.close());

  it('count against the same rate limits as over HTTP', async () => {
    const author = await signUp(app, 'socket-author');
    const client = open(app.url, author.token, null);
    const publishing = 'mutation($t: String!) { publishBlog(input: { title: $t, content: "over a socket" }) { id } }';
    expect((await client.run(publishing, { t: 'one' })).errors).toBeUndefined();
    await publish(app, author, 'two over HTTP');
    const refused = await client.run(publishing, { t: 'three' });
    expect(refused.errors).toEqual([
      expect.objectContaining({
        extensions: expect.objectContaining({
          code: 'RATE_LIMITED',
          limit: 'publishPerUser',
          retryAfterSeconds: expect.any(Number),
        }),
      }),
    ]);
    const count = await app.query<{ n: number }>('SELECT COUNT(*) AS n FROM tb_blog WHERE user_id = ?', [dbId(author)]);
    expect(Number(count[0].n)).toBe(2);
  });
});

describe('a client that stops reading', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp('live_slow_reader', {
      env: { WEBSOCKET_MAX_BUFFERED_BYTES: '65536', MAX_OPERATIONS_PER_WEBSOCKET: '1000' },
    });
  });
  afterAll(() => app.close());

  it('has its socket closed with 4413 once its unsent answers pass WEBSOCKET_MAX_BUFFERED_BYTES, and the server goes on serving', async () => {
    const user = await signUp(app, 'slow');
    const socket = new WebSocket(app.url.replace(/^http/, 'ws'), 'graphql-transport-ws');
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise((resolve) => socket.once('open', resolve));
    socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${user.token}` } }));
    await new Promise((resolve) => socket.once('message', resolve)); // connection_ack
    // The client stops reading; its requests still go out. Each answer is about 100 kB.
    (socket as unknown as { _socket: { pause(): void } })._socket.pause();
    const query = getIntrospectionQuery();
    for (let id = 0; id < 300; id += 1)
      socket.send(JSON.stringify({ id: String(id), type: 'subscribe', payload: { query } }));
    await waitFor(
      'the server to give up on the socket',
      async () => (await metric(app, 'graphql_ws_refusals_total{limit="webSocketMaxBufferedBytes"}')) === 1,
      30_000,
    );

    let answers = 0;
    socket.on('message', () => (answers += 1));
    (socket as unknown as { _socket: { resume(): void } })._socket.resume();
    expect(await closed).toEqual({
      code: 4413,
      reason: 'the client is not reading: over 65536 bytes wait to be sent (WEBSOCKET_MAX_BUFFERED_BYTES); reconnect',
    });
    expect(answers).toBeLessThan(300);
    const other = await signUp(app, 'unaffected');
    expect(ok(await app.gql('{ viewer { nickName } }', {}, other.token))).toEqual({
      viewer: { nickName: 'unaffected' },
    });
  });
});

// Needs Redis between the processes: the embedded mode is one process by design.
if (!EMBEDDED)
  // hybrid with BIG_V_FOLLOWERS=1: an author with a follower is big, their blogs go on the author channel.
  describe.each(['push', 'hybrid'])('across API processes, FEED_MODEL=%s', (model) => {
    let app: TestApp;
    let other: WorkerProcess;
    let otherUrl: string;
    beforeAll(async () => {
      app = await startTestApp(`live_processes_${model}`, { env: { FEED_MODEL: model, BIG_V_FOLLOWERS: '1' } });
      const port = await freePort();
      other = startNodeProcess('server.js', {
        ...app.env,
        PORT: String(port),
        NODE_ENV: 'production',
        FANOUT_WORKERS: '0',
      });
      otherUrl = `http://127.0.0.1:${port}/graphql`;
      await waitFor('the second API process', async () => other.output().includes('listening'), 30_000);
    });
    afterAll(async () => {
      await other.kill('SIGTERM');
      await app.close();
    });

    it("delivers to a subscriber on another process than the publisher's and the fan-out's", async () => {
      const [reader, author] = [await signUp(app, 'far'), await signUp(app, 'near')];
      await follow(app, reader, author);
      const client = open(otherUrl, reader.token);
      // In hybrid the author's blog (one follower: big) comes on the author's channel: wait until
      // the other process listens there too, not only on the reader's.
      await live(app, reader, model === 'hybrid' ? [author] : []);
      const id = await publish(app, author, 'across processes');
      const [edge] = await client.received(1);
      expect(edge.node.id).toBe(id);
    });

    it('a follow made on one process reaches the subscription held by another while it runs', async () => {
      const [reader, author] = [await signUp(app, 'late'), await signUp(app, 'followed-late')];
      const client = open(otherUrl, reader.token);
      await live(app, reader);
      await follow(app, reader, author); // on this process; the subscription is on the other
      // In hybrid the other process now listens on the author's channel (its mark is in Redis).
      if (model === 'hybrid') await live(app, reader, [author]);
      const id = await publish(app, author, 'after a follow elsewhere');
      const [edge] = await client.received(1);
      expect(edge.node.id).toBe(id);
    });
  });
