// Preloaded into a process under test (NODE_OPTIONS=--require <this file>): when the process
// exits, it writes the files it had loaded (require.cache) to REPORT_LOADED_MODULES as JSON.
const { writeFileSync } = require('node:fs');

process.on('exit', () => {
  writeFileSync(process.env.REPORT_LOADED_MODULES, JSON.stringify(Object.keys(require.cache)));
});
