# The Node server as a container image: `pemba serve` on a SQLite file in the /data volume, every setting from its
# PEMBA_* environment variable (README: Configuration). Built from the installable package (packages/cli):
#
#   (cd packages/cli && npm pack)          # writes packages/cli/pemba-cli-0.1.0.tgz
#   docker build -t pemba .                # or: podman build --format docker -t pemba .
#   docker run -d -p 3476:3476 -v pemba-data:/data -e PEMBA_AUTH_KEYS=<key> pemba
#
# It listens on 0.0.0.0 inside the container, so it starts only with authentication (PEMBA_AUTH_KEYS or
# PEMBA_JWKS_URL) or with PEMBA_INSECURE_BIND_ANY=on. NODE_IMAGE names another Node 22 base image (an internal
# mirror, or a locally built one where no registry is reachable).
ARG NODE_IMAGE=node:22-bookworm-slim

# The package and its runtime dependencies (better-sqlite3 ships a prebuilt addon for linux-x64 and arm64; where
# none fits it builds from source against the image's own Node headers, hence npm_config_nodedir).
FROM ${NODE_IMAGE} AS build
ENV npm_config_nodedir=/usr/local
COPY packages/cli/pemba-cli-*.tgz /tmp/pemba-cli.tgz
RUN npm install --prefix /opt/pemba --omit=dev --no-audit --no-fund --no-update-notifier /tmp/pemba-cli.tgz

# The runtime: Node and the installed package, no npm cache or build tools; an unprivileged user owns /data.
FROM ${NODE_IMAGE}
RUN groupadd --system pemba \
  && useradd --system --gid pemba --home-dir /data --no-create-home --shell /usr/sbin/nologin pemba \
  && mkdir /data && chown pemba:pemba /data
COPY --from=build /opt/pemba /opt/pemba
ENV NODE_ENV=production \
  PEMBA_HOST=0.0.0.0 \
  PEMBA_PORT=3476 \
  PEMBA_DATABASE=/data/pemba.db
USER pemba
WORKDIR /data
VOLUME /data
# HTTP, and Permify's gRPC API (PEMBA_GRPC_PORT; 0 turns it off)
EXPOSE 3476 3478
# /healthz answers without a key; the image has no curl, so Node asks.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PEMBA_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# pemba handles SIGTERM itself (finishes requests in flight, closes the database, exits 0): no init needed.
ENTRYPOINT ["node", "/opt/pemba/node_modules/@pemba/cli/dist/pemba.mjs"]
CMD ["serve"]
