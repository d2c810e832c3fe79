#!/usr/bin/env bash
# Measures the production-core figures docs/performance.md quotes, on the release binary
# against the local sandbox (nothing leaves 127.0.0.1):
#   - idle RSS after start-up;
#   - RSS after 200,000 requests with distinct random user names (wrk);
#   - GET /api/registrations?limit=5 as a user with 1,000 of 1,000,000 registrations, and a send to a
#     user with no devices, both while a 200,000-target broadcast runs;
#   - the exit time of `pushgate serve` on SIGTERM with that broadcast in flight.
#
#   scripts/measure-core.sh            # builds the release binary first (or PUSHGATE_BIN=path)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null; }
if [ -n "${PUSHGATE_BIN:-}" ]; then
  bin="$PUSHGATE_BIN"
else
  scripts/build-release.sh >/dev/null
  bin="$(swift build -c release --show-bin-path)/pushgate"
fi
work=$(mktemp -d /tmp/pushgate-measure-XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

"$bin" sandbox --dir "$work/sandbox" --gateway-port 0 >"$work/sandbox.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -f "$work/sandbox/config.json" ] && break; sleep 0.1; done
sleep 1
config="$work/sandbox/config.json"
python3 - "$config" <<'PY'
import json, sys
path = sys.argv[1]
c = json.load(open(path))
c["listener"]["shutdownDeadlineSeconds"] = 5
json.dump(c, open(path, "w"))
PY
store=$(python3 -c "import json,sys,os; c=json.load(open('$config')); p=c['store']['sqlite']['path']; print(p if p.startswith('/') else os.path.join(os.path.dirname('$config'), p))")

echo "== 1,000,000 registrations (1,000 users; 200,000 carry 'common')"
"$bin" registrations list --config "$config" --limit 1 >/dev/null  # creates and migrates the store
sqlite3 "$store" <<'SQL'
PRAGMA journal_mode = WAL;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999)
INSERT INTO registrations (app, id, platform, handle, owner, template, expires_at, created_at, updated_at)
SELECT 'default', printf('r%08d', i), 'apns', printf('%064x', i + 1), 'u' || (i % 1000), NULL, NULL, 0, 0 FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999)
INSERT INTO registration_tags (app, tag, id) SELECT 'default', 'username:u' || (i % 1000), printf('r%08d', i) FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199999)
INSERT INTO registration_tags (app, tag, id) SELECT 'default', 'common', printf('r%08d', i * 5) FROM n;
COMMIT;
SQL

"$bin" serve --config "$config" --port 0 >"$work/serve.log" 2>&1 &
serve=$!
pids+=($serve)
for _ in $(seq 100); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
port=$(grep -o "listening on http://127.0.0.1:[0-9]*" "$work/serve.log" | grep -o "[0-9]*$")
base="http://127.0.0.1:$port"
rss() { awk '/VmRSS/ {print $2 / 1024 " MB"}' "/proc/$serve/status"; }
sleep 1
echo "idle RSS: $(rss)"

