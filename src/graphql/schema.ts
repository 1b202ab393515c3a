/** Builds the GraphQL schema from the resolver classes (one per type or domain). */
import 'reflect-metadata';
import { GraphQLSchema, printSchema } from 'graphql';
import { buildSchemaSync } from 'type-graphql';
import { AuthResolver } from '../auth/auth.resolver';
import { BlogResolver } from '../blog/blog.resolver';
import { FeedResolver } from '../feed/feed.resolver';
import { FollowResolver } from '../follow/follow.resolver';
import { LikeResolver } from '../like/like.resolver';
import { UserResolver } from '../user/user.resolver';
import { NodeResolver } from './node.resolver';

let built: GraphQLSchema | undefined;

/** The schema; built once per process (type-graphql's metadata is global anyway). */
export function buildFeedSchema(): GraphQLSchema {
  built ??= buildSchemaSync({
    resolvers: [NodeResolver, UserResolver, BlogResolver, FeedResolver, AuthResolver, FollowResolver, LikeResolver],
    // Input rules live in the services (they name the field and what was received);
    // class-validator would only add a second, vaguer error for the same input.
    validate: false,
  });
  return built;
}

/** The schema as SDL, in declaration order (deterministic, and close to the contract's order). */
export function printFeedSchema(): string {
  return printSchema(buildFeedSchema()) + '\n';
}
