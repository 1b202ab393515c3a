/**
 * Lua scripts, kept in `.lua` files beside the adapter that runs them (the layout of BullMQ's
 * `commands/`), loaded and called one way everywhere.
 *
 * - A script file may include shared helpers with a line `--- @include "includes/<name>"`
 *   (relative to its folder, without `.lua`): the helper's text replaces the line, once per script.
 * - A script is sent as EVALSHA; a server that does not have it yet (a restart, a new cluster
 *   node) answers NOSCRIPT and gets it once with EVAL, which also caches it there. ioredis routes
 *   both by their first key, so on a cluster a call goes to the node of its keys, and with
 *   auto-pipelining calls sent together share a round trip.
 * - `npm run build` copies the `.lua` files next to the compiled adapters (scripts/copy-lua.mjs);
 *   under ts-jest they are read from src/.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisClient } from './redis.client';

const INCLUDE = /^--- @include "([^"]+)"\s*$/gm;

/** A script's text with its includes expanded (each at most once). */
export function luaSource(dir: string, name: string): string {
  const included = new Set<string>();
  const expand = (text: string): string =>
    text.replace(INCLUDE, (_line, include: string) => {
      if (included.has(include)) return '';
      included.add(include);
      return expand(readFileSync(join(dir, `${include}.lua`), 'utf8'));
    });
  return expand(readFileSync(join(dir, `${name}.lua`), 'utf8'));
}

type Arg = string | number;

export class LuaScript {
  readonly sha: string;

  constructor(
    readonly name: string,
    readonly source: string,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  static load(dir: string, name: string): LuaScript {
    return new LuaScript(name, luaSource(dir, name));
  }

  /** Runs the script with these keys and arguments; the reply as the caller knows it to be. */
  async run<Reply>(redis: RedisClient, keys: readonly string[], args: readonly Arg[] = []): Promise<Reply> {
    try {
      return (await redis.evalsha(this.sha, keys.length, ...keys, ...args)) as Reply;
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return (await redis.eval(this.source, keys.length, ...keys, ...args)) as Reply;
    }
  }
}

/** Loads every script of a folder that an adapter names, by name. */
export function loadScripts<Name extends string>(dir: string, names: readonly Name[]): Record<Name, LuaScript> {
  return Object.fromEntries(names.map((name) => [name, LuaScript.load(dir, name)])) as Record<Name, LuaScript>;
}
