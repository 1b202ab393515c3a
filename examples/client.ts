/**
 * An example client using the generated types (`npm run codegen`), against a running server:
 *   API_URL=http://localhost:4000/graphql node dist/examples/client.js
 * It signs up two users, finds one by the start of its nickName and makes the other follow it,
 * publishes a few blogs, pages through the follower's feed, 2 at a time, lists the author's
 * followers, counts and loads the posts newer than the top of the feed ("new posts"), and
 * watches the feed live (a graphql-ws subscription) resumed from the newest blog it holds: a
 * blog published while it was away comes first, then one published live. Every variable and
 * result below is typed from the schema.
 *
 * With DOCUMENT_IDS=on it sends each operation's id (the client preset's `__meta__.hash`)
 * instead of its text, as a production client does against a server run with
 * PERSISTED_DOCUMENTS=only and the manifest examples/generated/persisted-documents.json.
 */
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import {
  FollowDocument,
  FollowersDocument,
  FollowFeedDocument,
  FollowFeedQuery,
  NewerPostsDocument,
  NewPostCountDocument,
  NewPostsDocument,
  NewPostsSubscription,
  PublishBlogDocument,
  SearchUsersDocument,
  SignUpDocument,
} from './generated/graphql';

const API_URL = process.env.API_URL ?? 'http://localhost:4000/graphql';
const DOCUMENT_IDS = process.env.DOCUMENT_IDS === 'on';

/** The trusted document's id that codegen's client preset put in the document (persisted-documents.json). */
function documentId(document: TypedDocumentNode<unknown, never>): string {
  const hash = (document as { __meta__?: { hash?: string } }).__meta__?.hash;
  if (!hash) throw new Error('the document carries no id: run npm run codegen');
  return hash;
}

/** What a request sends for `document`: its id, or its text. */
function operation(document: TypedDocumentNode<unknown, never>): { documentId: string } | { query: string } {
  return DOCUMENT_IDS ? { documentId: documentId(document) } : { query: print(document) };
}

/** A minimal typed client: the document fixes the types of `variables` and of the result. */
async function request<Result, Variables>(
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
  token?: string,
): Promise<Result> {
  const response = await fetch(API_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ ...operation(document), variables }),
  });
  const body = (await response.json()) as {
    data?: Result;
    errors?: Array<{ message: string; extensions?: { code?: string } }>;
  };
  if (body.errors?.length || !body.data) {
    throw new Error(`GraphQL error: ${body.errors?.map((e) => `${e.extensions?.code}: ${e.message}`).join('; ')}`);
  }
  return body.data;
}

async function main(): Promise<void> {
  const suffix = Date.now().toString(36);
  const author = (await request(SignUpDocument, { nickName: `author-${suffix}`, password: 'example-password' })).signUp;
  const reader = (await request(SignUpDocument, { nickName: `reader-${suffix}`, password: 'example-password' })).signUp;
  // Finding the author by nickName typed in another case (the search folds case and width): the
  // exact match comes first, before longer nickNames that start the same.
  const typed = `AUTHOR-${suffix.toUpperCase()}`;
  const found = (await request(SearchUsersDocument, { search: typed, first: 5 }, reader.token)).users.edges.map(
    (edge) => edge.node,
  );
  console.log(`search "${typed}": ${found.map((user) => user.nickName).join(', ')}`);
  const followed = await request(FollowDocument, { userId: found[0].id }, reader.token);
  console.log(
    `${followed.followUser.user.nickName} has ${followed.followUser.user.followerCount} follower(s); the reader follows ${followed.followUser.viewer.followingCount}`,
  );
  for (let i = 1; i <= 5; i += 1) {
    const edge = (
      await request(
        PublishBlogDocument,
        { input: { title: `Example post ${i}`, content: 'Written by the example client.' } },
        author.token,
      )
    ).publishBlogEdge;
    if (!edge.cursor) throw new Error('a published blog came without its feed cursor');
  }
  // Fan-out is asynchronous (and a new follow's blogs come in at once): the feed may take a moment.
  await new Promise((resolve) => setTimeout(resolve, 500));
  let after: string | null | undefined = null;
  let top: string | null | undefined = null;
  let page = 1;
  do {
    const feed: FollowFeedQuery['followFeed'] = (await request(FollowFeedDocument, { first: 2, after }, reader.token))
      .followFeed;
    const titles = feed.edges.map((edge) => `${edge.node.title} by ${edge.node.author.nickName}`);
    console.log(`page ${page}: ${titles.join(', ') || '(empty)'}`);
    top ??= feed.pageInfo.startCursor;
    after = feed.pageInfo.hasNextPage ? feed.pageInfo.endCursor : null;
    page += 1;
  } while (after);
  const listed = (await request(FollowersDocument, { userId: author.user.id, first: 10 })).user;
  console.log(
    `followers of ${listed?.nickName}: ${listed?.followers.edges.map((edge) => edge.node.nickName).join(', ')}`,
  );
  if (!top) throw new Error('the feed came back empty');

  // "New posts": one more blog; the count for a banner, then the page above the top the client shows.
  await request(
    PublishBlogDocument,
    { input: { title: 'Example post 6', content: 'Newer than the top.' } },
    author.token,
  );
  const count = (await request(NewPostCountDocument, { before: top }, reader.token)).followFeedNewCount;
  console.log(`new posts: ${count}`);
  const newer = (await request(NewerPostsDocument, { last: 10, before: top }, reader.token)).followFeed;
  console.log(`newer: ${newer.edges.map((edge) => `${edge.node.title} by ${edge.node.author.nickName}`).join(', ')}`);
  const newest = newer.pageInfo.startCursor ?? top;

  // While the client is away one more blog comes; it resumes the live feed from its newest cursor.
  await request(
    PublishBlogDocument,
    { input: { title: 'Example post 7', content: 'Published while away.' } },
    author.token,
  );

  // The live feed: the same address over WebSocket, the token in connection_init.
  const live = createClient({
    url: API_URL.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${reader.token}` },
  });
  const connected = new Promise<void>((resolve) => live.on('connected', () => resolve()));
  const edges: Array<NewPostsSubscription['followFeedAdded']> = [];
  const arrived = new Promise<void>((resolve, reject) => {
    live.subscribe<NewPostsSubscription>(
      // Over WebSocket a trusted document's id goes in the extensions, with an empty query.
      DOCUMENT_IDS
        ? {
            query: '',
            variables: { after: newest },
            extensions: { persistedQuery: { version: 1, sha256Hash: documentId(NewPostsDocument) } },
          }
        : { query: print(NewPostsDocument), variables: { after: newest } },
      {
        next: (result) => {
          if (result.data) edges.push(result.data.followFeedAdded);
          if (edges.length === 2) resolve();
        },
        error: reject,
        complete: () => {},
      },
    );
  });
  // The server starts listening for the reader a moment after it acknowledged the socket.
  await connected;
  await new Promise((resolve) => setTimeout(resolve, 500));
  await request(PublishBlogDocument, { input: { title: 'Example post 8', content: 'Seen live.' } }, author.token);
  await arrived;
  console.log(`resumed: ${edges[0].node.title} by ${edges[0].node.author.nickName}`);
  console.log(`live: ${edges[1].node.title} by ${edges[1].node.author.nickName}`);
  await live.dispose();
  console.log('done');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
