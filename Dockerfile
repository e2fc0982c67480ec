# seqd container image.
#   docker build -t seqd .
#   seqctl token new --id app --scopes ids:*,msg:send:*,msg:read:* >secret  # keep the secret
#   docker run -p 8080:8080 -v seqd-data:/data -v "$PWD/tokens:/etc/seqd/tokens:ro" seqd
# The image listens on 0.0.0.0, so it needs a tokens file (docs/security.md):
# mount one at /etc/seqd/tokens (lines from `seqctl token new`); without it
# seqd refuses to start and says why. SIGHUP (docker kill -s HUP) reloads it.
# Flags after the image name replace CMD (e.g. --store mysql://...).

# --- build ----------------------------------------------------------------
FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake libboost-dev libmysqlcppconn-dev nlohmann-json3-dev \
      prometheus-cpp-dev libsqlite3-dev doctest-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
      -DSEQD_BUILD_TESTS=OFF -DSEQD_BUILD_BENCH=OFF \
 && cmake --build /build -j"$(nproc)" --target seqd \
 && strip /build/seqd

# --- runtime --------------------------------------------------------------
FROM debian:12
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmysqlcppconn7v5 libsqlite3-0 libprometheus-cpp-core1.0 libssl3 curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system seqd \
 && useradd --system --gid seqd --home-dir /data --no-create-home --shell /usr/sbin/nologin seqd \
 && mkdir -p /data && chown seqd:seqd /data
COPY --from=build /build/seqd /usr/local/bin/seqd
USER seqd
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/local/bin/seqd"]
CMD ["--store", "sqlite:/data/seqd.db", "--http-address", "0.0.0.0", \
     "--tokens-file", "/etc/seqd/tokens"]
