/**
 * The committed schema file is what the server serves, and it holds the whole public contract.
 * When this fails after a resolver change, run `npm run schema` and commit schema/schema.graphql.
 */
import { buildSchema, findBreakingChanges } from 'graphql';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildFeedSchema, printFeedSchema } from '../../src/graphql/schema';

const read = (file: string) => readFileSync(join(__dirname, '..', '..', 'schema', file), 'utf8');

describe('schema', () => {
  it('schema/schema.graphql matches the schema built from the resolvers', () => {
    expect(read('schema.graphql')).toBe(printFeedSchema());
  });

  it('holds every type, field and argument of the public contract', () => {
    const contract = buildSchema(read('contract.graphql'));
    const breaks = findBreakingChanges(contract, buildFeedSchema())
      // A default value is documentation, not a type: the contract check of shared/tools ignores it too.
      .filter((change) => !/default value/i.test(change.description))
      .map((change) => `${change.type}: ${change.description}`);
    expect(breaks).toEqual([]);
  });
});
