/**
 * The GraphiQL page the service serves at GET /graphql (for a browser). Bundled at build time by
 * scripts/build-graphiql.mjs with esbuild (graphiql 5 ships no browser bundle), served from
 * /graphiql/: no CDN. URL parameters prefill the editors: ?query=...&variables=...&headers=...
 */
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL } from 'graphiql';
import 'graphiql/style.css';
import { createRoot } from 'react-dom/client';

// Monaco runs its language services in web workers, bundled beside this file.
(globalThis as unknown as { MonacoEnvironment: unknown }).MonacoEnvironment = {
  getWorker(_workerId: string, label: string) {
    const name = label === 'json' ? 'json' : label === 'graphql' ? 'graphql' : 'editor';
    return new Worker(`/graphiql/${name}.worker.js`);
  },
};

const params = new URLSearchParams(window.location.search);
const DEFAULT_QUERY = `# The follow feed: sign up or log in below, copy the token into the Headers tab.
query Feed($after: String) {
  followFeed(first: 10, after: $after) {
    edges { cursor node { id title likeCount isLiked createdAt author { nickName } } }
    pageInfo { hasNextPage endCursor }
  }
}

mutation Login {
  login(nickName: "demo1", password: "demo-password") { token user { id nickName } }
}

# New blogs as they enter the feed, over graphql-ws (the Authorization header goes in connection_init).
subscription NewPosts {
  followFeedAdded { cursor node { id title createdAt author { nickName } } }
}
`;
// Queries and mutations over HTTP; subscriptions over graphql-ws at the same address, with the
// Headers tab sent as the connection_init payload.
const fetcher = createGraphiQLFetcher({
  url: `${window.location.origin}/graphql`,
  subscriptionUrl: `${window.location.protocol === 'https:' ? 'wss' : 'ws'}://${window.location.host}/graphql`,
});

createRoot(document.getElementById('graphiql')!).render(
  <GraphiQL
    fetcher={fetcher}
    defaultQuery={DEFAULT_QUERY}
    initialQuery={params.get('query') ?? undefined}
    initialVariables={params.get('variables') ?? undefined}
    initialHeaders={params.get('headers') ?? JSON.stringify({ Authorization: 'Bearer ' }, null, 2)}
    defaultHeaders={JSON.stringify({ Authorization: 'Bearer ' }, null, 2)}
    isHeadersEditorEnabled
    defaultEditorToolsVisibility="headers"
  />,
);
