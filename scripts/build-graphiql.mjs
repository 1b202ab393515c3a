// Bundles GraphiQL (web/graphiql.tsx) and Monaco's workers into dist/graphiql/
// with esbuild, so that the service serves them itself (no CDN). Part of `npm run build`.
import { build } from 'esbuild';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'graphiql');
mkdirSync(out, { recursive: true });
const common = { bundle: true, minify: true, logLevel: 'warning', define: { 'process.env.NODE_ENV': '"production"' } };

await build({
  ...common,
  entryPoints: { app: join(root, 'web', 'graphiql.tsx') },
  outdir: out,
  format: 'esm',
  jsx: 'automatic',
  loader: { '.ttf': 'file', '.woff': 'file', '.woff2': 'file' },
  assetNames: '[name]-[hash]',
  publicPath: '/graphiql',
});
await build({
  ...common,
  entryPoints: {
    'editor.worker': join(root, 'node_modules', 'monaco-editor', 'esm', 'vs', 'editor', 'editor.worker.js'),
    'json.worker': join(root, 'node_modules', 'monaco-editor', 'esm', 'vs', 'language', 'json', 'json.worker.js'),
    'graphql.worker': join(root, 'node_modules', 'monaco-graphql', 'esm', 'graphql.worker.js'),
  },
  outdir: out,
  format: 'iife',
});
writeFileSync(join(out, 'BUILT'), new Date().toISOString());
console.log(`GraphiQL bundled into ${out}`);
