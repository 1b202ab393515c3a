// Copies the Lua scripts (src/**/*.lua) next to the compiled adapters in dist/src, which read
// them at start (src/redis/lua.ts). Part of `npm run build`.
import { cpSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.lua')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(root, 'dist', 'src', relative(src, from)));
}
