# syntax=docker/dockerfile:1

# ---- build: install every dependency, compile, bundle GraphiQL, then keep what the service loads ----
FROM node:24-bookworm-slim AS build
# better-sqlite3 (the embedded mode) compiles its native module when no prebuilt one downloads.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# GraphiQL, React and Monaco are bundled into dist/graphiql here (devDependencies): only the
# static bundle ships.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund
# What no process loads, from the production dependencies: source maps, type declarations and
# docs, TypeORM's browser build, the ESM copies of the OpenTelemetry packages (the service is
# CommonJS), and better-sqlite3's sources and build objects (its compiled module stays).
RUN find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.md' \) -delete \
 && rm -rf node_modules/@types node_modules/typeorm/browser node_modules/@opentelemetry/*/build/esm node_modules/@opentelemetry/*/build/esnext \
 && mv node_modules/better-sqlite3/build/Release/better_sqlite3.node /tmp/ \
 && rm -rf node_modules/better-sqlite3/build node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
 && mkdir -p node_modules/better-sqlite3/build/Release && mv /tmp/better_sqlite3.node node_modules/better-sqlite3/build/Release/ \
 && find dist -name '*.map' -delete \
 && mkdir -p /app/data

# ---- runtime: Node 24 and the compiled service only (distroless: no shell, no package manager), as a non-root user ----
# Node 24 LTS on Debian 12, the same glibc the module of better-sqlite3 was compiled against above.
FROM gcr.io/distroless/nodejs24-debian12:nonroot
# Every interface: the container's own port is what `docker run -p` and compose publish (the
# server listens on 127.0.0.1 by default outside production, here it is production anyway).
ENV NODE_ENV=production HOST=0.0.0.0
WORKDIR /app
# Owned by root: the `nonroot` user can read the code but not rewrite it.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/migrations ./dist/migrations
COPY --from=build /app/dist/scripts ./dist/scripts
COPY --from=build /app/dist/graphiql ./dist/graphiql
# The embedded mode (no DATABASE_URL/REDIS_URL) keeps its SQLite file here: mount a volume on it.
COPY --from=build --chown=nonroot:nonroot /app/data ./data
# 4000: the API (PORT); 4001: a fan-out worker's probes and metrics (WORKER_PORT).
EXPOSE 4000 4001
# The image's entry point is node (/nodejs/bin/node). Other processes of the same image:
#   fan-out worker:  ["--max-semi-space-size=64", "dist/src/worker.js"]
#   migrations:      ["dist/scripts/migrate.js"]   (run once per deploy, as a user with DDL rights)
# NODE_ENV=production: JWT_SECRET must be set, at least 32 bytes and no placeholder (the process
# refuses to start otherwise), and migrations do not run at start (MIGRATE_ON_START=off) unless
# the embedded mode is used.
# --max-semi-space-size=16 for the API: its scavenges stop the requests in flight, and a
# young generation of 2 x 16 MB keeps each at 10-20 ms where 2 x 64 MB took 25-47 ms (the
# half-peak page p99 of bench:mixed follows the longest pause), at the same peak rate on the
# machine of 2026-12-05 (docs/benchmarks.md, machine AA). V8 sizes the young generation by
# version otherwise; the flag pins it. The fan-out worker keeps 2 x 64 MB: it batches, and a
# request's objects rarely survive into its scavenges (bench:feed on machine D: +35-50%).
CMD ["--max-semi-space-size=16", "dist/src/server.js"]
