# syntax=docker/dockerfile:1

# ---- build: install every dependency, compile, then drop the dev dependencies ----
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: compiled code and production dependencies only, as the non-root `node` user ----
FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
# Owned by root: `node` can read the code but not rewrite it.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 4000
# NODE_ENV=production: JWT_SECRET must be set (the process refuses to start without it).
CMD ["node", "dist/src/server.js"]
