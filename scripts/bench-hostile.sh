#!/usr/bin/env bash
# What the hostile-findings fixes (issues 39 and 54) cost and save, each figure beside a reference
# measured in the same run, on this machine, against `pushgate sandbox`:
#
#  1. a known user's first sign-in during a flood of unknown names (issue 54, finding 1): users
#     alice01 … alice25 (password = name) with PBKDF2 hashes of 210,000 iterations, the demo rule
#     off, a gateway of their own (started afresh for each attempt: verified credentials are
#     remembered for 5 minutes, so each sign-in is a user's first). alice01 … alice05 sign in alone,
#     0.5 s apart (the reference); GET /healthz p50/p90/p99 alone (wrk, 4 connections, 15 s); then
#     16 connections (wrk, 19 s) send wrong logins (GET /api/notifications/x), each under a user
#     name not tried before, while /healthz is measured again (from 2 s to 17 s) and alice06 …
#     alice25 sign in once each (GET /api/me, a new connection each), 0.75 s apart from 2 s on: all
#     from 127.0.0.1, the flood's address. The flood's answers counted by status. Every sign-in must
#     answer 200 with a p99 of at most 2 s, and an unknown name 401 (503 only when more than 4,096
#     wait at once, which 16 connections never reach). Before the fix: 99% of the flood 503 (the
#     password-check pool, 1 thread and 8 places on 2 cores, full of unknown names), and alice
#     answered 503 on 19 of 20 first sign-ins.
#  2. registrations made with the hub's Listen key (issue 54, finding 2): the hub `default`, rule
#     DefaultListenSharedAccessSignature (the key `pushgate sandbox` writes under hub-keys/), a
#     gateway with listener.trustedProxies 127.0.0.1/32 and ::1/128 so that X-Forwarded-For names
#     the client. 2,000 POST /default/registrations (an AppleRegistrationDescription, a new device
#     token each) from 198.51.100.1, 8 connections, counted by status (429s with and without
#     Retry-After); meanwhile 198.51.100.2 creates 3. Then the rows stored (`pushgate registrations
#     export`). At most limits.hubDeviceCreationBurst (10) + limits.hubDeviceCreationsPerMinute
#     (6/min) over the flood's time may be answered 200 for the first address; every creation of the
#     second must be; the rows must be exactly those answered 200. Before the fix: 2,000 answered 200
#     in 2-3 s and 2,000 rows stored.
#  3. registration ids reserved with the Listen key (issue 54, finding 3), same gateway: 8
#     connections of POST /default/registrationIDs from 198.51.100.3 for 10 s, counted by status,
#     while 198.51.100.4 reserves one a second: all 201. At most limits.hubReservationBurst (500) +
#     limits.hubReservationsPerSecond (50/s) over the flood's time may be 201 for the first address;
#     then the reserved ids left in the store and how far ahead they expire (sqlite3, when present).
#     Before the fix: one device got 1,500 ids, then every device using the key got 429.
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
#   PUSHGATE_BENCH_SECTIONS="login listen" scripts/bench-hostile.sh   # sections 1 and 2-3 only
#
# Environment: PUSHGATE_BENCH_SECTIONS (the sections to run, by name, space-separated: login (1),
# listen (2 and 3), memory (5), passwords (6), stores (10 and 9); default all, in that order),
# PUSHGATE_BIN (default .build/release/pushgate), PUSHGATE_BENCH_OUT (JSON, default
# .build/bench/bench-hostile.json), PUSHGATE_BENCH_PAD_BYTES (104857600), PUSHGATE_BENCH_IDLE_TIMEOUT
# (seconds to wait for a build before measuring anyway, marked "NOT idle"; 1800),
# PUSHGATE_BENCH_BUSY_PERCENT (CPU busy over 2 s that counts as not idle; 20).
# Needs wrk (installed with apt when missing), python3 and, for `stores`, PostgreSQL (scripts/setup.sh
# --postgres); section 3 reads the reserved ids with sqlite3 when it is installed.
# Exits non-zero when a figure is implausible (0 req/s, non-2xx where 2xx are expected, a send that
# is not one Success, a flood that never reached its limit) or contradicts a fix (a known user's
# sign-in refused, more 2xx than a burst allows, rows beyond the 2xx answered, the other address
# refused; the limits are printed with the verdict).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
all_sections="login listen memory passwords stores"
sections=${PUSHGATE_BENCH_SECTIONS:-$all_sections}
for section in $sections; do
  [[ " $all_sections " == *" $section "* ]] \
    || { echo "bench-hostile: PUSHGATE_BENCH_SECTIONS: no section '$section' (sections: $all_sections)" >&2; exit 2; }
