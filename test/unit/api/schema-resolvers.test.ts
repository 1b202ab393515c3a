/**
 * Plain fields resolve without a wrapper: every object type is declared with
 * `simpleResolvers: true` (src/graphql/schema.ts says why), so a field that no @FieldResolver
 * answers reads its property with graphql-js's default resolver, and only the resolver methods
 * are type-graphql's. A type added without the option fails here.
 */
import { getMetadataStorage } from 'type-graphql';
import { isIntrospectionType, isObjectType } from 'graphql';
import { buildFeedSchema } from '../../../src/graphql/schema';

it('wraps no field but those that a resolver method answers', () => {
  const schema = buildFeedSchema();
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]);
  const answered = new Set(
    getMetadataStorage().fieldResolvers.map((resolver) => `${resolver.getObjectType!().name}.${resolver.schemaName}`),
  );
  const wrapped: string[] = [];
  let plain = 0;
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || isIntrospectionType(type) || roots.has(type)) continue;
    for (const field of Object.values(type.getFields())) {
      const name = `${type.name}.${field.name}`;
      if (answered.has(name)) continue;
      plain += 1;
      if (field.resolve !== undefined) wrapped.push(name);
    }
  }
  expect(wrapped).toEqual([]);
  // Blog.title, User.nickName, PageInfo.hasNextPage and the like: the check saw them.
  expect(plain).toBeGreaterThan(20);
});
