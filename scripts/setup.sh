#!/usr/bin/env bash
# Installs the system packages Pushgate builds and tests against, on Debian 12 (or Ubuntu) with the
# Swift toolchain already present. Safe to run again: it installs only what is missing.
#
#   scripts/setup.sh            # build and test dependencies
#
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  pkg-config          # finds libcurl / libxml2 for the C module targets
  libcurl4-openssl-dev # outbound HTTP/2 to push services (libcurl with OpenSSL and nghttp2)
  libxml2-dev         # XML templates, WNS payloads, XML results
  libssl-dev          # TLS material for the sandbox and APNs certificate auth
  libsqlite3-dev      # embedded registration store
  ca-certificates
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: system packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
