/**
 * The new operations through a real client: Apollo Client 4 with its normalized cache, sending
 * only the ids of the example client's trusted documents (its persisted-query link, ids from
 * codegen's client preset) to a server run with PERSISTED_DOCUMENTS=only. Search pages, a follow
 * whose answer updates both users in the cache, and a publish whose edge goes to the top of a
 * cached connection with the cursor the server itself gives that blog. Runs in the embedded pass too.
 */
import { join } from 'node:path';
import { ApolloClient, ApolloLink, gql, HttpLink, InMemoryCache, type TypedDocumentNode } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { createHash } from 'node:crypto';
import { print } from 'graphql';
import { relayStylePagination } from '@apollo/client/utilities';
import {
  FollowDocument,
  FollowFeedDocument,
  NewerPostsDocument,
  NewPostCountDocument,
  PublishBlogDocument,
  SearchUsersDocument,
  SignUpDocument,
  UserBlogsDocument,
} from '../../../examples/generated/graphql';
import { startTestApp, TestApp } from '../../support/harness';

const MANIFEST = join(__dirname, '..', '..', '..', 'examples', 'generated', 'persisted-documents.json');

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp('apollo_client', {
    env: { FANOUT_WORKERS: '1', PERSISTED_DOCUMENTS: 'only', PERSISTED_DOCUMENTS_MANIFEST: MANIFEST },
  });
});
afterAll(() => app.close());

/** The id codegen's client preset put in a document (`__meta__.hash`), else the SHA-256 of its text (a document of no manifest). */
function idOf(document: TypedDocumentNode<unknown, never> | ReturnType<typeof gql>): string {
  const hash = (document as { __meta__?: { hash?: string } }).__meta__?.hash;
  return hash ?? createHash('sha256').update(print(document)).digest('hex');
}

/**
 * A client as a production frontend builds one: persisted-query link (ids only), HTTP, a
 * normalized cache; followFeed is one list that pages merge into both ways (relayStylePagination).
 */
function client(token?: string): ApolloClient {
  const persisted = new PersistedQueryLink({ generateHash: (document) => idOf(document) });
  const http = new HttpLink({ uri: app.url, headers: token ? { authorization: `Bearer ${token}` } : {} });
  const cache = new InMemoryCache({ typePolicies: { Query: { fields: { followFeed: relayStylePagination() } } } });
  return new ApolloClient({ cache, link: ApolloLink.from([persisted, http]) });
}

async function signUp(nickName: string): Promise<{ id: string; token: string }> {
  const { data } = await client().mutate({
    mutation: SignUpDocument,
    variables: { nickName, password: 'password-123' },
  });
  return { id: data!.signUp.user.id, token: data!.signUp.token };
}

it('searches users page by page, the exact match first', async () => {
  for (const name of ['al-alice', 'Al', 'al-albert', 'alfa']) await signUp(name);
  const reader = client();
  const first = await reader.query({ query: SearchUsersDocument, variables: { search: 'ＡＬ', first: 2 } });
  expect(first.data!.users.edges.map((edge) => edge.node.nickName)).toEqual(['Al', 'alfa']);
  expect(first.data!.users.pageInfo.hasNextPage).toBe(true);
  const rest = await reader.query({
    query: SearchUsersDocument,
    variables: { search: 'ＡＬ', first: 2, after: first.data!.users.pageInfo.endCursor },
  });
  expect(rest.data!.users.edges.map((edge) => edge.node.nickName)).toEqual(['al-alice', 'al-albert']);
  expect(rest.data!.users.pageInfo.hasNextPage).toBe(false);
});

