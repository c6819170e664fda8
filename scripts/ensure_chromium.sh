#!/usr/bin/env bash
# The browser tests drive Debian's Chromium headless through Playwright; install it when it is missing and we
# run as root (CI and these machines). Otherwise say so: the browser tests are then skipped outside CI.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "ensure_chromium: installing Debian's chromium" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "ensure_chromium: /usr/bin/chromium not found and not root: the browser tests will be skipped" >&2
fi
