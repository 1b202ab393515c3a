/**
 * Builds dist/ once before the tests: some tests start the real worker process
 * (node dist/src/worker.js) and kill it. tsc is incremental, so an unchanged tree takes seconds.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export default function globalSetup(): void {
  const root = join(__dirname, '..', '..');
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}
