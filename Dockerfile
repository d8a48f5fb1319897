# syntax=docker/dockerfile:1
# token-sidecar container image (multi-stage).
#
#   docker build -t token-sidecar .
#   docker run --rm -v $PWD/my.yaml:/etc/token-sidecar/token-sidecar.yaml token-sidecar
#
# The runtime stage's apt packages are listed one per line between the
# "runtime-packages-begin/end" markers; scripts/check-docker-deps.sh reads that list
# and verifies (via ldd + dpkg -S) that it covers every shared library the release
# binary needs. Keep the markers and the one-package-per-line format.

# ---- build stage ----------------------------------------------------------------
FROM swift:6.3-bookworm AS builder
COPY scripts/check-nghttp2.sh /usr/local/bin/check-nghttp2
RUN apt-get update \
 && apt-get install -y libevent-dev libssl-dev libnghttp2-dev zlib1g-dev pkg-config \
 && check-nghttp2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /build
# Test targets are declared in Package.swift, so their directories must exist too.
COPY Package.swift Package.resolve[d] ./
COPY Sources ./Sources
COPY Tests ./Tests
# The same release build as `make release` (its flags are in that script only).
COPY scripts/release-build.sh ./scripts/
RUN scripts/release-build.sh \
 && install -D -m 0755 "$(scripts/release-build.sh bin-path)/token-sidecar" /out/token-sidecar

# ---- runtime stage --------------------------------------------------------------
FROM debian:bookworm-slim
# libc6 and libgcc-s1 are always present in bookworm-slim; everything else the
# binary links (see `ldd token-sidecar`) is listed explicitly.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates \
# runtime-packages-begin
      libevent-2.1-7 \
      libevent-core-2.1-7 \
      libevent-extra-2.1-7 \
      libevent-pthreads-2.1-7 \
      libevent-openssl-2.1-7 \
      libnghttp2-14 \
      libssl3 \
      libstdc++6 \
      zlib1g \
# runtime-packages-end
 && rm -rf /var/lib/apt/lists/*
# nghttp2's newest security update (scripts/check-nghttp2.sh says which and why).
COPY --from=builder /usr/local/bin/check-nghttp2 /usr/local/bin/check-nghttp2
RUN check-nghttp2 && rm /usr/local/bin/check-nghttp2

RUN groupadd --system --gid 10001 sidecar \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin sidecar

COPY --from=builder /out/token-sidecar /usr/local/bin/token-sidecar
COPY config/token-sidecar.yaml /etc/token-sidecar/token-sidecar.yaml

USER 10001:10001
# The sidecar listens on 127.0.0.1:8080 on purpose (not 0.0.0.0): in a pod the app
# container shares the network namespace (and so the loopback interface) with the
# sidecar, so the app reaches it via http://127.0.0.1:8080 while nothing outside the
# pod can use it to obtain injected credentials. EXPOSE is documentation only. The admin
# port (9901) serves /healthz, /readyz, /metrics and /tokens (status only, never a token).
EXPOSE 8080 9901
# No curl in the image: the binary checks its own admin listener.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/token-sidecar", "health", "--admin", "127.0.0.1:9901"]
ENTRYPOINT ["/usr/local/bin/token-sidecar"]
CMD ["run", "--config", "/etc/token-sidecar/token-sidecar.yaml"]
