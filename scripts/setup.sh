#!/usr/bin/env bash
# Installs the system packages Pushgate builds and tests against, on Debian 12 (bookworm) with the
# Swift toolchain already present. Safe to run again: it installs only what is missing.
#
#   scripts/setup.sh             # what building and running Pushgate needs
#   scripts/setup.sh --browser   # also headless Chromium, for the web console's browser test
#   scripts/setup.sh --postgres  # also PostgreSQL's server, for the tests' throwaway clusters
#                                # (scripts/postgres.sh); flags combine
#
# libcurl comes from Debian's bookworm-backports (8.x): bookworm's libcurl 7.88 sends
# RST_STREAM after every completed HTTP/2 stream, and hardened HTTP/2 servers (nghttp2's and
# swift-nio-http2's rapid-reset protection, CVE-2023-44487) then close busy connections with
# GOAWAY. See README, "Why a plain libcurl client saw curl error 16".
#
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  pkg-config           # finds libxml2 for the C module target
  libxml2-dev          # XML templates, WNS payloads, XML results
  libssl-dev           # TLS material for the sandbox and APNs certificate auth
  libsqlite3-dev       # embedded registration store
  ca-certificates
)
for flag in "$@"; do
  case "$flag" in
  --browser)
    packages+=(
      chromium             # the web console's browser test drives it headless (DevTools over a pipe)
      fonts-dejavu-core    # so its screenshots have readable text
    )
    ;;
  --postgres)
    packages+=(
      postgresql           # the PostgreSQL store's tests and benchmarks start throwaway clusters of it
    )
    ;;
  *) echo "setup: unknown flag $flag (--browser, --postgres)" >&2; exit 1 ;;
  esac
done
minimum_curl="8.0"

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install packages" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done

curl_version=$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev 2>/dev/null || true)
need_curl=1
if [ -n "$curl_version" ] && dpkg --compare-versions "$curl_version" ge "$minimum_curl"; then need_curl=0; fi

if [ "${#missing[@]}" -eq 0 ] && [ "$need_curl" -eq 0 ]; then
  echo "setup: system packages present (libcurl $curl_version)"
  exit 0
fi

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ "$need_curl" -eq 1 ] && [ "$codename" = "bookworm" ]; then
  list=/etc/apt/sources.list.d/bookworm-backports.list
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "setup: adding Debian bookworm-backports for libcurl 8"
    echo "deb http://deb.debian.org/debian bookworm-backports main" | "${sudo_cmd[@]}" tee "$list" >/dev/null
  fi
fi

echo "setup: installing ${missing[*]:-}${need_curl:+ libcurl4-openssl-dev (>= $minimum_curl)}"
"${sudo_cmd[@]}" apt-get update -qq
if [ "${#missing[@]}" -gt 0 ]; then
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ "$need_curl" -eq 1 ]; then
  if [ "$codename" = "bookworm" ]; then
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends -t bookworm-backports libcurl4-openssl-dev
  else
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends libcurl4-openssl-dev
  fi
fi
curl_version=$(dpkg-query -W -f='${Version}' libcurl4-openssl-dev)
if ! dpkg --compare-versions "$curl_version" ge "$minimum_curl"; then
  echo "setup: libcurl $curl_version is older than $minimum_curl; HTTP/2 fan-outs will be cut off by servers' rapid-reset protection" >&2
  exit 1
fi
echo "setup: libcurl $curl_version"
