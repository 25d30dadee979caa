# wap-server in a container: built from this repository, installed from the packed packages
# exactly as `npm install @wap/server` installs them, run as an unprivileged user.
#
#   docker build -t wap-server .
#   docker run -p 8080:8080 -v wap-data:/var/lib/wap wap-server
#
# See docs/deploy.md.

# 1. Build every package and pack the publishable ones into tarballs.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
RUN npm install -g pnpm@12.21.0
WORKDIR /src
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml tsconfig.base.json tsconfig.json ./
COPY packages/api/package.json packages/api/
COPY packages/ssh-wire/package.json packages/ssh-wire/
COPY packages/agent/package.json packages/agent/
COPY packages/cli/package.json packages/cli/
COPY packages/console/package.json packages/console/
COPY packages/core/package.json packages/core/
COPY packages/storage-sql/package.json packages/storage-sql/
COPY packages/storage-sqlite/package.json packages/storage-sqlite/
COPY packages/storage-postgres/package.json packages/storage-postgres/
COPY packages/server/package.json packages/server/
COPY packages/client/package.json packages/client/
COPY packages/test-kit/package.json packages/test-kit/
COPY examples/package.json examples/
COPY bench/package.json bench/
RUN pnpm install --frozen-lockfile
COPY packages packages
RUN pnpm build \
  && mkdir /tarballs \
  && for p in api ssh-wire core storage-sql storage-sqlite storage-postgres server; do \
       (cd packages/$p && pnpm pack --pack-destination /tarballs); \
     done

# 2. Install @wap/server and its dependencies from the tarballs (better-sqlite3 compiles here).
FROM node:20-bookworm-slim AS install
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/wap
COPY --from=build /tarballs /tarballs
RUN npm init -y >/dev/null \
  && npm install --omit=dev --no-audit --no-fund /tarballs/*.tgz

# 3. The runtime: no compiler, no sources, no root.
FROM node:20-bookworm-slim
RUN groupadd --system --gid 10001 wap \
  && useradd --system --uid 10001 --gid wap --home-dir /var/lib/wap --shell /usr/sbin/nologin wap \
  && mkdir -p /var/lib/wap \
  && chown wap:wap /var/lib/wap \
  && chmod 700 /var/lib/wap
COPY --from=install /opt/wap /opt/wap
ENV NODE_ENV=production \
    WAP_HOST=0.0.0.0 \
    WAP_PORT=8080 \
    WAP_DATA_DIR=/var/lib/wap \
    WAP_DIAGNOSTICS_ADDRESS=0.0.0.0:9090
USER wap
VOLUME ["/var/lib/wap"]
EXPOSE 8080 9090
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9090/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/opt/wap/node_modules/@wap/server/dist/bin.js"]
