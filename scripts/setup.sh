#!/usr/bin/env bash
# Installs the system packages Pushgate builds and tests against, on Debian 12 (bookworm) with the
# Swift toolchain already present. Safe to run again: it installs only what is missing.
#
#   scripts/setup.sh             # what building and running Pushgate needs
#   scripts/setup.sh --browser   # also headless Chromium, for the web console's browser test
#   scripts/setup.sh --postgres  # also PostgreSQL's server, for the tests' throwaway clusters
#                                # (scripts/postgres.sh)
#   scripts/setup.sh --package   # also what scripts/package.sh and scripts/test-package.sh use;
#                                # flags combine
#
# libcurl comes from Debian's bookworm-backports (8.x): bookworm's libcurl 7.88 sends
# RST_STREAM after every completed HTTP/2 stream, and hardened HTTP/2 servers (nghttp2's and
# swift-nio-http2's rapid-reset protection, CVE-2023-44487) then close busy connections with
# GOAWAY. See docs/sandbox.md, "Why a plain libcurl client saw … (curl error 16)".
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
  --package)
    packages+=(
      dpkg-dev             # dpkg-shlibdeps: the Debian package's Depends (scripts/package.sh)
      patchelf             # points a binary's RUNPATH at the Swift runtime the package bundles
      systemd              # systemd-analyze verify of the unit (scripts/test-package.sh)
      curl                 # the package test's GET /healthz
      python3              # the package test's seccomp filters (libseccomp through ctypes)
      adduser              # the package's postinst makes the pushgate user with it
    )
    ;;
  *) echo "setup: unknown flag $flag (--browser, --postgres, --package)" >&2; exit 1 ;;
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

# Prints "URI SIGNED-BY" of the first configured APT source (deb822 .sources or one-line .list)
# whose suites include $1 (SIGNED-BY empty when the source names none).
configured_archive() {
  local suite=$1 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$suite" '
      function flush() { if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && uri != "") { print uri, signed; found = 1; exit } types = suites = uri = signed = "" }
      /^[[:space:]]*$/ { flush(); next }
      /^[[:space:]]*#/ { next }
      tolower($1) == "types:" { $1 = ""; types = $0 }
      tolower($1) == "uris:" { uri = $2 }
      tolower($1) == "suites:" { $1 = ""; suites = $0 }
      tolower($1) == "signed-by:" { signed = $2 }
      END { if (!found) flush() }
    ' "$f" | head -n 1
  done | head -n 1 | grep . && return 0
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk -v suite="$suite" '
    $1 == "deb" {
      i = 2; signed = ""
      if ($i ~ /^\[/) { while (i <= NF) { if ($i ~ /^\[?signed-by=/) { signed = $i; sub(/^\[?signed-by=/, "", signed); sub(/\]$/, "", signed) } if ($i ~ /\]$/) { i++; break } i++ } }
      if ($(i + 1) == suite) { print $i, signed; exit }
    }'
}

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ "$need_curl" -eq 1 ] && [ "$codename" = "bookworm" ]; then
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # The backports suite lives in the same archive as the machine's own bookworm suite: take
    # that archive's URI (and its signing key) from the configured sources, one-line or deb822.
    archive=$(configured_archive bookworm)
    if [ -z "$archive" ]; then
      echo "setup: no configured APT source carries the bookworm suite; add bookworm-backports by hand" >&2
      exit 1
    fi
    read -r uri signed_by <<<"$archive"
    echo "setup: adding bookworm-backports from $uri for libcurl 8"
    {
      echo "Types: deb"
      echo "URIs: $uri"
      echo "Suites: bookworm-backports"
      echo "Components: main"
      [ -n "$signed_by" ] && echo "Signed-By: $signed_by"
    } | "${sudo_cmd[@]}" tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
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
