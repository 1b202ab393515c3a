/**
 * A request's read routing, carried through its async calls (AsyncLocalStorage): the lag-tolerant
 * reads of a request go to a replica (src/db/replicas.ts) until something in the request says it
 * must see its own writes, its viewer wrote recently (graphql/read-your-writes.ts) or the
 * operation is a mutation, and from then on the request reads the primary only.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

interface ReadScope {
  primary: boolean;
}

const scopes = new AsyncLocalStorage<ReadScope>();

/** Runs `work` (a request) in a scope of its own, whose lag-tolerant reads go to replicas until readPrimaryInScope(). */
export function withReadScope<T>(work: () => T): T {
  return scopes.run({ primary: false }, work);
}

/** From here on, the current request reads the primary only (its viewer wrote recently, or it writes). */
export function readPrimaryInScope(): void {
  const scope = scopes.getStore();
  if (scope) scope.primary = true;
}

/** Whether the current request (if any) must read the primary. */
export function readsPrimaryInScope(): boolean {
  return scopes.getStore()?.primary ?? false;
}
