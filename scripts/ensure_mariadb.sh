#!/usr/bin/env bash
# The DIRAC differential test runs the real TaskQueueDB on a private MariaDB server (Debian's mariadb-server) and
# builds mysqlclient and M2Crypto for it (libmariadb-dev, pkg-config, swig, libssl-dev). Install them when missing
# and we run as root (CI and these machines); otherwise say so: the DIRAC differential test is then skipped.
set -euo pipefail
if command -v mariadbd >/dev/null && command -v mariadb_config >/dev/null && command -v swig >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "ensure_mariadb: installing Debian's mariadb-server and the build packages of mysqlclient and M2Crypto" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    mariadb-server libmariadb-dev pkg-config build-essential swig libssl-dev >/dev/null \
    || echo "ensure_mariadb: the packages could not be installed: the DIRAC differential test will be skipped" >&2
else
  echo "ensure_mariadb: MariaDB or its build packages are missing and we are not root: the DIRAC differential test will be skipped" >&2
fi
