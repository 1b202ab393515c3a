/**
 * Every benchmark measures the service as production runs it: bench/production-mode.ts sets
 * NODE_ENV before any library reads it, so it must be each benchmark's first import (graphql-js
 * reads NODE_ENV once, when it is loaded).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const BENCH = join(__dirname, '..', '..', '..', 'bench');
const benchmarks = readdirSync(BENCH).filter((file) => file.endsWith('.bench.ts'));

it('finds the benchmarks', () => {
  expect(benchmarks).toEqual(expect.arrayContaining(['feed.bench.ts', 'mixed.bench.ts', 'fanout.bench.ts']));
});

it.each(benchmarks)('%s imports production-mode before anything else', (file) => {
  const firstImport = readFileSync(join(BENCH, file), 'utf8').match(/^import .*$/m)?.[0];
  expect(firstImport).toBe("import './production-mode';");
});