done
[ -n "${sections// /}" ] || { echo "bench-hostile: PUSHGATE_BENCH_SECTIONS names no section (sections: $all_sections)" >&2; exit 2; }
# Whether section $1 runs.
runs() { [[ " $sections " == *" $1 "* ]]; }
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
! runs stores || ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || scripts/setup.sh --postgres >&2
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
# Sections 1-3's clients (python3, stdlib only). Each prints key=value lines, recorded under a prefix.
cat > "$work/floods.py" <<'PY'
# The flood clients of sections 1-3: stdlib only, 127.0.0.1 only, every loop bounded in count and
# in time (LIMIT_SECONDS). Each mode prints key=value lines (answers by status, latencies in ms).
#   signins BASE FIRST LAST OFFSET SPACING: aliceFIRST … aliceLAST (password = name) sign in once
#     each (GET /api/me, a new connection each: a device's first sign-in), the first OFFSET s after
#     the start, SPACING s apart.
#   create BASE KEY_FILE ADDRESS OTHER COUNT CONNECTIONS OTHER_COUNT: COUNT POST
#     /default/registrations with the Listen key from ADDRESS (X-Forwarded-For), a new device token
#     each, on CONNECTIONS connections; once the flood has 200 answers, OTHER_COUNT more from OTHER.
#   reserve BASE KEY_FILE ADDRESS OTHER SECONDS CONNECTIONS: POST /default/registrationIDs from
#     ADDRESS on CONNECTIONS connections for SECONDS s; meanwhile one a second from OTHER.
import base64, hashlib, hmac, http.client, itertools, math, os, sys, threading, time, urllib.parse

HUB, RULE, QUERY = "default", "DefaultListenSharedAccessSignature", "api-version=2015-01"
ATOM = "application/atom+xml;type=entry;charset=utf-8"
LIMIT_SECONDS = 120


def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else 0.0


