#!/usr/bin/env bash
# The metrics test starts a real Prometheus server; install Debian's prometheus when it is missing and we run as
# root (CI and these machines). Otherwise say so: that one test is then skipped outside CI.
set -euo pipefail
if command -v prometheus >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "ensure_prometheus: installing Debian's prometheus" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
  # Debian's package may start a system service on :9090; the test starts its own server on a free port.
  (service prometheus stop || true) >/dev/null 2>&1
else
  echo "ensure_prometheus: prometheus not found and not root: the Prometheus test will be skipped" >&2
fi
