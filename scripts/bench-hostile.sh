#!/usr/bin/env bash
# What the hostile-findings fixes (issue 39) cost and save, each figure beside a reference measured
# in the same run, on this machine, against `pushgate sandbox`:
#
#  5. push-service answers capped at 64 KiB: the gateway's VmRSS / RssAnon / VmHWM (/proc/PID/status)
#     idle, after 24 ordinary sends (the reference), then after 4 and after 24 sends whose push
#     service pads its 2xx answer with PAD_BYTES spaces (the sandbox's padBody fault), for Web Push
#     and for APNs. Every send must answer Success once (a cut 2xx is still a delivery, never retried).
#     Before the fix: four 100 MB answers took the gateway from 63 to 530 MiB.
#  6. password checks on a pool of their own: GET /healthz p50/p90/p99 (wrk --latency, 4 connections,
#     15 s) alone, then while 8 connections send wrong-password logins (GET /api/notifications/x):
#     (a) each under a user name not tried before (each one a PBKDF2 check: an unknown name is
#     checked against a dummy hash of the same cost) and (b) one fixed header, carol with a wrong
#     password (throttled after 5 failures); the wrong logins' answers counted by status
#     (401/429/503). The users (alice … frank, password = name) are configured with PBKDF2 hashes
#     (`pushgate users hash`, 210,000 iterations): the sandbox's demo rule is a comparison and makes
#     no check at all. Before the fix: /healthz p90 2.3 s during 8 wrong-login streams.
# 10. /healthz on PostgreSQL answered from the health monitor's last probe: GET /healthz req/s at 32
#     connections (wrk, 10 s) with the SQLite store and with the PostgreSQL store (a throwaway
#     cluster, scripts/postgres.sh, fsync on), and the gateway's PostgreSQL logins (log_connections).
#     Before the fix: 294/s on PostgreSQL, 11,500/s on SQLite.
#  9. caps on registrations per user: (a) registration upserts, PUT /api/register/{id} of one
#     registration at 32 connections (wrk, 10 s, as scripts/bench-all.sh) beside /healthz of the same
#     run and the last figures in Benchmarks/results (before the caps). An update is no new
#     registration, so (a) does not count the cap; (b) new registrations do: per connection (8),
#     cycles of POST /api/register, PUT (new) and DELETE by a user holding 960 registrations (frank:
#     the count reads 960 rows and more of the cap's 1,000; each run leaves at most one registration
#     per connection) beside one holding 10 (erin). SQLite and PostgreSQL.
#
# Before each measurement it waits while a Swift build or test runs (swift-frontend, swift-build,
# swift-test, swift-package, a .xctest) or the CPUs are busy with something else (over 20% for 2 s
# while this script's processes rest), and prints whether the machine was idle.
# It never builds: it uses a release binary.
#
#   scripts/bench-hostile.sh | tee Benchmarks/results/bench-hostile-$(date +%F).txt
#
# Environment: PUSHGATE_BIN (default .build/release/pushgate), PUSHGATE_BENCH_OUT (JSON, default
# .build/bench/bench-hostile.json), PUSHGATE_BENCH_PAD_BYTES (104857600), PUSHGATE_BENCH_IDLE_TIMEOUT
# (seconds to wait for a build before measuring anyway, marked "NOT idle"; 1800),
# PUSHGATE_BENCH_BUSY_PERCENT (CPU busy over 2 s that counts as not idle; 20).
# Needs wrk (installed with apt when missing), python3 and PostgreSQL (scripts/setup.sh --postgres).
# Exits non-zero when a figure is implausible (0 req/s, non-2xx where 2xx are expected, a send that
# is not one Success) or contradicts a fix (the limits are printed with the verdict).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bin=${PUSHGATE_BIN:-$root/.build/release/pushgate}
out=${PUSHGATE_BENCH_OUT:-$root/.build/bench/bench-hostile.json}
pad_bytes=${PUSHGATE_BENCH_PAD_BYTES:-104857600}
idle_timeout=${PUSHGATE_BENCH_IDLE_TIMEOUT:-1800}
busy_limit=${PUSHGATE_BENCH_BUSY_PERCENT:-20}

[ -x "$bin" ] || { echo "bench-hostile: no release binary at $bin (scripts/build-release.sh)" >&2; exit 1; }
command -v wrk >/dev/null || {
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends wrk >&2
}
ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || scripts/setup.sh --postgres >&2
mkdir -p "$(dirname "$out")"

