/** Builds the GraphQL schema from the resolver classes (one per type or domain). */
import 'reflect-metadata';
import { GraphQLSchema, printSchema } from 'graphql';
import { buildSchemaSync, PubSub } from 'type-graphql';
import { AuthResolver } from '../auth/auth.resolver';
import { BlogResolver } from '../blog/blog.resolver';
import { FeedResolver } from '../feed/feed.resolver';
import { FollowResolver } from '../follow/follow.resolver';
import { LikeResolver } from '../like/like.resolver';
import { UserResolver } from '../user/user.resolver';
import { NodeResolver } from './node.resolver';

let built: GraphQLSchema | undefined;

/**
 * type-graphql wants a PubSub as soon as the schema has a subscription, even when every
 * subscription brings its own source (`subscribe`), as ours does (the live feed, feed.live.ts).
 * This one is there to be refused: a topic-based subscription added by mistake fails loudly.
 */
const NO_TOPICS: PubSub = {
  publish(routingKey) {
    throw new Error(`no topic-based pub/sub here (topic "${routingKey}"): subscriptions give their own source`);
  },
  subscribe(routingKey) {
    throw new Error(`no topic-based pub/sub here (topic "${routingKey}"): subscriptions give their own source`);
  },
};

/** The schema; built once per process (type-graphql's metadata is global anyway). */
export function buildFeedSchema(): GraphQLSchema {
  built ??= buildSchemaSync({
    resolvers: [NodeResolver, UserResolver, BlogResolver, FeedResolver, AuthResolver, FollowResolver, LikeResolver],
    // Input rules live in the services (they name the field and what was received);
    // class-validator would only add a second, vaguer error for the same input.
    validate: false,
    pubSub: NO_TOPICS,
  });
  return built;
}

/** The schema as SDL, in declaration order (deterministic, and close to the contract's order). */
export function printFeedSchema(): string {
  return printSchema(buildFeedSchema()) + '\n';
}
