/**
 * Imported first by every benchmark that runs the service in its own process, so that its figures
 * are those of the service as production runs it (NODE_ENV=production, as the Dockerfile sets).
 * benchConfig gives the app's own configuration production mode, but libraries read NODE_ENV once,
 * when they are loaded: outside production graphql-js checks each of its instanceOf tests for a
 * second copy of itself, 4.5% of a GraphQL feed page's CPU samples (bench:feed started as `node
 * dist/bench/feed.bench.js` on machine AF; none with this module). The npm scripts set NODE_ENV
 * too; this makes a run started another way measure the same service.
 */
process.env.NODE_ENV = 'production';
