# Keyward API and worker images. Node 24 is the base image's own (pinned by version); the sources
# run as they are (Node 24 strips the TypeScript types), so there is no build step, only the
# runtime dependencies. The `node` devDependency (the pinned Node for `npx node` on a machine
# whose system Node is older) is a dev dependency, so `npm ci --omit=dev` leaves it out: the
# image has one Node, the base image's, and runs `node` directly.
#   docker build -t keyward:0.1.0 .                       # the API (last stage)
#   docker build --target worker -t keyward-worker:0.1.0 .
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# Runtime dependencies only, installed from the lock file.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# No install scripts: the runtime dependencies have none to run, and the project's own
# (the embedded database template, scripts/embedded-template.ts) is for a checkout.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# What both processes run: the sources without tests, benches or scripts, owned by root and
# read-only to the unprivileged user that runs them.
FROM ${NODE_IMAGE} AS base
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY api ./api
COPY shared ./shared
COPY workers ./workers
COPY bin ./bin
# The web console's static files, served by the API at /console.
COPY console ./console
# DATA_DIR only matters without DATABASE_URL / S3_ENDPOINT / KEYWARD_MASTER_KEY(_FILE) (the
# embedded defaults); it must be writable by the unprivileged user either way.
RUN mkdir -p /app/data && chown node:node /app/data
ENV DATA_DIR=/app/data
USER node

# The worker: BullMQ consumers; its own /healthz and /metrics on WORKER_METRICS_PORT.
FROM base AS worker
ENV WORKER_METRICS_PORT=9464
EXPOSE 9464
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.WORKER_METRICS_PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The worker handles SIGTERM itself (finishes its jobs); compose adds an init process.
CMD ["node", "workers/worker.ts"]

# The API (the default target). Liveness here; compose checks /readyz (database, pool, Redis).
FROM base AS api
ENV HOST=0.0.0.0 \
    PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The API handles SIGTERM itself (ordered shutdown); compose adds an init process (init: true).
CMD ["node", "api/server.ts"]
