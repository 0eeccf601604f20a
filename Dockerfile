# Keyward API and worker image. Node 24 comes from the base image; `npm ci` installs every
# dependency including the dev ones, because the project pins its runtime as the node@24
# devDependency (so `npm ci --omit=dev` would not give a consistent tree). The sources run as
# they are: Node 24 strips the TypeScript types, there is no build step.
FROM node:24-slim

WORKDIR /app

# Dependencies first, so editing the sources does not invalidate this layer.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force

COPY . .
# DATA_DIR only matters without DATABASE_URL / S3_ENDPOINT / KEYWARD_MASTER_KEY (embedded
# defaults); it must be writable by the unprivileged user either way.
RUN mkdir -p /app/data && chown node:node /app/data

USER node
ENV HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/app/data
EXPOSE 8080

# Liveness of the API process; docker-compose.yml checks /readyz (database, pool, Redis) instead,
# and turns this off for the worker, which serves no HTTP.
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# The API handles SIGTERM itself (ordered shutdown); compose adds an init process (init: true).
CMD ["node", "api/server.ts"]
