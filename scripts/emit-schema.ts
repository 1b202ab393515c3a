/** Writes schema/schema.graphql from the resolvers (`npm run schema`). A test fails when it drifts. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { printFeedSchema } from '../src/graphql/schema';

const target = join(__dirname, '..', '..', 'schema', 'schema.graphql');
writeFileSync(target, printFeedSchema());
console.log(`wrote ${target}`);