it('follows, and the one answer updates the followed user and the viewer in the normalized cache', async () => {
  const star = await signUp('ac-star');
  const fan = await signUp('ac-fan');
  const fanClient = client(fan.token);
  const found = await fanClient.query({ query: SearchUsersDocument, variables: { search: 'ac-star' } });
  expect(found.data!.users.edges[0].node).toMatchObject({ id: star.id, followerCount: 0, isFollowedByViewer: false });

  await fanClient.mutate({ mutation: FollowDocument, variables: { userId: star.id } });
  const inCache = (id: string) =>
    fanClient.cache.readFragment({
      id: fanClient.cache.identify({ __typename: 'User', id }),
      fragment: gql`
        fragment Following on User {
          followingCount
        }
      `,
    });
  // The search result in the cache now says so too, without asking the server again.
  const cached = await fanClient.query({
    query: SearchUsersDocument,
    variables: { search: 'ac-star' },
    fetchPolicy: 'cache-only',
  });
  expect(cached.data!.users.edges[0].node).toMatchObject({ followerCount: 1, isFollowedByViewer: true });
  expect(inCache(fan.id)).toMatchObject({ followingCount: 1 });
});

it('publishes, and the answered edge goes to the top of the cached connection with the cursor the server gives it', async () => {
  const author = await signUp('ac-author');
  const reader = await signUp('ac-reader');
  const authorClient = client(author.token);
  await authorClient.mutate({
    mutation: PublishBlogDocument,
    variables: { input: { title: 'first', content: 'one' } },
  });
  await authorClient.query({ query: UserBlogsDocument, variables: { userId: author.id, first: 10 } });

  const { data } = await authorClient.mutate({
    mutation: PublishBlogDocument,
    variables: { input: { title: 'second', content: 'two' } },
    // What Relay's @prependEdge does: the new edge first in the cached User.blogs connection.
    update(cache, result) {
      const edge = result.data!.publishBlogEdge;
      cache.modify({
        id: cache.identify({ __typename: 'User', id: author.id }),
        fields: {
          blogs(existing, { toReference }) {
            const connection = existing as { edges: unknown[] };
            return {
              ...connection,
              edges: [
                {
                  __typename: 'BlogEdge',
                  cursor: edge.cursor,
                  node: toReference({ __typename: 'Blog', id: edge.node.id }),
                },
                ...connection.edges,
              ],
            };
          },
        },
      });
    },
  });
  const edge = data!.publishBlogEdge;
  const fromCache = await authorClient.query({
    query: UserBlogsDocument,
    variables: { userId: author.id, first: 10 },
    fetchPolicy: 'cache-only',
  });
  const fromServer = await authorClient.query({
    query: UserBlogsDocument,
    variables: { userId: author.id, first: 10 },
    fetchPolicy: 'network-only',
  });
  expect(fromCache.data!.user!.blogs.edges.map((e) => [e.cursor, e.node.title])).toEqual([
    [edge.cursor, 'second'],
    [expect.any(String), 'first'],
  ]);
  expect(fromServer.data!.user!.blogs.edges.map((e) => [e.cursor, e.node.title])).toEqual(
    fromCache.data!.user!.blogs.edges.map((e) => [e.cursor, e.node.title]),
  );

  // The same cursor places the blog in a follower's feed: the page after it holds the older one.
  const readerClient = client(reader.token);
  await readerClient.mutate({ mutation: FollowDocument, variables: { userId: author.id } });
  const after = await readerClient.query({ query: FollowFeedDocument, variables: { first: 10, after: edge.cursor } });
  expect(after.data!.followFeed.edges.map((e) => e.node.title)).toEqual(['first']);
});