work=$(mktemp -d)
pg_dir=""
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  [ -z "$pg_dir" ] || scripts/postgres.sh stop "$pg_dir"
  rm -rf "$work"
}
trap cleanup EXIT
# A process that has ended leaves the list (its id may be reused by another's).
forget() {
  local kept=() pid
  for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
  pids=("${kept[@]}")
}
results=$work/results.txt
: > "$results"
# A copy of the binary: a release build finishing meanwhile does not change it under the run.
binary_date=$(date -u -r "$bin" '+%Y-%m-%d %H:%M UTC')
cp "$bin" "$work/pushgate"
binary_path=$bin
bin=$work/pushgate
say() { echo "$*"; }
fail() { echo "bench-hostile: $*" >&2; exit 1; }
record() { echo "$1=$2" >> "$results"; say "  $1 = $2"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() {
  for _ in $(seq 1 200); do [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ] && return 0; sleep 0.1; done
  fail "nothing answers 200 at $1"
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
status_kib() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# Percent of all CPUs busy over 2 s (/proc/stat).
cpu_busy_percent() {
  local before after
  before=$(head -n 1 /proc/stat); sleep 2; after=$(head -n 1 /proc/stat)
  printf '%s\n%s\n' "$before" "$after" | awk '{ idle = $5 + $6; total = 0; for (i = 2; i <= 9; i++) total += $i }
    NR == 1 { i0 = idle; t0 = total } NR == 2 { printf "%.0f", 100 * (1 - (idle - i0) / (total - t0)) }'
}
build_pattern='swift-frontend|swift-build|swift-test|swift-package|\.xctest'
# Waits (polling every 10 s) while a Swift build or test runs (swift-frontend, swift-build,
# swift-test, swift-package, a .xctest bundle) or the CPUs are more than busy_limit % busy while
# this script's processes rest; records whether the machine was idle.
wait_idle() {
  local name=$1 waited=0 builder busy
  while :; do
    builder=$(pgrep -af "$build_pattern" | head -n 1 | cut -c1-100 || true)
    busy=$(cpu_busy_percent)
    [ -z "$builder" ] && [ "$busy" -le "$busy_limit" ] && break
    if [ "$waited" -ge "$idle_timeout" ]; then
      say "  [$name] machine NOT idle after ${waited} s (${builder:-no Swift process}; CPU ${busy}% busy): measuring anyway, figures distorted"
      echo "idle.$name=no" >> "$results"
      return
    fi
    [ "$waited" -eq 0 ] && say "  [$name] waiting: ${builder:-no Swift process}; CPU ${busy}% busy"
    sleep 10
    waited=$((waited + 10))
  done
  say "  [$name] machine idle: yes (no Swift build or test; CPU ${busy}% busy over 2 s; waited ${waited} s; load average $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "idle.$name=yes" >> "$results"
}

# Watches for a Swift build or test starting during a measurement (polls every second).
watch_start() {
  : > "$work/watch"
  ( while :; do pgrep -af "$build_pattern" | cut -c1-100 >> "$work/watch" || true; sleep 1; done ) &
  watcher=$!
  pids+=("$watcher")
}
watch_stop() {
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  forget "$watcher"
  [ -s "$work/watch" ] || return 0
  say "  [$1] a Swift build or test started during the measurement: $(head -n 1 "$work/watch")"
  return 1
}
# Runs a measurement ("$@") on an idle machine; again, up to 3 times in all, when a Swift build or
# test started meanwhile (then marked "disturbed" if every attempt was).
measure() {
  local name=$1 attempt
  shift
  for attempt in 1 2 3; do
    wait_idle "$name"
    watch_start
    "$@"
    watch_stop "$name" && return 0
  done
  say "  [$name] DISTURBED: a Swift build or test ran during every attempt"
  echo "idle.$name=disturbed" >> "$results"
}

# wrk's summary: "rps p50_ms p90_ms p99_ms non_2xx requests" (latencies in milliseconds).
wrk_summary() {
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /m$/) return v * 60000; if (v ~ /s$/) return v * 1000; return v }
    $1 == "50%" { p50 = ms($2) } $1 == "90%" { p90 = ms($2) } $1 == "99%" { p99 = ms($2) }
    /Requests\/sec/ { rps = $2 } /Non-2xx/ { non = $5 } / requests in / { n = $1 }
    END { printf "%.0f %.2f %.2f %.2f %d %d\n", rps, p50, p90, p99, non, n }' "$1"
}
# Records a wrk run's figures under `prefix`.
record_wrk() {
  local prefix=$1 file=$2 rps p50 p90 p99 non n
  read -r rps p50 p90 p99 non n < <(wrk_summary "$file")
  record "$prefix.per_second" "$rps"
  record "$prefix.p50_ms" "$p50"
  record "$prefix.p90_ms" "$p90"
  record "$prefix.p99_ms" "$p99"
  record "$prefix.requests" "$n"
  record "$prefix.non_2xx" "$non"
}

