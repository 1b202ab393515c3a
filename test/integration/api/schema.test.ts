/**
 * The committed schema file is what the server serves, and it holds the whole public contract.
 * When this fails after a resolver change, run `npm run schema` and commit schema/schema.graphql.
 */
import { buildSchema, findBreakingChanges } from 'graphql';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildFeedSchema, printFeedSchema } from '../../../src/graphql/schema';

const read = (file: string) => readFileSync(join(__dirname, '..', '..', '..', 'schema', file), 'utf8');

describe('schema', () => {
  it('schema/schema.graphql matches the schema built from the resolvers', () => {
    expect(read('schema.graphql')).toBe(printFeedSchema());
  });

  /** What the served schema lacks of a contract, as `TYPE: description` lines. */
  function breaksFrom(contractSdl: string): string[] {
    return (
      findBreakingChanges(buildSchema(contractSdl), buildFeedSchema())
        // A default value is documentation, not a type: the contract check of shared/tools ignores it too.
        .filter((change) => !/default value/i.test(change.description))
        .map((change) => `${change.type}: ${change.description}`)
    );
  }

  it('holds every type, field and argument of the public contract', () => {
    expect(breaksFrom(read('contract.graphql'))).toEqual([]);
  });

  it('holds the social graph of contract-social.graphql', () => {
    // The file extends the types of contract.graphql, so it is read together with it. Its
    // Subscription type (the live feed) is another change's work, built apart from the social
    // graph: it is cut out here, so this checks UserConnection, UserEdge and the User and Blog
    // fields only.
    const social = read('contract-social.graphql').replace(/^type Subscription \{[\s\S]*?^\}$/m, '');
    expect(social).not.toMatch(/^type Subscription/m);
    expect(social).toMatch(/^type UserConnection/m);
    expect(breaksFrom(`${read('contract.graphql')}\n${social}`)).toEqual([]);
  });
});
