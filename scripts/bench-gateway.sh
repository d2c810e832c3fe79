#!/usr/bin/env bash
# The gateway's HTTP API under load with wrk: registration upserts and single-target sends
# (through the sandbox's APNs over HTTP/2 + TLS), reporting requests/s and p50/p99 latency.
#   scripts/bench-gateway.sh [DURATION_SECONDS] [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10}
connections=${2:-32}

scripts/setup.sh >&2
command -v wrk >/dev/null || {
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends wrk >&2
}
echo "building release…" >&2
scripts/build-release.sh >&2
bin=.build/release/pushgate

work=$(mktemp -d)
trap 'kill ${sandbox:-0} ${gateway:-0} 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin" sandbox --dir "$work/sandbox" > "$work/sandbox.out" 2>/dev/null &
sandbox=$!
for _ in $(seq 1 50); do grep -q gateway "$work/sandbox.out" 2>/dev/null && break; sleep 0.2; done
control=$(awk '/control/ {print $2}' "$work/sandbox.out")
port=$((20000 + RANDOM % 20000))
"$bin" serve --config "$work/sandbox/config.json" --port "$port" > "$work/gateway.log" 2>&1 &
gateway=$!
for _ in $(seq 1 50); do curl -s "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
base="http://127.0.0.1:$port"

token=$(curl -s -X POST "$control/devices" -d '{"platform":"apns"}' | sed -E 's/.*"handle":"([0-9a-f]+)".*/\1/')
id=$(curl -s -u alice:alice -X POST "$base/api/register?handle=$token" | tr -d '"')
body="{\"Platform\":\"apns\",\"Handle\":\"$token\",\"Tags\":[\"news\"]}"
curl -s -o /dev/null -w '' -u alice:alice -X PUT -H 'Content-Type: application/json' -d "$body" "$base/api/register/$id"

auth_alice=$(printf 'alice:alice' | base64)
auth_bob=$(printf 'bob:bob' | base64)
cat > "$work/upsert.lua" <<LUA
wrk.method = "PUT"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Basic $auth_alice"
LUA
cat > "$work/send.lua" <<LUA
wrk.method = "POST"
wrk.body = '"Hello from wrk"'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Basic $auth_bob"
LUA

echo "== registration upserts: PUT /api/register/{id}, ${duration}s, $connections connections"
wrk -t 2 -c "$connections" -d "${duration}s" --latency -s "$work/upsert.lua" "$base/api/register/$id" | grep -E "Requests/sec|50%|99%|Non-2xx|requests in"
echo "== single-target sends: POST /api/notifications?pns=apns&to_tag=alice, ${duration}s, $connections connections"
wrk -t 2 -c "$connections" -d "${duration}s" --latency -s "$work/send.lua" "$base/api/notifications?pns=apns&to_tag=alice" | grep -E "Requests/sec|50%|99%|Non-2xx|requests in"
delivered=$(curl -s "$control/stats" | sed -E 's/.*"apns 200":([0-9]+).*/\1/')
echo "== the sandbox's APNs answered 200 to $delivered notifications"