it('pages the feed down and up with relayStylePagination: new posts merge at the top, counted first, the cache equal to the server', async () => {
  const author = await signUp('ac-pager');
  const reader = await signUp('ac-pager-reader');
  const authorClient = client(author.token);
  const readerClient = client(reader.token);
  await readerClient.mutate({ mutation: FollowDocument, variables: { userId: author.id } });
  for (let i = 1; i <= 5; i += 1)
    await authorClient.mutate({
      mutation: PublishBlogDocument,
      variables: { input: { title: `old ${i}`, content: 'x' } },
    });
  await app.services.fanout?.idle();
  await app.services.feed.idle();

  // Down: two pages merged into one list.
  const first = await readerClient.query({
    query: FollowFeedDocument,
    variables: { first: 3 },
    fetchPolicy: 'network-only',
  });
  expect(first.data!.followFeed.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
  await readerClient.query({
    query: FollowFeedDocument,
    variables: { first: 3, after: first.data!.followFeed.pageInfo.endCursor },
    fetchPolicy: 'network-only',
  });
  const down = await readerClient.query({
    query: FollowFeedDocument,
    variables: { first: 3 },
    fetchPolicy: 'cache-only',
  });
  expect(down.data!.followFeed.edges.map((edge) => edge.node.title)).toEqual([
    'old 5',
    'old 4',
    'old 3',
    'old 2',
    'old 1',
  ]);
  expect(down.data!.followFeed.pageInfo.hasNextPage).toBe(false);

  // Three new posts: the banner's count, then pages up from the top the client holds.
  for (let i = 1; i <= 3; i += 1)
    await authorClient.mutate({
      mutation: PublishBlogDocument,
      variables: { input: { title: `new ${i}`, content: 'x' } },
    });
  const top = down.data!.followFeed.pageInfo.startCursor!;
  const count = await readerClient.query({
    query: NewPostCountDocument,
    variables: { before: top },
    fetchPolicy: 'network-only',
  });
  expect(count.data!.followFeedNewCount).toBe(3);
  // The answer is read back through the cache's merged list: the page up went to its top.
  const up = await readerClient.query({
    query: NewerPostsDocument,
    variables: { last: 2, before: top },
    fetchPolicy: 'network-only',
  });
  expect(up.data!.followFeed.edges.map((edge) => edge.node.title)).toEqual([
    'new 2',
    'new 1',
    'old 5',
    'old 4',
    'old 3',
    'old 2',
    'old 1',
  ]);
  expect(up.data!.followFeed.pageInfo.hasPreviousPage).toBe(true);
  const merged = await readerClient.query({
    query: FollowFeedDocument,
    variables: { first: 3 },
    fetchPolicy: 'cache-only',
  });
  expect(merged.data!.followFeed.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
  const topAgain = merged.data!.followFeed.pageInfo.startCursor!;
  const last = await readerClient.query({
    query: NewerPostsDocument,
    variables: { last: 2, before: topAgain },
    fetchPolicy: 'network-only',
  });
  expect(last.data!.followFeed.edges.map((edge) => edge.node.title).slice(0, 3)).toEqual(['new 3', 'new 2', 'new 1']);
  expect(last.data!.followFeed.pageInfo.hasPreviousPage).toBe(false);

  // The cached list, grown both ways, is the feed as the server scrolls it, cursors included.
  const cached = await readerClient.query({
    query: FollowFeedDocument,
    variables: { first: 3 },
    fetchPolicy: 'cache-only',
  });
  const server = await client(reader.token).query({
    query: FollowFeedDocument,
    variables: { first: 20 },
    fetchPolicy: 'network-only',
  });
  expect(cached.data!.followFeed.edges.map((edge) => [edge.cursor, edge.node.title])).toEqual(
    server.data!.followFeed.edges.map((edge) => [edge.cursor, edge.node.title]),
  );
  expect(cached.data!.followFeed.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: false });
  const noneNewer = await readerClient.query({
    query: NewPostCountDocument,
    variables: { before: cached.data!.followFeed.pageInfo.startCursor! },
    fetchPolicy: 'network-only',
  });
  expect(noneNewer.data!.followFeedNewCount).toBe(0);
});

it('is refused a document the server was not built with, and sends no other', async () => {
  const stranger = client();
  const unknown = gql`
    query Unknown {
      viewer {
        id
      }
    }
  `;
  const refused = await stranger.query({ query: unknown, errorPolicy: 'all' }).catch((error: unknown) => ({ error }));
  expect(JSON.stringify(refused.error)).toMatch(/PERSISTED_QUERY_NOT_FOUND/);
  // Without its link, a client that sends the text is refused too.
  const plain = new ApolloClient({ cache: new InMemoryCache(), link: new HttpLink({ uri: app.url }) });
  const sentWhole = await plain
    .query({ query: SearchUsersDocument, variables: { search: 'al' } })
    .catch((error: unknown) => ({ error }));
  expect(JSON.stringify((sentWhole as { error: unknown }).error)).toMatch(/PERSISTED_QUERY_ID_REQUIRED/);
});
