#!/usr/bin/env bash
# Prints the path of a redis-server binary (the global rate-limit service's
# store in tests), installing Debian's redis-server package when none is
# there: `apt-get update` first (once, only when the package is missing),
# then `apt-get install`; needs root. $REDIS_SERVER wins when set.
#
# Only the binary is used: tests start their own redis-server on a free
# loopback port in a temporary folder; the package's systemd unit is not
# started (policy-rc.d is not touched; on machines without systemd nothing
# starts it anyway).
set -euo pipefail
if [[ -n "${REDIS_SERVER:-}" && -x "${REDIS_SERVER}" ]]; then echo "$REDIS_SERVER"; exit 0; fi
if p=$(command -v redis-server 2>/dev/null); then echo "$p"; exit 0; fi
if [[ $(id -u) != 0 ]]; then
  echo "no redis-server: install Debian's redis-server (as root: hack/install-redis.sh)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends redis-server >&2
command -v redis-server
