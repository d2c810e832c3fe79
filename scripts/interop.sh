#!/usr/bin/env bash
# Interoperability suite: drives `pushgate sandbox` (and `pushgate serve`'s hub API) with independent client libraries from PyPI
# (aioapns and httpx/h2 for APNs, google-auth + requests for FCM v1, requests for legacy GCM and
# WNS) and checks the answers the services document.
#
#   scripts/interop.sh                         # against .build/release/pushgate
#   PUSHGATE_BIN=/path/to/pushgate scripts/interop.sh -k apns -rA   # extra args go to pytest
#
# Needs python3; installs python3-venv with apt-get if venv is missing (root or sudo). The venv
# lives in .build/interop-venv and is reused; requirements are reinstalled only when
# Tests/Interop/requirements.txt changes.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build/interop-venv
requirements=Tests/Interop/requirements.txt
export PUSHGATE_BIN="${PUSHGATE_BIN:-.build/release/pushgate}"

if [ ! -x "$PUSHGATE_BIN" ]; then
  echo "interop: no pushgate binary at $PUSHGATE_BIN (build it: scripts/build-release.sh, or set PUSHGATE_BIN)" >&2
  exit 1
fi

source scripts/python-venv.sh
python_venv interop "$venv" "$requirements"

echo "== interop suite against $PUSHGATE_BIN"
# No .pyc files or .pytest_cache in the source tree.
export PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider Tests/Interop "$@"