# ---------------------------------------------------------------------------------------------
# The sandbox, and gateway configurations on it: PBKDF2 users alice … frank (password = name),
# the demo rule off; one store per gateway.
say "# bench-hostile $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
say "# binary: $binary_path (built $binary_date); the checkout's HEAD: $(git rev-parse --short HEAD)"
"$bin" sandbox --dir "$work/sandbox" --gateway-port 0 --gateway-tls-port=-1 > "$work/sandbox.out" 2> "$work/sandbox.err" &
sandbox_pid=$!
pids+=("$sandbox_pid")
for _ in $(seq 1 100); do grep -q '^ *gateway ' "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
control=$(awk '$1 == "control" { print $2 }' "$work/sandbox.out")
[ -n "$control" ] || { cat "$work/sandbox.err" >&2; fail "the sandbox did not start"; }
users=(alice bob carol dave erin frank)
hashes=()
for user in "${users[@]}"; do hashes+=("$(printf '%s' "$user" | "$bin" users hash)"); done
python3 - "$work/sandbox/config.json" "$work/sandbox" "${hashes[@]}" <<'PY'
import json, sys
path, folder, hashes = sys.argv[1], sys.argv[2], sys.argv[3:]
config = json.load(open(path))
config["auth"] = {"users": [{"name": n, "passwordHash": h} for n, h in zip(["alice", "bob", "carol", "dave", "erin", "frank"], hashes)],
                  "admins": [], "demoPasswordEqualsName": False}
for name in ["rss", "load"]:
    config["store"] = {"sqlite": {"path": f"{name}.sqlite"}}
    json.dump(config, open(f"{folder}/config-{name}.json", "w"), indent=2)
PY

# Starts `pushgate serve` on CONFIG (log LOG) on a free port: gateway_pid, base.
start_gateway() {
  local port
  port=$(free_port)
  gateway_log=$2
  (cd "$work/sandbox" && exec "$bin" serve --config "$1" --port "$port" > "$2" 2>&1) &
  gateway_pid=$!
  pids+=("$gateway_pid")
  base="http://127.0.0.1:$port"
  wait_http "$base/healthz"
}
# Stops it, and records how many lines of its log are warnings or errors (the first three shown).
stop_gateway() {
  kill -TERM "$gateway_pid" 2>/dev/null || true
  wait "$gateway_pid" 2>/dev/null || true
  forget "$gateway_pid"
  local name
  name=$(basename "$gateway_log" .log)
  record "logs.$name.warnings_and_errors" "$(awk '$2 == "warning" || $2 == "error" || $2 == "critical"' "$gateway_log" | wc -l)"
  awk '$2 == "warning" || $2 == "error" || $2 == "critical"' "$gateway_log" | head -n 3 | cut -c1-400 | sed 's/^/    /'
}

