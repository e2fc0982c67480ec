# seqd container image (docs/deploy.md, "Container"). Builds with Docker or
# Podman:
#   docker build -t seqd .
#   podman build --format docker -t seqd .     # docker format keeps HEALTHCHECK
# The image listens on 0.0.0.0, so it needs a tokens file (docs/security.md):
#   docker run --rm --entrypoint seqctl seqd token new --id app --scopes 'ids:*'
# prints a secret (keep it) and a line; put the line in ./tokens, then
#   docker run -p 8080:8080 -p 7070:7070 -v seqd-data:/data \
#     -v "$PWD/tokens:/etc/seqd/tokens:ro" seqd
# Without the file seqd refuses to start and says why; SIGHUP (docker kill
# -s HUP) reloads it. Settings are SEQD_<OPTION> variables (-e SEQD_HTTP_PORT=
# 9000) or flags after the image name (--cluster --store mysql://...).
# `scripts/container-test` builds and runs this image under Podman.

# --- build ----------------------------------------------------------------
FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake libboost-dev libmysqlcppconn-dev nlohmann-json3-dev \
      prometheus-cpp-dev libsqlite3-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the build reads: a change to docs, tests or scripts keeps the
# compiled layer.
COPY CMakeLists.txt ./
COPY cmake cmake
COPY common common
COPY proto proto
COPY storage storage
COPY server server
COPY client client
COPY config config
# .git is not in the build context (.dockerignore): the commit comes from
# the caller (--build-arg SEQD_GIT_COMMIT=$(git rev-parse --short=12 HEAD)).
ARG SEQD_GIT_COMMIT=unknown
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
      -DSEQD_BUILD_TESTS=OFF -DSEQD_BUILD_BENCH=OFF -DSEQD_MAN_PAGES=OFF \
 && cmake --build /build -j"$(nproc)" --target seqd seqctl \
 && strip /build/seqd /build/client/seqctl

# --- runtime --------------------------------------------------------------
FROM debian:12
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmysqlcppconn7v5 libsqlite3-0 libprometheus-cpp-core1.0 libssl3 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
 && groupadd --system --gid 999 seqd \
 && useradd --system --uid 999 --gid seqd --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin seqd \
 && mkdir -p /data /etc/seqd && chown seqd:seqd /data
COPY --from=build /build/seqd /build/client/seqctl /usr/local/bin/
USER seqd
WORKDIR /data
VOLUME ["/data"]
ENV SEQD_STORE=sqlite:/data/seqd.db \
    SEQD_HTTP_ADDRESS=0.0.0.0 \
    SEQD_TCP_ADDRESS=0.0.0.0 \
    SEQD_TOKENS_FILE=/etc/seqd/tokens
# HTTP, binary protocol (RESP is off unless SEQD_RESP_PORT is set).
EXPOSE 8080 7070
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s \
  CMD seqctl --http "127.0.0.1:${SEQD_HTTP_PORT:-8080}" ping || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/seqd"]
