#!/usr/bin/env bash
# The production-path test starts a real Redis server; install Debian's redis-server when it is missing and we
# run as root (CI and these machines). Otherwise say so: that one test is then skipped outside CI.
set -euo pipefail
if command -v redis-server >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "ensure_redis: installing Debian's redis-server" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  # Debian's package may start a system service; the tests start their own server on a Unix socket.
  (service redis-server stop || true) >/dev/null 2>&1
else
  echo "ensure_redis: redis-server not found and not root: the Redis production-path test will be skipped" >&2
fi