# A sandbox device of PLATFORM registered for alice through the tutorial API: device_id, device_handle.
register_device() {
  local platform=$1 dev query id body status
  dev=$(curl -sf -X POST "$control/devices" -d "{\"platform\":\"$platform\"}")
  device_id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$dev")
  device_handle=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["handle"])' "$dev")
  # The registration id is asked for with the handle (a browser's: its endpoint); the PUT carries the
  # whole handle (a browser's: the subscription object).
  query=$(python3 -c '
import json, sys, urllib.parse
platform, handle = sys.argv[1], sys.argv[2]
print(urllib.parse.quote(json.loads(handle)["endpoint"] if platform == "browser" else handle, safe=""))' "$platform" "$device_handle")
  id=$(curl -sf -u alice:alice -X POST "$base/api/register?handle=$query" | tr -d '"')
  body=$(python3 -c '
import json, sys
platform, handle = sys.argv[1], sys.argv[2]
print(json.dumps({"Platform": platform, "Handle": json.loads(handle) if platform == "browser" else handle, "Tags": ["news"]}))' "$platform" "$device_handle")
  status=$(curl -s -o "$work/put.out" -w '%{http_code}' -u alice:alice -X PUT -H 'Content-Type: application/json' -d "$body" "$base/api/register/$id")
  [[ "$status" == 2* ]] || fail "registering a $platform device answered $status: $(cat "$work/put.out")"
}
# Answers the sandbox gave PLATFORM's sends so far (its success status: APNs 200, Web Push 201).
sandbox_answers() {
  curl -sf "$control/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], 0))' "$1"
}
inbox_count() { curl -sf "$control/devices/$1/inbox" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
# One send from bob to alice's PLATFORM devices; it must be one Success. Prints its seconds.
send_once() {
  local platform=$1 status
  status=$(curl -s -o "$work/send.json" -w '%{http_code} %{time_total}' -u bob:bob -X POST -H 'Content-Type: application/json' \
    -d '"Hello, Alice"' "$base/api/notifications?pns=$platform&to_tag=alice")
  python3 - "$work/send.json" "$platform" "${status%% *}" <<'PY' || fail "a $platform send was not one Success: HTTP ${status%% *} $(cat "$work/send.json")"
import json, sys
answer, platform, http = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
outcomes = [p.get("outcomes") for p in answer.get("platforms", []) if p.get("platform") == platform]
ok = http == "200" and answer.get("success") == 1 and answer.get("failure") == 0 and outcomes == [{"Success": 1}]
sys.exit(0 if ok else 1)
PY
  echo "${status#* }"
}
# VmRSS, RssAnon and VmHWM of the gateway under `prefix` (MiB).
record_memory() {
  record "$1.vmrss_mib" "$(mib "$(status_kib "$gateway_pid" VmRSS)")"
  record "$1.rssanon_mib" "$(mib "$(status_kib "$gateway_pid" RssAnon)")"
  record "$1.vmhwm_mib" "$(mib "$(status_kib "$gateway_pid" VmHWM)")"
}

# ---------------------------------------------------------------------------------------------
say ""
say "== finding 5: gateway memory, push-service answers padded with $pad_bytes bytes (cap: 64 KiB per answer)"
start_gateway "$work/sandbox/config-rss.json" "$work/gateway-rss.log"
sleep 2
wait_idle f5
record_memory f5.idle
for platform in browser apns; do
  service=$platform
  success_key="$platform $([ "$platform" = apns ] && echo 200 || echo 201)"
  register_device "$platform"
  answers_before=$(sandbox_answers "$success_key")
  wait_idle "f5.$platform"
  # The reference: 24 ordinary sends (the curl pool, TLS and HTTP/2 state warmed up).
  for _ in $(seq 1 24); do send_once "$platform" >/dev/null; done
  record_memory "f5.$platform.after_24_plain"
  sent=24
  for batch in 4 20; do
    curl -sf -o /dev/null -X POST "$control/faults" \
      -d "{\"service\":\"$service\",\"handle\":$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$device_handle"),\"count\":$batch,\"action\":{\"padBody\":{\"bytes\":$pad_bytes}}}"
    slowest=0
    for _ in $(seq 1 "$batch"); do
      seconds=$(send_once "$platform")
      slowest=$(awk -v a="$slowest" -v b="$seconds" 'BEGIN { print (b > a ? b : a) }')
    done
    sent=$((sent + batch))
    padded=$((sent - 24))
    record_memory "f5.$platform.after_${padded}_padded"
    record "f5.$platform.after_${padded}_padded.slowest_send_s" "$slowest"
  done
  # Each send reached the service once (no retry) and the device once.
  answered=$(( $(sandbox_answers "$success_key") - answers_before ))
  received=$(inbox_count "$device_id")
  record "f5.$platform.sends" "$sent"
  record "f5.$platform.service_answers" "$answered"
  record "f5.$platform.inbox" "$received"
  [ "$answered" -eq "$sent" ] && [ "$received" -eq "$sent" ] \
    || fail "$platform: $sent sends, but the service answered $answered requests and the device holds $received"
done
# The padding was really made: the sandbox held at least one padded answer.
record "f5.sandbox.vmhwm_mib" "$(mib "$(status_kib "$sandbox_pid" VmHWM)")"
stop_gateway

# ---------------------------------------------------------------------------------------------
# wrk scripts. Each ends with counter.lua: every answer counted by status ("statuses: 200=… 401=…"),
# and `created` (registrations a cycle created) summed over the threads.
cat > "$work/counter.lua" <<'LUA'
local threads = {}
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
function init(args) statuses = {}; created = 0 end
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if on_response then on_response(status, body) end
end
function done(summary, latency, requests)
  local total, made = {}, 0
  for _, t in ipairs(threads) do
    for code, n in pairs(t:get("statuses")) do total[code] = (total[code] or 0) + n end
    made = made + t:get("created")
  end
  local parts = {}
  for code, n in pairs(total) do table.insert(parts, code .. "=" .. n) end
  table.sort(parts)
  io.write("statuses: " .. table.concat(parts, " ") .. "\n")
  io.write("created: " .. made .. "\n")
end
LUA
base64_lua='
local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
function base64(data)
  return ((data:gsub(".", function(x)
    local r, b = "", x:byte()
    for i = 8, 1, -1 do r = r .. (b % 2 ^ i - b % 2 ^ (i - 1) > 0 and "1" or "0") end
    return r
  end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(x)
    if #x < 6 then return "" end
    local c = 0
    for i = 1, 6 do c = c + (x:sub(i, i) == "1" and 2 ^ (6 - i) or 0) end
    return chars:sub(c + 1, c + 1)
  end) .. ({ "", "==", "=" })[#data % 3 + 1])
end'
# Wrong-password logins at a route that needs a login: FIXED_NAME, or a name not tried before each time.
wrong_logins_lua() {
  { echo "FIXED_NAME = $1"; echo "$base64_lua"; cat <<'LUA'
local counter = 0
function request()
  counter = counter + 1
  local name = FIXED_NAME or ("guesser" .. tid .. "x" .. counter)
  return wrk.format("GET", "/api/notifications/x", { ["Authorization"] = "Basic " .. base64(name .. ":wrong-password") })
end
LUA
    cat "$work/counter.lua"; } > "$2"
}
wrong_logins_lua nil "$work/wrong-distinct.lua"
wrong_logins_lua '"carol"' "$work/wrong-fixed.lua"

# The statuses wrk counted (from counter.lua) recorded as prefix.status_CODE; the 2xx among them.
record_statuses() {
  local prefix=$1 file=$2 line code n
  line=$(sed -n 's/^statuses: //p' "$file")
  [ -n "$line" ] || fail "wrk counted no statuses in $file: $(cat "$file")"
  for pair in $line; do
    code=${pair%=*}; n=${pair#*=}
    record "$prefix.status_$code" "$n"
  done
}

# ---------------------------------------------------------------------------------------------
say ""
say "== finding 6: GET /healthz latency (wrk, 4 connections, 15 s), alone and during 8 connections of wrong logins"
# erin and frank hold 10 and 960 registrations (for finding 9's cap check, below): imported first.
python3 - > "$work/prefill.jsonl" <<'PY'
import json
for owner, count, base in [("erin", 10, 0), ("frank", 960, 1000)]:
    for i in range(count):
        print(json.dumps({"id": "prefill%09d" % (base + i), "platform": "apns", "handle": "%064x" % (base + i + 1),
                          "tags": ["username:" + owner, "news"], "owner": owner}))
PY
(cd "$work/sandbox" && "$bin" registrations import --config "$work/sandbox/config-load.json" "$work/prefill.jsonl" > /dev/null)
start_gateway "$work/sandbox/config-load.json" "$work/gateway-sqlite.log"
# The users of the later runs log in once (verified credentials are remembered for 5 minutes:
# no check on their later requests).
for user in alice bob erin frank; do curl -s -o /dev/null -u "$user:$user" "$base/api/notifications/x"; done

healthz_alone() { wrk -t 1 -c 4 -d 15s --latency "$base/healthz" > "$work/healthz-alone.txt"; }
# The wrong logins start 2 s before /healthz is measured and end after it.
healthz_during_wrong_logins() {
  local kind=$1 storm
  wrk -t 2 -c 8 -d 19s --latency -s "$work/wrong-$kind.lua" "$base/" > "$work/wrong-$kind.txt" &
  storm=$!
  pids+=("$storm")
  sleep 2
  wrk -t 1 -c 4 -d 15s --latency "$base/healthz" > "$work/healthz-$kind.txt"
  wait "$storm" || fail "wrk (wrong logins, $kind) failed"
  forget "$storm"
}
measure f6.alone healthz_alone
record_wrk f6.healthz_alone "$work/healthz-alone.txt"
for kind in distinct fixed; do
  measure "f6.$kind" healthz_during_wrong_logins "$kind"
  record_wrk "f6.healthz_during_$kind" "$work/healthz-$kind.txt"
  record "f6.wrong_$kind.per_second" "$(wrk_summary "$work/wrong-$kind.txt" | cut -d' ' -f1)"
  record_statuses "f6.wrong_$kind" "$work/wrong-$kind.txt"
done
# A right password still gets in after the storms: dave, who has not logged in yet (a PBKDF2 check
# on the pool). 503 means "try again in 1 s".
right_status=000
for _ in $(seq 1 10); do
  right_status=$(curl -s -o /dev/null -w '%{http_code}' -u dave:dave "$base/api/notifications/x")
  [ "$right_status" = 503 ] || break
  sleep 1
done
record "f6.right_login_after.status" "$right_status"

# ---------------------------------------------------------------------------------------------
say ""
say "== findings 10 and 9: /healthz and registration writes (wrk, 10 s each), SQLite then PostgreSQL"
# Upserts as scripts/bench-all.sh makes them: alice's one registration PUT again and again, 32
# connections. An update is no new registration: the cap is not counted.
upsert_lua() {
  local id body status
  id=$(curl -sf -u alice:alice -X POST "$base/api/register" | tr -d '"')
  [ -n "$id" ] || fail "no registration id"
  # Written once first (as scripts/bench-gateway.sh does): concurrent first writes of a reserved id
  # race on PostgreSQL (a write that saw no registration, then no reservation, answers 410).
  body="{\"Platform\":\"apns\",\"Handle\":\"$(printf 'cd%.0s' $(seq 1 32))\",\"Tags\":[\"news\"]}"
  status=$(curl -s -o /dev/null -w '%{http_code}' -u alice:alice -X PUT -H 'Content-Type: application/json' -d "$body" "$base/api/register/$id")
  [[ "$status" == 2* ]] || fail "the first upsert answered $status"
  { cat <<LUA
wrk.method = "PUT"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Basic $(printf 'alice:alice' | base64)"
LUA
    cat "$work/counter.lua"; } > "$work/upsert.lua"
  upsert_url="$base/api/register/$id"
}
# New registrations, where the cap is counted (the user's registrations, up to the cap of 1,000):
# per connection, cycles of POST /api/register (an id), PUT (a new registration, a new handle) and
# DELETE; USER holds 10 (erin) or 960 (frank) registrations besides the ones in flight and left over.
cycle_lua() {
  local prefix
  prefix=$(printf '%s' "$1" | sha256sum | cut -c1-8)
  { echo "AUTH = \"Basic $(printf '%s:%s' "$1" "$1" | base64)\""; echo "PREFIX = \"$prefix\""; cat <<'LUA'
local step, id, counter = 0, nil, 0
function request()
  if step == 0 then return wrk.format("POST", "/api/register", { ["Authorization"] = AUTH }) end
  if step == 1 then
    counter = counter + 1
    local handle = PREFIX .. string.format("%08x%08x", tid, counter) .. string.rep("e", 40)
    return wrk.format("PUT", "/api/register/" .. id, { ["Authorization"] = AUTH, ["Content-Type"] = "application/json" },
      '{"Platform":"apns","Handle":"' .. handle .. '","Tags":["news"]}')
  end
  return wrk.format("DELETE", "/api/register/" .. id, { ["Authorization"] = AUTH })
end
function on_response(status, body)
  if step == 0 then
    if status == 200 then id = body:gsub('"', ""); step = 1 end
  elseif step == 1 then
    if status >= 200 and status < 300 then created = created + 1; step = 2 else step = 0 end
  else
    step = 0
  end
end
LUA
    cat "$work/counter.lua"; } > "$2"
}
healthz32() {
  [ "$1" != postgres ] || logins_before=$(pg_logins)
  wrk -t 2 -c 32 -d 10s --latency "$base/healthz" > "$work/healthz32-$1.txt"
  [ "$1" != postgres ] || logins_during=$(( $(pg_logins) - logins_before ))
}
upserts() { wrk -t 2 -c 32 -d 10s --latency -s "$work/upsert.lua" "$upsert_url" > "$work/upserts-$1.txt"; }
cycles() { wrk -t 8 -c 8 -d 10s --latency -s "$work/cycle-$2.lua" "$base/" > "$work/cycle-$1-$2.txt"; }
measure_store() {
  local store=$1 user
  measure "f10.$store" healthz32 "$store"
  record_wrk "f10.healthz32_$store" "$work/healthz32-$store.txt"
  if [ "$store" = postgres ]; then record "f10.pg_logins_during_healthz" "$logins_during"; fi
  upsert_lua
  measure "f9.$store" upserts "$store"
  record_wrk "f9.upserts_$store" "$work/upserts-$store.txt"
  record_statuses "f9.upserts_$store" "$work/upserts-$store.txt"
  for user in erin frank; do
    cycle_lua "$user" "$work/cycle-$user.lua"
    measure "f9.$store.$user" cycles "$store" "$user"
    record_wrk "f9.new_${store}_$user" "$work/cycle-$store-$user.txt"
    record_statuses "f9.new_${store}_$user" "$work/cycle-$store-$user.txt"
    record "f9.new_${store}_$user.created_per_second" "$(awk '/^created:/ { printf "%.0f", $2 / 10 }' "$work/cycle-$store-$user.txt")"
  done
}
measure_store sqlite
stop_gateway

pg_dir=$(mktemp -d /tmp/pushgate-bench-pg.XXXXXX)  # outside $work: the postgres user must reach it
pg_url=$(scripts/postgres.sh start "$pg_dir" --durable)
# Every login to the server is logged (for sessions that start after the reload).
psql -qtA "$pg_url" -c "ALTER SYSTEM SET log_connections = on" -c "SELECT pg_reload_conf()" >/dev/null
python3 - "$work/sandbox/config-load.json" "$work/sandbox/config-pg.json" "$pg_url" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["store"] = {"postgres": {"url": sys.argv[3], "poolSize": 8}}
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
# The gateway's logins (psql's, which this script makes, are not counted).
pg_logins() { grep 'connection authorized' "$pg_dir/server.log" | grep -vc 'application_name=psql' || true; }
(cd "$work/sandbox" && "$bin" registrations import --config "$work/sandbox/config-pg.json" "$work/prefill.jsonl" > /dev/null)
import_logins=$(pg_logins)
start_gateway "$work/sandbox/config-pg.json" "$work/gateway-postgres.log"
for user in alice bob erin frank; do curl -s -o /dev/null -u "$user:$user" "$base/api/notifications/x"; done
record "f10.pg_logins_gateway_start" "$(( $(pg_logins) - import_logins ))"
measure_store postgres
record "f10.pg_logins_gateway_total" "$(( $(pg_logins) - import_logins ))"
stop_gateway
scripts/postgres.sh stop "$pg_dir"
pg_dir=""

# The last upsert figures in Benchmarks/results, before the caps (same wrk; other runs, other code):
# the group-commit A/B on an empty store, and the 1,000,000-registration store with its /healthz.
previous_file=Benchmarks/results/bench-upserts-group-commit-2026-11-25.txt
if [ -f "$previous_file" ]; then
  record "f9.previous_empty_store.source" "$previous_file"
  record "f9.previous_empty_store.per_second" "$(awk '/^after/ { printf "%s%s", sep, $3; sep = "," }' "$previous_file")"
  record "f9.previous_empty_store.p99_ms" "$(awk '/^after/ { v = $NF; sub(/ms$/, "", v); printf "%s%s", sep, v; sep = "," }' "$previous_file")"
fi
previous_file=Benchmarks/results/bench-cluster-2026-11-25.txt
if grep -q '^# upserts, two rounds:' "$previous_file" 2>/dev/null; then
  record "f9.previous_1m_store.source" "$previous_file"
  record "f9.previous_1m_store.line" "$(sed -n 's/^# upserts, two rounds: //p' "$previous_file")"
fi
# ---------------------------------------------------------------------------------------------
say ""
python3 - "$results" "$out" "$pad_bytes" <<'PY'
import json, os, sys, time
path, out, pad = sys.argv[1], sys.argv[2], int(sys.argv[3])
raw = {}
for line in open(path):
    key, _, value = line.rstrip("\n").partition("=")
    raw[key] = value
def num(key):
    try: return float(raw[key])
    except (KeyError, ValueError): return None
def value(text):
    try: return int(text)
    except ValueError: pass
    try: return float(text)
    except ValueError: return text
def nested(prefix):
    tree = {}
    for key, text in raw.items():
        if not key.startswith(prefix): continue
        node, parts = tree, key[len(prefix):].split(".")
        for part in parts[:-1]: node = node.setdefault(part, {})
        node[parts[-1]] = value(text)
    return tree
summary = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(), "pad_bytes": pad,
           "finding5": nested("f5."), "finding6": nested("f6."), "finding10": nested("f10."), "finding9": nested("f9."),
           "logs": nested("logs."), "idle": {k[5:]: v for k, v in raw.items() if k.startswith("idle.")}}
json.dump(summary, open(out, "w"), indent=2)

def statuses(prefix):
    return {k[len(prefix) + 8:]: int(v) for k, v in raw.items() if k.startswith(prefix + ".status_")}
def wrong(kind):
    s = statuses(f"f6.wrong_{kind}")
    other = sum(n for code, n in s.items() if code not in ("401", "429", "503"))
    return s, other
rows = []
def mem(key): return f"{raw.get(key + '.vmrss_mib')} / {raw.get(key + '.rssanon_mib')} / {raw.get(key + '.vmhwm_mib')}"
rows.append(("5. gateway idle after start (MiB: VmRSS / RssAnon / VmHWM)", mem("f5.idle"), "", "before the fix: 63 MiB"))
for platform, name in [("browser", "Web Push"), ("apns", "APNs")]:
    ref = "after 24 plain sends " + mem(f"f5.{platform}.after_24_plain")
    rows.append((f"5. {name}: after 4 answers padded by {pad / 2**20:.0f} MiB", mem(f"f5.{platform}.after_4_padded"), ref, "before the fix: 530 MiB after 4"))
    rows.append((f"5. {name}: after 24 padded answers", mem(f"f5.{platform}.after_24_padded"), ref,
                 f"all Success, delivered once; slowest {raw.get(f'f5.{platform}.after_24_padded.slowest_send_s')} s"))
def lat(key): return f"{raw.get(key + '.p50_ms')} / {raw.get(key + '.p90_ms')} / {raw.get(key + '.p99_ms')}"
for kind, label in [("distinct", "a new user name each"), ("fixed", "one header, carol:wrong")]:
    s, other = wrong(kind)
    rows.append((f"6. /healthz p50 / p90 / p99 (ms) during 8 conn. of wrong logins, {label}", lat(f"f6.healthz_during_{kind}"),
                 "alone " + lat("f6.healthz_alone"), "before the fix: p90 2,300 ms" if kind == "distinct" else ""))
    rows.append(("6.   /healthz req/s; the wrong logins: per s, 401 / 429 / 503 / other",
                 f"{raw.get(f'f6.healthz_during_{kind}.per_second')}; {raw.get(f'f6.wrong_{kind}.per_second')}/s, "
                 f"{s.get('401', 0)} / {s.get('429', 0)} / {s.get('503', 0)} / {other}", f"alone {raw.get('f6.healthz_alone.per_second')}", ""))
rows.append(("10. /healthz req/s, 32 conn., PostgreSQL store (p99 ms)", f"{raw.get('f10.healthz32_postgres.per_second')} ({raw.get('f10.healthz32_postgres.p99_ms')})",
             f"SQLite {raw.get('f10.healthz32_sqlite.per_second')} ({raw.get('f10.healthz32_sqlite.p99_ms')})", "before the fix: 294 vs 11,500"))
rows.append(("10.   PostgreSQL logins: during those 10 s / at start / gateway total", f"{raw.get('f10.pg_logins_during_healthz')} / {raw.get('f10.pg_logins_gateway_start')} / {raw.get('f10.pg_logins_gateway_total')}",
             "", "pool of 8 + the health monitor's 1"))
previous = raw.get("f9.previous_empty_store.per_second", "n/a")
for store, name in [("sqlite", "SQLite"), ("postgres", "PostgreSQL")]:
    rows.append((f"9. upserts (one registration, PUT again), 32 conn., {name}: per s (p99 ms)", f"{raw.get(f'f9.upserts_{store}.per_second')} ({raw.get(f'f9.upserts_{store}.p99_ms')})",
                 f"/healthz {raw.get(f'f10.healthz32_{store}.per_second')}",
                 f"before the caps, empty store: {previous} (p99 {raw.get('f9.previous_empty_store.p99_ms', 'n/a')})" if store == "sqlite" else ""))
    rows.append((f"9. new registrations (POST+PUT+DELETE), 8 conn., {name}: per s, user holding 960 (p99 ms)",
                 f"{raw.get(f'f9.new_{store}_frank.created_per_second')} ({raw.get(f'f9.new_{store}_frank.p99_ms')})",
                 f"holding 10: {raw.get(f'f9.new_{store}_erin.created_per_second')} ({raw.get(f'f9.new_{store}_erin.p99_ms')})", "the cap counts up to 1,000 rows"))
if raw.get("f9.previous_1m_store.line"):
    rows.append(("9. previous upserts, 1,000,000-registration store (bench-cluster)", raw["f9.previous_1m_store.line"], "", ""))
header = ("figure", "measured", "reference (same run)", "note")
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(4)]
print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows: print("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |")
not_idle = [k for k, v in summary["idle"].items() if v != "yes"]
print(f"\nmachine idle before every measurement: {'yes' if not not_idle else 'NO (' + ', '.join(not_idle) + ')'}; JSON: {out}")

# Implausible figures void the run; figures that contradict a fix are reported as such.
problems = []
for key in [k for k in raw if k.endswith("per_second") and not k.startswith("f9.previous")]:
    if not num(key): problems.append(f"{key} is {raw[key]}: nothing was measured")
for key in ["f6.healthz_alone", "f6.healthz_during_distinct", "f6.healthz_during_fixed", "f10.healthz32_sqlite",
            "f10.healthz32_postgres", "f9.upserts_sqlite", "f9.upserts_postgres"]:
    if num(key + ".non_2xx"): problems.append(f"{key}: {raw[key + '.non_2xx']} answers were not 2xx {statuses(key) or ''}")
for store in ["sqlite", "postgres"]:
    for user in ["erin", "frank"]:
        bad = {c: n for c, n in statuses(f"f9.new_{store}_{user}").items() if not c.startswith("2")}
        if bad: problems.append(f"f9.new_{store}_{user}: answers other than 2xx: {bad}")
for kind in ["distinct", "fixed"]:
    s, other = wrong(kind)
    if not sum(s.values()): problems.append(f"f6.wrong_{kind}: no wrong login was answered")
    if other: problems.append(f"f6.wrong_{kind}: wrong logins answered other than 401/429/503: {s}")
if raw.get("f6.right_login_after.status") in ("401", "429", "503", "000"):
    problems.append(f"dave's right password after the storms was answered {raw.get('f6.right_login_after.status')}")
if (num("f5.sandbox.vmhwm_mib") or 0) * 2**20 < pad:
    problems.append(f"the sandbox never held a padded answer (its peak RSS {raw.get('f5.sandbox.vmhwm_mib')} MiB < {pad} bytes)")
contradictions = []
for platform in ["browser", "apns"]:
    before = num(f"f5.{platform}.after_24_plain.vmrss_mib") or 0
    grown = max((num(f"f5.{platform}.after_24_padded.vmrss_mib") or 0), (num(f"f5.{platform}.after_24_padded.vmhwm_mib") or 0)) - before
    if grown > 64:
        contradictions.append(f"finding 5 ({platform}): 24 padded answers grew the gateway by {grown:.0f} MiB (> 64 MiB)")
alone, during = num("f6.healthz_alone.p90_ms") or 0, num("f6.healthz_during_distinct.p90_ms") or 0
if during > max(100, 10 * alone):
    contradictions.append(f"finding 6: /healthz p90 {during:.1f} ms during wrong logins (alone {alone:.2f} ms; limit max(100 ms, 10x))")
sqlite, pg = num("f10.healthz32_sqlite.per_second") or 0, num("f10.healthz32_postgres.per_second") or 0
if sqlite and pg < 0.5 * sqlite:
    contradictions.append(f"finding 10: /healthz on PostgreSQL {pg:.0f}/s, under half of SQLite's {sqlite:.0f}/s")
if (num("f10.pg_logins_during_healthz") or 0) > 1:
    contradictions.append(f"finding 10: {raw['f10.pg_logins_during_healthz']} PostgreSQL logins during 10 s of /healthz (at most one replacement expected)")
for c in contradictions: print("CONTRADICTS THE FIX: " + c)
if problems:
    print("\nbench-hostile: IMPLAUSIBLE RESULTS, the figures above are void:")
    for p in problems: print("  - " + p)
if problems or contradictions: sys.exit(1)
print("all checks passed: every send one Success and delivered once, no non-2xx where 2xx are expected, no figure contradicts a fix")
PY

