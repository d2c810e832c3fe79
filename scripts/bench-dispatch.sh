#!/usr/bin/env bash
# Dispatch throughput against the physical limit: the same HTTP/2 + TLS sink (nghttpd) driven by
# h2load and by Pushgate's dispatch engine (libcurl), in one run, reported as requests/s and ratio.
#   scripts/bench-dispatch.sh [COUNT] [CONNECTIONS] [STREAMS] [POOLS]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-200000}
connections=${2:-1}
streams=${3:-100}
pools=${4:-2}

scripts/setup.sh >&2
need=()
command -v nghttpd >/dev/null || need+=(nghttp2-server)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v openssl >/dev/null || need+=(openssl)
if [ "${#need[@]}" -gt 0 ]; then
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

echo "building release…" >&2
scripts/build-release.sh >&2
bin=.build/release/pushgate

work=$(mktemp -d)
trap 'kill "${sink:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
token=$(printf 'ab%.0s' $(seq 1 32))
mkdir -p "$work/docroot/3/device"
: > "$work/docroot/3/device/$token"
# `pushgate bench dispatch` sends each notification to a token of its own: one file each, so that
# nghttpd answers them all with 200 (its warm-up uses the first 2,000).
python3 scripts/bench-tokens.py "$work/docroot/3/device" "$count"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
  -days 1 -subj "/CN=localhost" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>/dev/null
port=$((20000 + RANDOM % 20000))
nghttpd --htdocs="$work/docroot" --max-concurrent-streams=$((streams * 2)) "$port" "$work/key.pem" "$work/cert.pem" >/dev/null 2>&1 &
sink=$!
sleep 1
payload='{"aps":{"alert":"From bench: throughput"}}'
printf '%s' "$payload" > "$work/payload.json"

echo "== h2load: $count requests, $connections connection(s), $streams streams each"
h2load_out=$(h2load -n "$count" -c "$connections" -m "$streams" -d "$work/payload.json" \
  -H 'apns-push-type: alert' -H 'apns-topic: com.example.bench' "https://127.0.0.1:$port/3/device/$token")
echo "$h2load_out" | grep -E "^finished in|^requests:|^status codes:"
h2_rate=$(echo "$h2load_out" | sed -nE 's/^finished in .*, ([0-9.]+) req\/s.*/\1/p')

echo "== pushgate dispatch: $count notifications, $pools pool(s) x $connections connection(s), $streams streams each"
if ! pg_out=$("$bin" bench dispatch --url "https://127.0.0.1:$port" --ca-file "$work/cert.pem" --count "$count" \
  --connections "$connections" --streams "$streams" --pools "$pools" 2>&1); then
  echo "$pg_out"
  echo "bench-dispatch: the run did not measure real sends (above)" >&2
  exit 1
fi
echo "$pg_out"
pg_rate=$(echo "$pg_out" | sed -nE 's/.* = ([0-9]+) notifications\/s.*/\1/p')
pg_cpu=$(echo "$pg_out" | sed -nE 's/.*CPU ([0-9.]+) us per notification/\1/p')

# Web Push on the same sink, in the same run: each notification encrypted for its subscription
# (a fresh P-256 key, ECDH, HKDF, AES-128-GCM) and sent with a VAPID token, beside APNs's cost.
echo "== pushgate dispatch, Web Push: $count notifications, $pools pool(s) x $connections connection(s), $streams streams each"
if ! wp_out=$("$bin" bench dispatch --pns browser --url "https://127.0.0.1:$port" --ca-file "$work/cert.pem" --count "$count" \
  --connections "$connections" --streams "$streams" --pools "$pools" 2>&1); then
  echo "$wp_out"
  echo "bench-dispatch: the Web Push run did not measure real sends (above)" >&2
  exit 1
fi
echo "$wp_out"
wp_rate=$(echo "$wp_out" | sed -nE 's/.* = ([0-9]+) notifications\/s.*/\1/p')
wp_cpu=$(echo "$wp_out" | sed -nE 's/.*CPU ([0-9.]+) us per notification/\1/p')

# The libcurl floors: the same requests from plain C on libcurl, one loop thread per pool, no
# Pushgate; once with curl_multi_poll, once with curl_multi_socket_action on epoll (the pattern
# PushgateCurl follows).
compiler=$(command -v clang || command -v cc || true)
poll_rate=""
socket_rate=""
if [ -n "$compiler" ]; then
  "$compiler" -O2 -o "$work/curl_floor" Benchmarks/CurlFloor/curl_floor.c -lcurl -lpthread
  for mode in poll socket; do
    echo "== libcurl alone (C, $mode): $count requests, $pools thread(s) x 1 connection, $streams streams each"
    floor_out=$("$work/curl_floor" "$mode" "https://127.0.0.1:$port/3/device/$token" "$work/cert.pem" "$count" "$streams" "$pools")
    echo "$floor_out"
    rate=$(echo "$floor_out" | sed -nE 's/.* = ([0-9]+) requests\/s.*/\1/p')
    if [ "$mode" = poll ]; then poll_rate=$rate; else socket_rate=$rate; fi
  done
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
echo "== result: h2load ${h2_rate} req/s, libcurl poll ${poll_rate:-n/a} req/s, libcurl socket-action ${socket_rate:-n/a} req/s," \
  "pushgate ${pg_rate} notifications/s; pushgate / socket-action floor $(ratio "$pg_rate" "$socket_rate"), / h2load $(ratio "$pg_rate" "$h2_rate")"
echo "== Web Push beside APNs: ${wp_rate}/s at ${wp_cpu} us CPU per notification vs ${pg_rate}/s at ${pg_cpu} us;" \
  "rate $(ratio "$wp_rate" "$pg_rate") of APNs's, CPU $(ratio "$wp_cpu" "$pg_cpu") x"
echo "(scripts/bench-all.sh runs this and the rest of the suite in interleaved rounds)"
# Pushgate sends through libcurl what h2load sends on its own: faster than h2load is no measurement.
if awk -v p="$pg_rate" -v h="$h2_rate" 'BEGIN { exit !(h > 0 && p > h * 1.05) }'; then
  echo "bench-dispatch: IMPLAUSIBLE: pushgate ${pg_rate}/s above h2load ${h2_rate}/s on the same sink; the figures are void" >&2
  exit 1
fi
