/** Builds the GraphQL schema from the resolver classes (one per type or domain). */
import 'reflect-metadata';
import { GraphQLSchema, printSchema } from 'graphql';
import { buildSchemaSync, getMetadataStorage, PubSub } from 'type-graphql';
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

/**
 * Puts every resolver's arguments in the order its method declares them, which is the order
 * the contract gives them (`signUp(nickName, password)`, `follow(userId, follow)`).
 * TypeScript applies parameter decorators last parameter first, so type-graphql records a
 * method's @Arg parameters in reverse and would print `signUp(password, nickName)`; a stable
 * sort by parameter index undoes that for every method at once. (The fields of an @ArgsType
 * class keep their declaration order, which property decorators follow.)
 */
function argumentsInDeclarationOrder(): void {
  getMetadataStorage().params.sort((a, b) => a.index - b.index);
}

/** type-graphql gives the root types no description; clients read them in GraphiQL and generated code. */
function describeRootTypes(schema: GraphQLSchema): void {
  const query = schema.getQueryType();
  const mutation = schema.getMutationType();
  const subscription = schema.getSubscriptionType();
  if (query) query.description = 'What a client can read: the viewer, users, blogs and the follow feed';
  if (mutation)
    mutation.description =
      'What a client can change: accounts and sessions, follows, blogs and likes. Every field but signUp and login needs a viewer.';
  if (subscription)
    subscription.description =
      'Live updates over graphql-ws at the same address as queries (ws:// or wss://); they need a viewer';
}

/*
 * Every @ObjectType says `simpleResolvers: true`: a field that no @FieldResolver answers is read
 * by graphql-js's default resolver (`source[fieldName]`) instead of a type-graphql wrapper that
 * builds a resolver-data object for middlewares this API does not have. A feed page resolves
 * about 200 such fields; the wrappers were 3% of what a page allocated (a heap profile of
 * bench:feed). It holds because each field's property has the field's name and no property is a
 * method (test/unit/api/schema-resolvers.test.ts checks that no plain field is wrapped).
 */

/** The schema; built once per process (type-graphql's metadata is global anyway). */
export function buildFeedSchema(): GraphQLSchema {
  if (!built) argumentsInDeclarationOrder();
  built ??= buildSchemaSync({
    resolvers: [NodeResolver, UserResolver, BlogResolver, FeedResolver, AuthResolver, FollowResolver, LikeResolver],
    // Input rules live in the services (they name the field and what was received);
    // class-validator would only add a second, vaguer error for the same input.
    validate: false,
    pubSub: NO_TOPICS,
  });
  describeRootTypes(built);
  return built;
}

/** The schema as SDL, in declaration order (deterministic, and close to the contract's order). */
export function printFeedSchema(): string {
  return printSchema(buildFeedSchema()) + '\n';
}