class Tally:
    """Answers by status, 429s with and without a numeric Retry-After, latencies; shared by threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.statuses, self.latencies, self.retry_after = {}, [], []
        self.no_retry_after = self.errors = 0

    def add(self, status, retry_after, seconds):
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.latencies.append(seconds)
            if status == 429:
                if retry_after is not None and retry_after.strip().isdigit():
                    self.retry_after.append(int(retry_after))
                else:
                    self.no_retry_after += 1

    def error(self):
        with self.lock:
            self.errors += 1

    def count(self):
        with self.lock:
            return len(self.latencies)

    def lines(self, prefix="", seconds=None):
        ms, p = [s * 1000 for s in self.latencies], prefix + "." if prefix else ""
        out = [f"{p}requests={len(ms)}", f"{p}errors={self.errors}"]
        out += [f"{p}status_{code}={n}" for code, n in sorted(self.statuses.items())]
        out += [f"{p}{name}_ms={percentile(ms, rank):.1f}" for name, rank in [("p50", 50), ("p90", 90), ("p99", 99)]]
        out.append(f"{p}max_ms={max(ms, default=0):.1f}")
        if 429 in self.statuses:
            out.append(f"{p}retry_after_missing={self.no_retry_after}")
            if self.retry_after:
                out += [f"{p}retry_after_min_s={min(self.retry_after)}", f"{p}retry_after_max_s={max(self.retry_after)}"]
        if seconds is not None:
            out += [f"{p}seconds={seconds:.2f}", f"{p}per_second={len(ms) / seconds:.0f}"]
        return out


class Client:
    """One kept-alive connection; a request that fails is counted as an error, never sent again."""

    def __init__(self, port):
        self.port, self.connection = port, None

    def call(self, tally, method, path, headers, body=None):
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        start = time.monotonic()
        try:
            self.connection.request(method, path, body=body, headers=headers)
            response = self.connection.getresponse()
            response.read()
        except (http.client.HTTPException, OSError):
            tally.error()
            self.close()
            return None
        tally.add(response.status, response.getheader("Retry-After"), time.monotonic() - start)
        if response.will_close:
            self.close()
        return response.status

    def close(self):
        if self.connection is not None:
            self.connection.close()
        self.connection = None


def sas_token(base, key, lifetime=3600):
    """A Shared Access Signature for the namespace, as SharedAccessSignature.swift checks it (and
    Tests/Contract/contract.py makes it): base64(HMAC-SHA256(key, sr + "\\n" + se)), sr URL-encoded."""
    expiry = int(time.time()) + lifetime
    resource = urllib.parse.quote(base.lower().rstrip("/") + "/", safe="")
    mac = hmac.new(key.encode(), f"{resource}\n{expiry}".encode(), hashlib.sha256).digest()
    signature = urllib.parse.quote(base64.b64encode(mac).decode(), safe="")
    return f"SharedAccessSignature sr={resource}&sig={signature}&se={expiry}&skn={RULE}"


def port_of(base):
    return urllib.parse.urlsplit(base).port


def signins(base, first, last, offset, spacing):
    tally, late, start = Tally(), 0.0, time.monotonic()
    for index, number in enumerate(range(int(first), int(last) + 1)):
        due, now = start + float(offset) + index * float(spacing), time.monotonic()
        if now - start > LIMIT_SECONDS:
            break
        if due > now:
            time.sleep(due - now)
        else:
            late = max(late, now - due)
        name = f"alice{number:02d}"
        client = Client(port_of(base))
        client.call(tally, "GET", "/api/me", {"Authorization": "Basic " + base64.b64encode(f"{name}:{name}".encode()).decode()})
        client.close()
    print("\n".join(tally.lines() + [f"tries={int(last) - int(first) + 1}", f"late_ms={late * 1000:.0f}"]))


def run(base, address, other, connections, requests, seconds, other_requests, other_spacing, other_after, request):
    """CONNECTIONS threads from ADDRESS, each at most its share of REQUESTS, all within SECONDS;
    one thread from OTHER: OTHER_REQUESTS, OTHER_SPACING s apart, once the flood has OTHER_AFTER
    answers. request(client, tally, address) makes one request."""
    port, deadline = port_of(base), time.monotonic() + min(seconds, LIMIT_SECONDS)
    flooded, others, done, during = Tally(), Tally(), threading.Event(), [0]

    def flooder(count):
        client = Client(port)
        for _ in range(count):
            if time.monotonic() >= deadline:
                break
            request(client, flooded, address)
        client.close()

    def other_device():
        while flooded.count() < other_after and not done.is_set() and time.monotonic() < deadline:
            time.sleep(0.005)
        client = Client(port)
        for index in range(other_requests):
            if index:
                time.sleep(other_spacing)
            if not done.is_set():
                during[0] += 1
            request(client, others, other)
        client.close()

    shares = [requests // connections + (1 if i < requests % connections else 0) for i in range(connections)]
    threads = [threading.Thread(target=flooder, args=(share,)) for share in shares]
    side = threading.Thread(target=other_device)
    start = time.monotonic()
    for thread in threads + [side]:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    done.set()
    side.join()
    print("\n".join(flooded.lines("flood", elapsed) + others.lines("other") + [f"other.during_flood={during[0]}"]))


def create(base, key_file, address, other, count, connections, other_count):
    token = sas_token(base, open(key_file).read().strip())
    path, prefix, counter = f"/{HUB}/registrations?{QUERY}", os.urandom(8).hex(), itertools.count()

    def request(client, tally, source):
        # A new device each time: 64 hex digits, as APNs issues them.
        body = (
            '<?xml version="1.0" encoding="utf-8"?>\n<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">\n'
            '<AppleRegistrationDescription xmlns:i="http://www.w3.org/2001/XMLSchema-instance" '
            'xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">\n'
            f"<Tags>bench,flood</Tags><DeviceToken>{prefix}{next(counter):048x}</DeviceToken>"
            "</AppleRegistrationDescription></content></entry>"
        )
        client.call(tally, "POST", path, {"Authorization": token, "Content-Type": ATOM, "X-Forwarded-For": source}, body.encode())

    run(base, address, other, int(connections), int(count), LIMIT_SECONDS, int(other_count), 0.0, 200, request)


def reserve(base, key_file, address, other, seconds, connections):
    token = sas_token(base, open(key_file).read().strip())
    path = f"/{HUB}/registrationIDs?{QUERY}"

    def request(client, tally, source):
        client.call(tally, "POST", path, {"Authorization": token, "X-Forwarded-For": source}, b"")

    # At most 10,000 requests a connection a second: a bound far above what one client makes.
    seconds = float(seconds)
    run(base, address, other, int(connections), int(10_000 * seconds * int(connections)), seconds, int(seconds), 1.0, 1, request)


if __name__ == "__main__":
    {"signins": signins, "create": create, "reserve": reserve}[sys.argv[1]](*sys.argv[2:])
PY
record_lines() {
  local prefix=$1 key value
  while IFS='=' read -r key value; do record "$prefix.$key" "$value"; done < "$2"
}

if runs login; then
  say ""
  say "== finding 1 (issue 54): known users' first sign-ins during 16 connections of wrong logins under new names"
  # alice01 … alice25 (password = name) at 210,000 iterations, no other user, the demo rule off.
  login_hashes=()
  for number in $(seq -w 1 25); do login_hashes+=("$(printf 'alice%s' "$number" | "$bin" users hash --iterations 210000)"); done
  python3 - "$work/sandbox/config.json" "$work/sandbox/config-login.json" "${login_hashes[@]}" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["auth"] = {"users": [{"name": "alice%02d" % (i + 1), "passwordHash": h} for i, h in enumerate(sys.argv[3:])],
                  "admins": [], "demoPasswordEqualsName": False}
config["store"] = {"sqlite": {"path": "login.sqlite"}}
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
  wrong_logins_lua nil "$work/flood-names.lua"
  # On a gateway of its own, started afresh (no credentials remembered: every sign-in is a first):
  # alice01 … 05 alone, /healthz alone, then the flood with /healthz and alice06 … 25 beside it.
  login_flood() {
    local flood signins
    start_gateway "$work/sandbox/config-login.json" "$work/gateway-login.log"
    python3 "$work/floods.py" signins "$base" 1 5 0 0.5 > "$work/signins-alone.txt"
    wrk -t 1 -c 4 -d 15s --latency "$base/healthz" > "$work/login-healthz-alone.txt"
    wrk -t 2 -c 16 -d 19s --latency -s "$work/flood-names.lua" "$base/" > "$work/login-flood.txt" &
    flood=$!
    pids+=("$flood")
    python3 "$work/floods.py" signins "$base" 6 25 2 0.75 > "$work/signins-during.txt" &
    signins=$!
    pids+=("$signins")
    sleep 2
    wrk -t 1 -c 4 -d 15s --latency "$base/healthz" > "$work/login-healthz-during.txt"
    wait "$signins" || fail "the sign-ins during the flood failed"
    forget "$signins"
    wait "$flood" || fail "wrk (the flood of new names) failed"
    forget "$flood"
    stop_gateway
  }
  measure f1 login_flood
  record_lines f1.alone "$work/signins-alone.txt"
  record_lines f1.during "$work/signins-during.txt"
  record_wrk f1.healthz_alone "$work/login-healthz-alone.txt"
  record_wrk f1.healthz_during "$work/login-healthz-during.txt"
  record_wrk f1.flood "$work/login-flood.txt"
  record_statuses f1.flood "$work/login-flood.txt"
fi

if runs listen; then
  say ""
  say "== findings 2 and 3 (issue 54): the hub's Listen key from one client address, beside another (X-Forwarded-For)"
  # config-load.json's users and rules, with the proxy trusted and a store of its own.
  python3 - "$work/sandbox/config-load.json" "$work/sandbox/config-hub.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["listener"]["trustedProxies"] = ["127.0.0.1/32", "::1/128"]
config["store"] = {"sqlite": {"path": "hub.sqlite"}}
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
  listen_key=$work/sandbox/hub-keys/default.DefaultListenSharedAccessSignature.key
  [ -s "$listen_key" ] || fail "the sandbox wrote no Listen key at $listen_key"
  # The defaults (config-hub.json sets no limit).
  record f2.limit.creation_burst 10
  record f2.limit.creations_per_minute 6
  record f3.limit.reservation_burst 500
  record f3.limit.reservations_per_second 50
  # On a gateway and store of their own (the rates are kept in memory): 2,000 creations from
  # 198.51.100.1 with 3 from 198.51.100.2 among them, the rows stored; then 10 s of reservations
  # from 198.51.100.3 with one a second from 198.51.100.4; the reserved ids left once it stopped.
  listen_floods() {
    rm -f "$work/sandbox"/hub.sqlite*
    start_gateway "$work/sandbox/config-hub.json" "$work/gateway-hub.log"
    python3 "$work/floods.py" create "$base" "$listen_key" 198.51.100.1 198.51.100.2 2000 8 3 > "$work/listen-create.txt"
    (cd "$work/sandbox" && "$bin" registrations export --config "$work/sandbox/config-hub.json") | wc -l > "$work/listen-rows.txt"
    python3 "$work/floods.py" reserve "$base" "$listen_key" 198.51.100.3 198.51.100.4 10 8 > "$work/listen-reserve.txt"
    stop_gateway
    : > "$work/listen-reserved.txt"
    if command -v sqlite3 >/dev/null; then
      sqlite3 -readonly "$work/sandbox/hub.sqlite" "SELECT 'reserved_ids=' || count(*), 'reserved_expire_min_s=' ||
        CAST(min(expires_at) - strftime('%s', 'now') AS INTEGER), 'reserved_expire_max_s=' ||
        CAST(max(expires_at) - strftime('%s', 'now') AS INTEGER) FROM reserved_ids" | tr '|' '\n' > "$work/listen-reserved.txt"
    fi
  }
  measure f2_3 listen_floods
  record_lines f2 "$work/listen-create.txt"
  record f2.rows_stored "$(tr -d ' ' < "$work/listen-rows.txt")"
  record_lines f3 "$work/listen-reserve.txt"
  record_lines f3 "$work/listen-reserved.txt"
fi

# ---------------------------------------------------------------------------------------------
if runs memory; then
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
fi

# ---------------------------------------------------------------------------------------------
# The gateway of sections 6, 10 and 9 on SQLite. erin and frank hold 10 and 960 registrations (for
# finding 9's cap check): imported first. The users of the later runs log in once (verified
# credentials are remembered for 5 minutes: no check on their later requests).
start_load_gateway() {
  python3 - > "$work/prefill.jsonl" <<'PY'
import json
for owner, count, base in [("erin", 10, 0), ("frank", 960, 1000)]:
    for i in range(count):
        print(json.dumps({"id": "prefill%09d" % (base + i), "platform": "apns", "handle": "%064x" % (base + i + 1),
                          "tags": ["username:" + owner, "news"], "owner": owner}))
PY
  (cd "$work/sandbox" && "$bin" registrations import --config "$work/sandbox/config-load.json" "$work/prefill.jsonl" > /dev/null)
  start_gateway "$work/sandbox/config-load.json" "$work/gateway-sqlite.log"
  for user in alice bob erin frank; do curl -s -o /dev/null -u "$user:$user" "$base/api/notifications/x"; done
}

if runs passwords; then
  say ""
  say "== finding 6: GET /healthz latency (wrk, 4 connections, 15 s), alone and during 8 connections of wrong logins"
  start_load_gateway
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
  # Sections 10 and 9 go on with this gateway.
  runs stores || stop_gateway
fi

# ---------------------------------------------------------------------------------------------
# Sections 10 and 9.
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
if runs stores; then
  say ""
  say "== findings 10 and 9: /healthz and registration writes (wrk, 10 s each), SQLite then PostgreSQL"
  runs passwords || start_load_gateway
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
fi
# ---------------------------------------------------------------------------------------------
say ""
python3 - "$results" "$out" "$pad_bytes" "$sections" <<'PY'
import json, math, os, sys, time
path, out, pad, ran = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
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
summary = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": os.cpu_count(), "sections": ran, "pad_bytes": pad,
           "finding1": nested("f1."), "finding2": nested("f2."), "finding3": nested("f3."), "finding5": nested("f5."), "finding6": nested("f6."), "finding10": nested("f10."), "finding9": nested("f9."),
           "logs": nested("logs."), "idle": {k[5:]: v for k, v in raw.items() if k.startswith("idle.")}}
json.dump(summary, open(out, "w"), indent=2)

def statuses(prefix):
    return {k[len(prefix) + 8:]: int(v) for k, v in raw.items() if k.startswith(prefix + ".status_")}
def wrong(kind):
    s = statuses(f"f6.wrong_{kind}")
    other = sum(n for code, n in s.items() if code not in ("401", "429", "503"))
    return s, other
rows = []
def lat(key): return f"{raw.get(key + '.p50_ms')} / {raw.get(key + '.p90_ms')} / {raw.get(key + '.p99_ms')}"
def count(key): return int(num(key) or 0)
def others(prefix, expected):
    return sum(n for code, n in statuses(prefix).items() if code not in expected)
# Section 1: sign-ins are alice's first (a PBKDF2 check each); the flood is wrk's.
def signins(key): return f"{count(key + '.status_200')} of {count(key + '.tries')}; {lat(key)}"
if "login" in ran:
    flood = statuses("f1.flood")
    rows.append(("1. known users' first sign-ins during the flood: 200 of tries; p50 / p90 / p99 ms", signins("f1.during"),
                 "alone " + signins("f1.alone"), "before the fix: 1 of 20 (19 answered 503); target: all, p99 <= 2,000 ms"))
    rows.append(("1. /healthz p50 / p90 / p99 (ms) during 16 conn. of wrong logins under new names", lat("f1.healthz_during"),
                 "alone " + lat("f1.healthz_alone"), ""))
    rows.append(("1.   /healthz req/s; the flood: per s, p50 ms, 401 / 429 / 503 / other",
                 f"{raw.get('f1.healthz_during.per_second')}; {raw.get('f1.flood.per_second')}/s, {raw.get('f1.flood.p50_ms')} ms, "
                 f"{flood.get('401', 0)} / {flood.get('429', 0)} / {flood.get('503', 0)} / {others('f1.flood', ('401', '429', '503'))}",
                 f"alone {raw.get('f1.healthz_alone.per_second')}", "before the fix: 99% 503"))
# Sections 2 and 3: the Listen key from 198.51.100.1 and .3, beside .2 and .4 (X-Forwarded-For).
def allowed_creations():
    return count("f2.limit.creation_burst") + math.floor((num("f2.flood.seconds") or 0) * count("f2.limit.creations_per_minute") / 60) + 1
def allowed_reservations():
    # The bucket refills continuously: one second's worth more for the clock's edges.
    return count("f3.limit.reservation_burst") + math.ceil(((num("f3.flood.seconds") or 0) + 1) * count("f3.limit.reservations_per_second"))
def retry_after(prefix):
    return (f"{raw.get(prefix + '.retry_after_missing', 'n/a')} without; {raw.get(prefix + '.retry_after_min_s', '?')}"
            f"-{raw.get(prefix + '.retry_after_max_s', '?')} s")
if "listen" in ran:
    rows.append(("2. POST registrations, Listen key, one address: 200 / 429 / other (requests, s)",
                 f"{count('f2.flood.status_200')} / {count('f2.flood.status_429')} / {others('f2.flood', ('200', '429'))} "
                 f"({raw.get('f2.flood.requests')}, {raw.get('f2.flood.seconds')} s)",
                 f"at most {allowed_creations()} (burst {raw.get('f2.limit.creation_burst')} + {raw.get('f2.limit.creations_per_minute')}/min)",
                 "before the fix: 2,000 x 200 in 2-3 s"))
    rows.append(("2.   its 429s: Retry-After missing; range", retry_after("f2.flood"), "", ""))
    rows.append(("2. a second address meanwhile: 200 of tries (during the flood)",
                 f"{count('f2.other.status_200')} of {raw.get('f2.other.requests')} ({raw.get('f2.other.during_flood')})", "", ""))
    rows.append(("2. rows stored (pushgate registrations export)", raw.get("f2.rows_stored"),
                 f"answered 200: {count('f2.flood.status_200')} + {count('f2.other.status_200')}", "before the fix: 2,000"))
    rows.append(("3. POST registrationIDs, Listen key, one address: 201 / 429 / other (per s, s)",
                 f"{count('f3.flood.status_201')} / {count('f3.flood.status_429')} / {others('f3.flood', ('201', '429'))} "
                 f"({raw.get('f3.flood.per_second')}/s, {raw.get('f3.flood.seconds')} s)",
                 f"at most {allowed_reservations()} (burst {raw.get('f3.limit.reservation_burst')} + "
                 f"{raw.get('f3.limit.reservations_per_second')}/s)", "before the fix: 1,500, then 429 for every device"))
    rows.append(("3.   its 429s: Retry-After missing; range", retry_after("f3.flood"), "", ""))
    rows.append(("3. a second address, one a second meanwhile: 201 of tries (during the flood)",
                 f"{count('f3.other.status_201')} of {raw.get('f3.other.requests')} ({raw.get('f3.other.during_flood')})",
                 "", "before the fix: 429"))
    if "f3.reserved_ids" in raw:
        rows.append(("3. reserved ids in the store; they expire in (s)",
                     f"{raw['f3.reserved_ids']}; {raw.get('f3.reserved_expire_min_s')}-{raw.get('f3.reserved_expire_max_s')}",
                     f"answered 201: {count('f3.flood.status_201')} + {count('f3.other.status_201')}", "unused ids expire after an hour"))
def mem(key): return f"{raw.get(key + '.vmrss_mib')} / {raw.get(key + '.rssanon_mib')} / {raw.get(key + '.vmhwm_mib')}"
for platform, name in [("browser", "Web Push"), ("apns", "APNs")] if "memory" in ran else []:
    if platform == "browser":
        rows.append(("5. gateway idle after start (MiB: VmRSS / RssAnon / VmHWM)", mem("f5.idle"), "", "before the fix: 63 MiB"))
    ref = "after 24 plain sends " + mem(f"f5.{platform}.after_24_plain")
    rows.append((f"5. {name}: after 4 answers padded by {pad / 2**20:.0f} MiB", mem(f"f5.{platform}.after_4_padded"), ref, "before the fix: 530 MiB after 4"))
    rows.append((f"5. {name}: after 24 padded answers", mem(f"f5.{platform}.after_24_padded"), ref,
                 f"all Success, delivered once; slowest {raw.get(f'f5.{platform}.after_24_padded.slowest_send_s')} s"))
for kind, label in [("distinct", "a new user name each"), ("fixed", "one header, carol:wrong")] if "passwords" in ran else []:
    s, other = wrong(kind)
    rows.append((f"6. /healthz p50 / p90 / p99 (ms) during 8 conn. of wrong logins, {label}", lat(f"f6.healthz_during_{kind}"),
                 "alone " + lat("f6.healthz_alone"), "before the fix: p90 2,300 ms" if kind == "distinct" else ""))
    rows.append(("6.   /healthz req/s; the wrong logins: per s, 401 / 429 / 503 / other",
                 f"{raw.get(f'f6.healthz_during_{kind}.per_second')}; {raw.get(f'f6.wrong_{kind}.per_second')}/s, "
                 f"{s.get('401', 0)} / {s.get('429', 0)} / {s.get('503', 0)} / {other}", f"alone {raw.get('f6.healthz_alone.per_second')}", ""))
if "stores" in ran:
    rows.append(("10. /healthz req/s, 32 conn., PostgreSQL store (p99 ms)", f"{raw.get('f10.healthz32_postgres.per_second')} ({raw.get('f10.healthz32_postgres.p99_ms')})",
                 f"SQLite {raw.get('f10.healthz32_sqlite.per_second')} ({raw.get('f10.healthz32_sqlite.p99_ms')})", "before the fix: 294 vs 11,500"))
    rows.append(("10.   PostgreSQL logins: during those 10 s / at start / gateway total", f"{raw.get('f10.pg_logins_during_healthz')} / {raw.get('f10.pg_logins_gateway_start')} / {raw.get('f10.pg_logins_gateway_total')}",
                 "", "pool of 8 + the health monitor's 1"))
previous = raw.get("f9.previous_empty_store.per_second", "n/a")
for store, name in [("sqlite", "SQLite"), ("postgres", "PostgreSQL")] if "stores" in ran else []:
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
for key in ["f1.healthz_alone", "f1.healthz_during", "f6.healthz_alone", "f6.healthz_during_distinct", "f6.healthz_during_fixed",
            "f10.healthz32_sqlite", "f10.healthz32_postgres", "f9.upserts_sqlite", "f9.upserts_postgres"]:
    if num(key + ".non_2xx"): problems.append(f"{key}: {raw[key + '.non_2xx']} answers were not 2xx {statuses(key) or ''}")
for store in ["sqlite", "postgres"]:
    for user in ["erin", "frank"]:
        bad = {c: n for c, n in statuses(f"f9.new_{store}_{user}").items() if not c.startswith("2")}
        if bad: problems.append(f"f9.new_{store}_{user}: answers other than 2xx: {bad}")
for kind in ["distinct", "fixed"] if "passwords" in ran else []:
    s, other = wrong(kind)
    if not sum(s.values()): problems.append(f"f6.wrong_{kind}: no wrong login was answered")
    if other: problems.append(f"f6.wrong_{kind}: wrong logins answered other than 401/429/503: {s}")
if raw.get("f6.right_login_after.status") in ("401", "429", "503", "000"):
    problems.append(f"dave's right password after the storms was answered {raw.get('f6.right_login_after.status')}")
if "memory" in ran and (num("f5.sandbox.vmhwm_mib") or 0) * 2**20 < pad:
    problems.append(f"the sandbox never held a padded answer (its peak RSS {raw.get('f5.sandbox.vmhwm_mib')} MiB < {pad} bytes)")
contradictions = []
if "login" in ran:
    for key, tries in [("f1.alone", 5), ("f1.during", 20)]:
        if count(key + ".tries") != tries or count(key + ".requests") + count(key + ".errors") != tries:
            problems.append(f"{key}: {raw.get(key + '.requests')} sign-ins answered and {raw.get(key + '.errors')} failed of {tries}")
    if count("f1.alone.status_200") != 5:
        problems.append(f"f1.alone: a first sign-in with no flood was refused {statuses('f1.alone')}: the reference is void")
    if count("f1.during.late_ms") > 1000:
        problems.append(f"f1.during: the sign-ins fell {raw['f1.during.late_ms']} ms behind their schedule (not spread through the flood)")
    if not sum(statuses("f1.flood").values()):
        problems.append("f1.flood: no wrong login was answered")
    if count("f1.during.status_200") != count("f1.during.tries"):
        contradictions.append(f"finding 1: {count('f1.during.status_200')} of {raw.get('f1.during.tries')} first sign-ins during the flood "
                              f"succeeded {statuses('f1.during')} (every one must)")
    if (num("f1.during.p99_ms") or 0) > 2000:
        contradictions.append(f"finding 1: the first sign-ins' p99 during the flood is {raw['f1.during.p99_ms']} ms (at most 2,000)")
    if others("f1.flood", ("401",)):
        contradictions.append(f"finding 1: unknown names answered other than 401 {statuses('f1.flood')} (503 only past 4,096 "
                              "waiting at once; 429 only for a name that failed before)")
    alone, during = num("f1.healthz_alone.p90_ms") or 0, num("f1.healthz_during.p90_ms") or 0
    if during > max(100, 10 * alone):
        contradictions.append(f"finding 1: /healthz p90 {during:.1f} ms during the flood (alone {alone:.2f} ms; limit max(100 ms, 10x))")
if "listen" in ran:
    for key, expected, requests in [("f2.flood", ("200", "429"), 2000), ("f2.other", ("200", "429"), 3),
                                    ("f3.flood", ("201", "429"), None), ("f3.other", ("201", "429"), 10)]:
        if count(key + ".errors") or (requests and count(key + ".requests") != requests):
            problems.append(f"{key}: {raw.get(key + '.requests')} answered, {raw.get(key + '.errors')} failed (connections)")
        if others(key, expected):
            problems.append(f"{key}: answers other than {' or '.join(expected)}: {statuses(key)}")
    for key in ["f2.flood", "f3.flood"]:
        if not count(key + ".status_429"):
            problems.append(f"{key}: no 429: the flood never reached the limit {statuses(key)}")
        if count(key + ".retry_after_missing"):
            contradictions.append(f"{key}: {raw[key + '.retry_after_missing']} answers 429 without a Retry-After of whole seconds")
    made, other_made, rows_stored = count("f2.flood.status_200"), count("f2.other.status_200"), count("f2.rows_stored")
    if not count("f2.limit.creation_burst") <= made <= allowed_creations():
        contradictions.append(f"finding 2: one address made {made} registrations with the Listen key in {raw.get('f2.flood.seconds')} s "
                              f"(the burst {raw.get('f2.limit.creation_burst')}, at most {allowed_creations()})")
    if other_made != count("f2.other.requests"):
        contradictions.append(f"finding 2: the second address was refused: {statuses('f2.other')}")
    if rows_stored != made + other_made:
        contradictions.append(f"finding 2: {rows_stored} rows stored, but {made} + {other_made} creations answered 200")
    reserved, other_reserved = count("f3.flood.status_201"), count("f3.other.status_201")
    if not count("f3.limit.reservation_burst") <= reserved <= allowed_reservations():
        contradictions.append(f"finding 3: one address reserved {reserved} ids in {raw.get('f3.flood.seconds')} s "
                              f"(the burst {raw.get('f3.limit.reservation_burst')}, at most {allowed_reservations()})")
    if other_reserved != count("f3.other.requests") or not count("f3.other.during_flood"):
        contradictions.append(f"finding 3: the second address, reserving during the flood ({raw.get('f3.other.during_flood')} tries), "
                              f"was refused: {statuses('f3.other')}")
    if "f3.reserved_ids" in raw:
        if count("f3.reserved_ids") != reserved + other_reserved:
            contradictions.append(f"finding 3: {raw['f3.reserved_ids']} reserved ids stored, but {reserved} + {other_reserved} answered 201")
        if not 3000 <= count("f3.reserved_expire_min_s") <= count("f3.reserved_expire_max_s") <= 3600:
            contradictions.append(f"finding 3: the reserved ids expire in {raw.get('f3.reserved_expire_min_s')}"
                                  f"-{raw.get('f3.reserved_expire_max_s')} s (an hour after they were made)")
for platform in ["browser", "apns"] if "memory" in ran else []:
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
print(f"all checks passed ({', '.join(ran)}): no figure is implausible (every send one Success and delivered once, no non-2xx where "
      "2xx are expected, every flood reached its limit), no figure contradicts a fix")
PY

