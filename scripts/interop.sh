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
  echo "interop: no pushgate binary at $PUSHGATE_BIN (build it: swift build -c release --product pushgate, or set PUSHGATE_BIN)" >&2
  exit 1
fi

command -v python3 >/dev/null || { echo "interop: python3 is required" >&2; exit 1; }

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    # Debian's python3 ships venv/ensurepip in python3-venv.
    rm -rf "$venv"
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null || { echo "interop: need root or sudo to install python3-venv" >&2; exit 1; }
      sudo_cmd=(sudo)
    fi
    echo "== installing python3-venv"
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv
    python3 -m venv "$venv"
  fi
fi

stamp="$venv/.requirements.sha256"
wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
  echo "== installing $requirements into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  echo "$wanted" >"$stamp"
fi

echo "== interop suite against $PUSHGATE_BIN"
# No .pyc files or .pytest_cache in the source tree.
export PYTHONDONTWRITEBYTECODE=1
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider Tests/Interop "$@"
