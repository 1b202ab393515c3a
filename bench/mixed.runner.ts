/**
 * The mixed-workload load generator, in its own process: `clients` concurrent clients, each
 * looping for `durationSeconds` over weighted operations (feed pages, likes, follows,
 * publishes) as one of the seeded users. Prints one JSON line: per operation the count, the
 * errors (HTTP >= 400 or a GraphQL error) and the latencies p50/p99 in ms.
 * Input: a JSON file path in argv[2].
 */
import { readFileSync } from 'node:fs';

interface MixedSpec {
  url: string;
  tokens: string[];
  /** Global ids of users to follow (authors, never the clients themselves) and blogs to like. */
  userIds: string[];
  blogIds: string[];
  clients: number;
  durationSeconds: number;
}

type Operation = 'feed' | 'like' | 'follow' | 'publish';
const WEIGHTS: Array<[Operation, number]> = [
  ['feed', 90],
  ['like', 5],
  ['follow', 4],
  ['publish', 1],
];

function pick(random: number): Operation {
  let acc = 0;
  for (const [operation, weight] of WEIGHTS) {
    acc += weight;
    if (random * 100 < acc) return operation;
  }
  return 'feed';
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main(): Promise<void> {
  const spec = JSON.parse(readFileSync(process.argv[2], 'utf8')) as MixedSpec;
  const any = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)];
  const bodies: Record<Operation, () => object> = {
    feed: () => ({
      query: `query($after: String) { followFeed(first: 20, after: $after) {
        edges { cursor node { id title likeCount isLiked author { nickName } } } pageInfo { hasNextPage endCursor } } }`,
      variables: { after: null },
    }),
    like: () => ({
      query: 'mutation($b: ID!, $l: Boolean!) { likeBlog(blogId: $b, liked: $l) { likeCount } }',
      variables: { b: any(spec.blogIds), l: Math.random() < 0.6 },
    }),
    follow: () => ({
      query: 'mutation($u: ID!, $f: Boolean!) { follow(userId: $u, follow: $f) { followerCount } }',
      variables: { u: any(spec.userIds), f: Math.random() < 0.6 },
    }),
    publish: () => ({
      query: 'mutation($t: String!) { publishBlog(input: { title: $t, content: "load test" }) { id } }',
      variables: { t: `load ${Date.now()}` },
    }),
  };
  const stats = new Map<Operation, { latencies: number[]; errors: number; firstError?: string }>(
    WEIGHTS.map(([operation]) => [operation, { latencies: [], errors: 0 }]),
  );
  const deadline = Date.now() + spec.durationSeconds * 1000;
  const client = async (index: number) => {
    const token = spec.tokens[index % spec.tokens.length];
    while (Date.now() < deadline) {
      const operation = pick(Math.random());
      const body = bodies[operation]();
      const me = stats.get(operation)!;
      const started = performance.now();
      try {
        const response = await fetch(spec.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        });
        const text = await response.text();
        if (response.status >= 400 || text.includes('"errors"')) {
          me.errors += 1;
          me.firstError ??= text.slice(0, 300);
        }
      } catch (error) {
        me.errors += 1;
        me.firstError ??= String(error);
      }
      me.latencies.push(performance.now() - started);
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: spec.clients }, (_, i) => client(i)));
  const seconds = (Date.now() - started) / 1000;
  const result: Record<string, unknown> = { seconds };
  for (const [operation, { latencies, errors, firstError }] of stats) {
    latencies.sort((a, b) => a - b);
    result[operation] = {
      count: latencies.length,
      errors,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      firstError,
    };
  }
  console.log(JSON.stringify(result));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