echo "== 200,000 requests with distinct random user names"
cat >"$work/base64.lua" <<'LUA'
-- base64 by hand: wrk's Lua has no library for it
local alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
function base64(data)
  return ((data:gsub('.', function(x)
    local r, byte = '', x:byte()
    for i = 8, 1, -1 do r = r .. (byte % 2 ^ i - byte % 2 ^ (i - 1) > 0 and '1' or '0') end
    return r
  end) .. '0000'):gsub('%d%d%d?%d?%d?%d?', function(x)
    if #x < 6 then return '' end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == '1' and 2 ^ (6 - i) or 0) end
    return alphabet:sub(c + 1, c + 1)
  end) .. ({ '', '==', '=' })[#data % 3 + 1])
end
done = function(summary, latency, requests)
  io.write(string.format("requests %d, p99 %.1f ms\n", summary.requests, latency:percentile(99) / 1000))
end
LUA
{ cat "$work/base64.lua"; cat <<'LUA'
local counter = 0
request = function()
  counter = counter + 1
  local name = string.format("user-%d-%d", math.random(1, 1000000000), counter)
  return wrk.format("GET", "/api/me", { ["Authorization"] = "Basic " .. base64(name .. ":wrong") })
end
LUA
} >"$work/random-users.lua"
before=$(rss)
wrk -t2 -c32 -d60s --timeout 5s -s "$work/random-users.lua" "$base" 2>&1 | grep -E "requests|Requests/sec|Non-2xx" | head -4 &
wrkpid=$!
sleep 62
wait $wrkpid || true
echo "RSS before the flood: $before, after: $(rss)"
curl -s -o /dev/null -w "healthz after the flood: %{http_code} in %{time_total} s\n" "$base/healthz"

echo "== 200 connections mixing reservations, sends and listings for 60 s"
{ cat "$work/base64.lua"; cat <<'LUA'
local n = 0
request = function()
  n = n + 1
  local user = "soak" .. (n % 500)
  local headers = { ["Authorization"] = "Basic " .. base64(user .. ":" .. user), ["Content-Type"] = "application/json" }
  local kind = n % 3
  if kind == 0 then return wrk.format("POST", "/api/register", headers) end
  if kind == 1 then return wrk.format("POST", "/api/notifications?pns=all&to_tag=" .. user, headers, '"hello"') end
  return wrk.format("GET", "/api/registrations?limit=5", headers)
end
LUA
} >"$work/mixed.lua"
before=$(rss)
for round in 1 2; do
  wrk -t2 -c200 -d60s --timeout 10s -s "$work/mixed.lua" "$base" 2>&1 | grep -E "^requests|Requests/sec|Socket errors" &
  wrkpid=$!
  for second in 10 30 50; do
    sleep 20
    curl -s -o /dev/null -m 5 -w "healthz during the load: %{http_code} in %{time_total} s\n" "$base/healthz"
  done
  wait $wrkpid || true
  echo "RSS before: $before, after round $round: $(rss)"
done
sleep 10
echo "RSS 10 s after: $(rss)"
echo "answers by status (the gateway's own count):"
curl -s "$base/metrics" | awk '/^pushgate_http_requests_total/ { match($0, /status="[0-9]+"/); s = substr($0, RSTART + 8, RLENGTH - 9); n[s] += $NF } END { for (k in n) print "  " k ": " n[k] }' | sort

echo "== lookups at 1,000,000 rows, nothing else running"
for round in 1 2 3; do
  curl -s -o /dev/null -u u7:u7 -w "GET /api/registrations?limit=5 as u7: %{http_code} in %{time_total} s\n" "$base/api/registrations?limit=5"
  curl -s -o /dev/null -u bob:bob -H 'Content-Type: application/json' -d '"hi"' \
    -w "send to a user with no devices: %{http_code} in %{time_total} s\n" "$base/api/notifications?pns=all&to_tag=nobody"
done

echo "== lookups at 1,000,000 rows while a 200,000-target broadcast runs"
curl -s -o "$work/broadcast.json" -u admin:admin -H 'Content-Type: application/json' -d '"hello"' \
  "$base/api/notifications?pns=apns&tags=common" &
broadcast=$!
sleep 3
for round in 1 2 3; do
  curl -s -o /dev/null -u u7:u7 -w "GET /api/registrations?limit=5 as u7: %{http_code} in %{time_total} s\n" "$base/api/registrations?limit=5"
  curl -s -o /dev/null -u u7:u7 -w "GET /api/registrations?limit=5&tags=username:u7 as u7: %{http_code} in %{time_total} s\n" "$base/api/registrations?limit=5&tags=username:u7"
  curl -s -o /dev/null -u bob:bob -H 'Content-Type: application/json' -d '"hi"' \
    -w "send to a user with no devices: %{http_code} in %{time_total} s\n" "$base/api/notifications?pns=all&to_tag=nobody"
done

echo "== SIGTERM with the broadcast in flight (deadline 5 s)"
start=$(date +%s.%N)
kill -TERM "$serve"
wait "$serve" && status=0 || status=$?
end=$(date +%s.%N)
echo "serve exited with status $status after $(python3 -c "print(round($end - $start, 2))") s"
wait $broadcast || true
python3 - "$work/broadcast.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    print(f"broadcast answered: state {r.get('state')}, success {r.get('success')}, failure {r.get('failure')}, error: {r.get('error')}")
except Exception as e:
    print("broadcast answer unreadable:", e)
PY
