/**
 * An example client using the generated types (`npm run codegen`), against a running server:
 *   API_URL=http://localhost:4000/graphql node dist/examples/client.js
 * It signs up two users, makes one follow the other, publishes a few blogs, pages through the
 * follower's feed, 2 at a time, lists the author's followers, and watches the follower's feed
 * live (a graphql-ws subscription) while the author publishes once more. Every variable and
 * result below is typed from the schema.
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
  NewPostsDocument,
  NewPostsSubscription,
  PublishBlogDocument,
  SignUpDocument,
} from './generated/graphql';

const API_URL = process.env.API_URL ?? 'http://localhost:4000/graphql';

/** A minimal typed client: the document fixes the types of `variables` and of the result. */
async function request<Result, Variables>(document: TypedDocumentNode<Result, Variables>, variables: Variables, token?: string): Promise<Result> {
  const response = await fetch(API_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query: print(document), variables }),
  });
  const body = (await response.json()) as { data?: Result; errors?: Array<{ message: string; extensions?: { code?: string } }> };
  if (body.errors?.length || !body.data) {
    throw new Error(`GraphQL error: ${body.errors?.map((e) => `${e.extensions?.code}: ${e.message}`).join('; ')}`);
  }
  return body.data;
}

async function main(): Promise<void> {
  const suffix = Date.now().toString(36);
  const author = (await request(SignUpDocument, { nickName: `author-${suffix}`, password: 'example-password' })).signUp;
  const reader = (await request(SignUpDocument, { nickName: `reader-${suffix}`, password: 'example-password' })).signUp;
  await request(FollowDocument, { userId: author.user.id }, reader.token);
  for (let i = 1; i <= 5; i += 1) {
    await request(PublishBlogDocument, { input: { title: `Example post ${i}`, content: 'Written by the example client.' } }, author.token);
  }
  // Fan-out is asynchronous (and a new follow's blogs come in at once): the feed may take a moment.
  await new Promise((resolve) => setTimeout(resolve, 500));
  let after: string | null | undefined = null;
  let page = 1;
  do {
    const feed: FollowFeedQuery['followFeed'] = (await request(FollowFeedDocument, { first: 2, after }, reader.token)).followFeed;
    const titles = feed.edges.map((edge) => `${edge.node.title} by ${edge.node.author.nickName}`);
    console.log(`page ${page}: ${titles.join(', ') || '(empty)'}`);
    after = feed.pageInfo.hasNextPage ? feed.pageInfo.endCursor : null;
    page += 1;
  } while (after);
  const followed = (await request(FollowersDocument, { userId: author.user.id, first: 10 })).user;
  console.log(`followers of ${followed?.nickName}: ${followed?.followers.edges.map((edge) => edge.node.nickName).join(', ')}`);

  // The live feed: the same address over WebSocket, the token in connection_init.
  const live = createClient({ url: API_URL.replace(/^http/, 'ws'), webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${reader.token}` } });
  const connected = new Promise<void>((resolve) => live.on('connected', () => resolve()));
  const arrived = new Promise<NewPostsSubscription['followFeedAdded']>((resolve, reject) => {
    live.subscribe<NewPostsSubscription>(
      { query: print(NewPostsDocument) },
      { next: (result) => result.data && resolve(result.data.followFeedAdded), error: reject, complete: () => {} },
    );
  });
  // The server starts listening for the reader a moment after it acknowledged the socket.
  await connected;
  await new Promise((resolve) => setTimeout(resolve, 500));
  await request(PublishBlogDocument, { input: { title: 'Example post 6', content: 'Seen live.' } }, author.token);
  const edge = await arrived;
  console.log(`live: ${edge.node.title} by ${edge.node.author.nickName}`);
  await live.dispose();
  console.log('done');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
