# shellcheck shell=bash
# Section "everyday" of scripts/bench-all.sh: the tutorials' everyday call, one message to one
# user's devices (`POST /api/notifications?pns=apns&to_tag=uN`, body "hello"), under load, beside
# the gateway's own /healthz and the C libcurl client on the same sink, in the same run.
#
#   PUSHGATE_BENCH_SECTIONS=everyday scripts/bench-all.sh
#
# Sourced by bench-all.sh once the nginx-sink configuration exists (before the broadcast's store
# is seeded); uses its variables and helpers: bin, root, work, results, config, streams, pools,
# pids, record, free_port, wait_http, cpu_seconds, rss_kib, rate_of, cpu_of, and the C client
# ($work/curl_floor) and certificate ($work/cert.pem, key.pem) it built.
#
# Setup: USERS users (u0 … u<USERS-1>) with 3 APNs devices each, tagged username:uN, imported as
# JSON lines (`pushgate registrations import`) into an SQLite store of their own, and into a
# throwaway PostgreSQL cluster (scripts/postgres.sh, fsync on, ANALYZE after the import). APNs goes
# to an nginx of this section's own (HTTP/2 + TLS, 200 with apns-id for every token) that writes
# one line per answered request, so the devices it was sent to can be counted. bob (a configured
# user) sends; any signed-in user may send to another user's tag.
#
# For each configuration: outbox on + SQLite (the default), outbox off + SQLite
# (`"outbox": {"enabled": false}`), outbox on + PostgreSQL:
#   1. a 3 s warm-up (the sink's connections, the verified-credentials cache);
#   2. wrk on GET /healthz, 64 connections: the gateway's HTTP floor;
#   3. wrk, 64 connections, a random user per request: sends/s (notifications/s = 3 ×), and the
#      gateway's CPU per send (/proc/PID/stat utime + stime over the run, divided by the sends
#      the sink saw: its count / 3);
#   4. wrk, 4 connections: p50 / p99 latency (closed loop: wrk's own percentiles);
#   5. the C libcurl client (Benchmarks/CurlFloor, socket mode, 2 pools × 100 streams) against
#      the same sink, gateway stopped: the wire's reference;
#   6. PostgreSQL only, gateway stopped: pgbench with as many clients as the gateway's pool holds
#      (8), 2 threads, as long as a wrk run, on the gateway's database, a script of two commits a
#      "send" (insert a row into a scratch table, then update it: what a durable send cannot do
#      without; prepared statements; the table is made before and dropped after).
# The wire's bound (issue 55, section 5): a send that cost only its own requests and commits would
# run at 1 / (1/H + 3/C) sends/s on SQLite and 1 / (1/H + 3/C + 1/P) on PostgreSQL (H: /healthz/s,
# C: the C client's requests/s, P: pgbench's sends/s, all of this configuration's run). The
# 64-connection rate is set beside it ("of the bound") and against the issue's targets, each
# printed as pass or miss (a miss does not fail the run): outbox on + SQLite ≥ 0.5 × the bound,
# p99 at 4 connections ≤ 5 ms, ≤ 500 µs gateway CPU per send; outbox off + SQLite ≥ 0.6 ×;
# outbox on + PostgreSQL ≥ 0.5 ×, p99 at 4 connections ≤ 8 ms.
# Idle RSS (VmRSS, RssAnon) of the default gateway is taken before its warm-up.
#
# Every answer is checked (the wrk Lua script's `response`): HTTP 200 with "success":3. The run
# stops with a message and exit 1 on a wrong answer, a socket error or timeout, a sink count
# outside [3 × sends, 3 × (sends + connections)] (wrk stops with up to one request per connection
# in flight, which the gateway still delivers), a sink answer other than 200, or an implausible
# figure (0; sends/s above /healthz/s; notifications/s above 1.5 × the C client's; more gateway CPU
# than the machine has), a bound that cannot be (C or P zero or missing; pgbench's failed
# transactions, or its rows not as many as its sends, inserted and updated; sends/s above the
# bound).
#
# Environment: PUSHGATE_BENCH_USERS (20000), PUSHGATE_BENCH_EVERYDAY_SECONDS (15 per wrk run),
# PUSHGATE_BENCH_EVERYDAY_CURL (50000 requests of the C client), PUSHGATE_BENCH_EVERYDAY_CONFIGS
# (default "sqlite_outbox sqlite_direct postgres_outbox"), PUSHGATE_BENCH_IDLE_WAIT (seconds to wait
# before each measurement while someone else's swift-frontend, swift-build/swift-test/xctest or wrk
# runs, polling every 10 s; default 900, 0: do not wait). Whether the machine was idle is printed
# and recorded (everyday.<config>.<step>.idle). PostgreSQL: PUSHGATE_BENCH_PG_PREPARED (true or false:
# store.postgres.preparedStatements; unset: the default), PUSHGATE_BENCH_PG_STATEMENTS=1 (the server
# preloads pg_stat_statements, planning tracked; its top statements of the whole run go to
# <results>-postgres-statements.txt).
#
# Figures: everyday.* in the results (JSON: "everyday"), and a table at the end of bench-all; per
# configuration also wire_bound_per_second, of_bound, pgbench.* (PostgreSQL) and target.* (each
# target's threshold and pass or miss).
echo "== everyday: one message to one user's 3 APNs devices (wrk, a random user per request)" >&2
ev_users=${PUSHGATE_BENCH_USERS:-20000}
ev_seconds=${PUSHGATE_BENCH_EVERYDAY_SECONDS:-15}
ev_curl_count=${PUSHGATE_BENCH_EVERYDAY_CURL:-50000}
ev_configs=${PUSHGATE_BENCH_EVERYDAY_CONFIGS:-sqlite_outbox sqlite_direct postgres_outbox}
ev_pg_statements=${PUSHGATE_BENCH_PG_STATEMENTS:-}
ev_pg_prepared=${PUSHGATE_BENCH_PG_PREPARED:-}
case "$ev_pg_prepared" in "" | true | false) ;; *) echo "bench-everyday: PUSHGATE_BENCH_PG_PREPARED is true or false, not '$ev_pg_prepared'" >&2; exit 1 ;; esac
ev_idle_wait=${PUSHGATE_BENCH_IDLE_WAIT:-900}
ev_devices=3
ev_cores=$(nproc)
ev_pg_pool=8  # store.postgres.poolSize of the PostgreSQL configuration (the default), and pgbench's clients
ev_pgbench_bin=""
case " $ev_configs " in
*" postgres_outbox "*)
  ev_pgbench_bin=$(command -v pgbench || ls -d /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | sort -V | tail -1)
  [ -x "${ev_pgbench_bin:-}" ] || { echo "bench-everyday: pgbench not found (PostgreSQL's server package: scripts/setup.sh --postgres)" >&2; exit 1; }
  ;;
esac
record "everyday.users" "$ev_users"
record "everyday.devices_per_user" "$ev_devices"
record "everyday.seconds_per_run" "$ev_seconds"

ev_fail() { echo "bench-everyday: $*; stopping (the figures of this run are void)" >&2; exit 1; }
# awk as a calculator: ev_calc 'a / b' a=1 b=2
ev_calc() { local expr=$1; shift; local args=(); for kv in "$@"; do args+=(-v "$kv"); done; awk "${args[@]}" "BEGIN { OFMT = \"%.6f\"; print $expr }"; }
ev_true() { local expr=$1; shift; local args=(); for kv in "$@"; do args+=(-v "$kv"); done; awk "${args[@]}" "BEGIN { exit !($expr) }"; }

# Someone else's build, test or load generator on this machine (our own wrk runs only inside the
# steps below, never while this looks). The brackets keep pgrep from finding its own caller.
ev_others() {
  { pgrep -f '[s]wift-frontend'; pgrep -f '[s]wift-test|[s]wift-build|[x]ctest|[P]ushgatePackageTests'; pgrep -x wrk; } 2>/dev/null \
    | grep -v -x -e "$$" -e "$BASHPID" | sort -u | tr '\n' ' ' || true  # nothing found is no failure
}
# Waits (up to PUSHGATE_BENCH_IDLE_WAIT s) while ev_others finds anything; records whether the
# machine was idle at the start of step $1.
ev_wait_idle() {
  local label=$1 waited=0 others
  others=$(ev_others)
  while [ -n "$others" ] && [ "$waited" -lt "$ev_idle_wait" ]; do
    [ "$waited" -eq 0 ] && echo "-- $label: waiting while others run: $(ps -o comm= -p "$(tr ' ' ',' <<<"${others% }")" 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')" >&2
    sleep 10; waited=$((waited + 10))
    others=$(ev_others)
  done
  local idle=yes
  [ -n "$others" ] && idle=no
  echo "-- $label: machine idle: $idle (waited ${waited} s; load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  echo "everyday.$label.idle=$idle" >> "$results"
  echo "everyday.$label.waited_seconds=$waited" >> "$results"
}

# ---------------------------------------------------------------------------------------------
# The sink: nginx, HTTP/2 + TLS, 200 and an apns-id for every APNs token; one log line ($status)
# per request, buffered (flushed every second), so that the delivered notifications can be counted.
ev_sink_port=$(free_port)
ev_dir=$work/everyday
mkdir -p "$ev_dir/nginx"
ev_log=$ev_dir/nginx/apns.log
: > "$ev_log"
cat > "$ev_dir/nginx/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $ev_dir/nginx.pid;
error_log $ev_dir/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $ev_dir/nginx/body;
  proxy_temp_path $ev_dir/nginx/proxy;
  fastcgi_temp_path $ev_dir/nginx/fastcgi;
  uwsgi_temp_path $ev_dir/nginx/uwsgi;
  scgi_temp_path $ev_dir/nginx/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  http2_max_concurrent_streams 1000;
  map \$http_apns_id \$apns_id { "" \$request_id; default \$http_apns_id; }
  client_body_buffer_size 64k;
  log_format status_only '\$status';
  server {
    listen 127.0.0.1:$ev_sink_port ssl http2;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    location /3/device/ {
      access_log $ev_log status_only buffer=64k flush=1s;
      add_header apns-id \$apns_id always;
      return 200;
    }
  }
}
NGINX
nginx -c "$ev_dir/nginx/nginx.conf" -p "$ev_dir/nginx" &
ev_nginx=$!
pids+=($ev_nginx)
ev_sink="https://127.0.0.1:$ev_sink_port"
ev_token=$(printf 'ab%.0s' $(seq 1 32))
wait_http "$ev_sink/3/device/$ev_token"
# Requests the sink has answered (and logged) so far; the count once it stops changing (the log
# is flushed every second: two equal reads 1.5 s apart).
ev_count() { wc -l < "$ev_log"; }
ev_settle() {
  local a b
  a=$(ev_count)
  while :; do sleep 1.5; b=$(ev_count); [ "$a" = "$b" ] && break; a=$b; done
  echo "$a"
}

# ---------------------------------------------------------------------------------------------
# Configurations: bench-all's (sandbox credentials, nginx sink) with APNs on this sink, a store of
# their own and a port of their own, beside it in the sandbox's folder (relative paths resolve
# against the configuration's folder).
ev_port=$(free_port)
ev_base="http://127.0.0.1:$ev_port"
ev_conf=$work/sandbox/config-everyday
python3 - "$config" "$ev_conf" "$ev_port" "$ev_sink" "$work/cert.pem" <<'PY'
import json, sys
source, prefix, port, sink, ca = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
config = json.load(open(source))
config["listener"]["port"] = port
config["store"] = {"sqlite": {"path": "everyday.sqlite"}}
apns = config["apps"]["default"]["services"]["apns"]
apns["endpoint"] = sink
apns["caFile"] = ca
config.pop("outbox", None)  # the default: on
json.dump(config, open(prefix + "-sqlite_outbox.json", "w"), indent=2)
config["outbox"] = {"enabled": False}
json.dump(config, open(prefix + "-sqlite_direct.json", "w"), indent=2)
PY

echo "-- $ev_users users × $ev_devices APNs devices as JSON lines" >&2
python3 - "$ev_users" "$ev_devices" > "$ev_dir/registrations.jsonl" <<'PY'
import sys
users, devices = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout
for u in range(users):
    for d in range(devices):
        k = u * devices + d
        rid = "%016x" % ((k * 0x9E3779B97F4A7C15 + 0x5851F42D4C957F2D) % (1 << 64))  # ids in no user order
        out.write('{"id":"%s","platform":"apns","handle":"%064x","tags":["username:u%d"],"owner":"u%d"}\n'
                  % (rid, 0xE0000000 + k, u, u))
PY
ev_import() {  # name config
  local started
  started=$(date +%s.%N)
  (cd "$work/sandbox" && "$bin" registrations import --config "$2" "$ev_dir/registrations.jsonl" >&2)
  record "everyday.$1.import_seconds" "$(ev_calc 'sprintf("%.1f", b - a)' a="$started" b="$(date +%s.%N)")"
}
ev_import sqlite "$ev_conf-sqlite_outbox.json"

# The wrk script: a random user per request, every answer checked, totals over all threads.
cat > "$ev_dir/everyday.lua" <<LUA
-- The everyday send: one message to one random user's $ev_devices APNs devices; every answer checked.
local users = $ev_users
local devices = "$ev_devices"
local headers = { ["Authorization"] = "Basic $(printf 'bob:bob' | base64)", ["Content-Type"] = "application/json" }
local body = '"hello"'
local threads = {}
local counter = 0
function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end
function init(args)
  math.randomseed(os.time() + 7919 * id)
  ok, bad_status, bad_body, sample = 0, 0, 0, ""
end
function request()
  return wrk.format("POST", "/api/notifications?pns=apns&to_tag=u" .. math.random(0, users - 1), headers, body)
end
function response(status, headers, body)
  if status ~= 200 then
    bad_status = bad_status + 1
    if sample == "" then sample = "HTTP " .. status .. ": " .. string.sub(body or "", 1, 300) end
  elseif string.match(body or "", '"success":(%d+)') ~= devices then
    bad_body = bad_body + 1
    if sample == "" then sample = "HTTP 200: " .. string.sub(body or "", 1, 300) end
  else
    ok = ok + 1
  end
end
function done(summary, latency, requests)
  local o, s, b, example = 0, 0, 0, ""
  for _, thread in ipairs(threads) do
    o = o + thread:get("ok")
    s = s + thread:get("bad_status")
    b = b + thread:get("bad_body")
    local e = thread:get("sample")
    if example == "" and e ~= "" then example = e end
  end
  local e = summary.errors
  io.write(string.format("everyday ok=%d bad_status=%d bad_body=%d requests=%d duration_us=%d socket_errors=%d timeouts=%d p50_us=%d p99_us=%d\n",
    o, s, b, summary.requests, summary.duration, e.connect + e.read + e.write, e.timeout,
    math.floor(latency:percentile(50)), math.floor(latency:percentile(99))))
  if example ~= "" then io.write("everyday first wrong answer: " .. string.gsub(example, "%s+", " ") .. "\n") end
end
LUA

# ---------------------------------------------------------------------------------------------
ev_gateway=""
ev_start() {  # name config
  (cd "$work/sandbox" && exec "$bin" serve --config "$2" > "$ev_dir/gateway-$1.log" 2>&1) &
  ev_gateway=$!
  pids+=($ev_gateway)
  wait_http "$ev_base/healthz" || ev_fail "the $1 gateway did not start (log: $(tail -n 5 "$ev_dir/gateway-$1.log"))"
}
ev_stop() { kill -TERM "$ev_gateway" 2>/dev/null; wait "$ev_gateway" 2>/dev/null || true; ev_gateway=""; }
# CPU seconds of this section's PostgreSQL server: its postmaster and every process it started,
# those that have ended too (the postmaster's cutime and cstime: pgbench's backends end with it).
ev_pg_cpu() {
  local total pid postmaster
  postmaster=$(head -n 1 "$ev_pg_dir/data/postmaster.pid")
  total=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15 + $16 + $17) / hz }' "/proc/$postmaster/stat")
  for pid in $(pgrep -P "$postmaster"); do
    total=$(ev_calc 't + c' t="$total" c="$(cpu_seconds "$pid" 2>/dev/null || echo 0)")
  done
  echo "$total"
}

# One wrk run of sends: $1 figure prefix, $2 connections, $3 seconds. Checks every answer and the
# sink's count; sets ev_rate (sends/s), ev_sends, ev_delivered, ev_cpu_us (gateway CPU per send),
# ev_pg_us (PostgreSQL server CPU per send, when $ev_pg is set), ev_p50_ms, ev_p99_ms.
ev_sends() {
  local prefix=$1 connections=$2 seconds=$3 output line kv before cpu_before cpu_after pg_before=0 pg_after=0 delivered low high
  before=$(ev_count)
  cpu_before=$(cpu_seconds "$ev_gateway")
  [ -n "${ev_pg:-}" ] && pg_before=$(ev_pg_cpu)
  # PUSHGATE_BENCH_PERF=1 (or dwarf): the gateway profiled during the 64-connection runs (perf, call graphs),
  # the report beside the JSON (`<out>.<prefix>.perf.txt`, and the recording itself as `.perf.data` for
  # `perf report -g caller`); the figures of a profiled run are slower.
  local perf_pid=""
  if [ -n "${PUSHGATE_BENCH_PERF:-}" ] && [ "$connections" -ge 64 ] && command -v perf >/dev/null; then
    # PUSHGATE_BENCH_PERF=dwarf: call graphs unwound from DWARF (callers through libc and the
    # Swift runtime, which frame pointers lose), at a lower rate.
    local graph=(-F 499 -g)
    [ "${PUSHGATE_BENCH_PERF}" = dwarf ] && graph=(-F 149 --call-graph dwarf,16384)
    perf record "${graph[@]}" -p "$ev_gateway" -o "$ev_dir/$prefix.perf.data" -- sleep "$seconds" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  output=$(wrk -t 2 -c "$connections" -d "${seconds}s" --timeout 10s -s "$ev_dir/everyday.lua" "$ev_base") \
    || ev_fail "$prefix: wrk failed: $output"
  if [ -n "$perf_pid" ]; then
    wait "$perf_pid" || true
    perf report -i "$ev_dir/$prefix.perf.data" --no-children --percent-limit 1.5 --stdio --sort dso,symbol 2>/dev/null \
      | grep -v '^$' | head -120 > "${out%.json}.$prefix.perf.txt" || true
    cp "$ev_dir/$prefix.perf.data" "${out%.json}.$prefix.perf.data" 2>/dev/null || true
  fi
  delivered=$(( $(ev_settle) - before ))
  cpu_after=$(cpu_seconds "$ev_gateway")
  [ -n "${ev_pg:-}" ] && pg_after=$(ev_pg_cpu)
  line=$(grep '^everyday ok=' <<<"$output") || ev_fail "$prefix: wrk printed no totals: $output"
  for kv in ${line#everyday }; do printf -v "ev_w_${kv%%=*}" '%s' "${kv#*=}"; done
  if [ "$ev_w_bad_status" -ne 0 ] || [ "$ev_w_bad_body" -ne 0 ] || [ "$ev_w_socket_errors" -ne 0 ] || [ "$ev_w_timeouts" -ne 0 ] \
     || [ "$ev_w_ok" -ne "$ev_w_requests" ] || [ "$ev_w_ok" -le 0 ]; then
    echo "$output" >&2
    ev_fail "$prefix: wrong answers: $ev_w_ok right of $ev_w_requests, $ev_w_bad_status not 200, $ev_w_bad_body without \"success\":$ev_devices, $ev_w_socket_errors socket errors, $ev_w_timeouts timeouts"
  fi
  # Every answered send reached its 3 devices; the requests still in flight when wrk stopped (at
  # most one per connection) may have reached theirs too.
  low=$((ev_devices * ev_w_ok)); high=$((ev_devices * (ev_w_ok + connections)))
  if [ "$delivered" -lt "$low" ] || [ "$delivered" -gt "$high" ]; then
    ev_fail "$prefix: the sink answered $delivered APNs requests for $ev_w_ok sends (expected $low to $high)"
  fi
  if grep -qv '^200$' "$ev_log"; then ev_fail "$prefix: the sink answered other than 200: $(grep -v '^200$' "$ev_log" | sort | uniq -c | head -3)"; fi
  ev_sends=$ev_w_ok
  ev_delivered=$delivered
  ev_rate=$(ev_calc 'n / (us / 1e6)' n="$ev_w_ok" us="$ev_w_duration_us")
  ev_cpu_us=$(ev_calc '(b - a) * 1e6 / (d / k)' a="$cpu_before" b="$cpu_after" d="$delivered" k="$ev_devices")
  ev_pg_us=$(ev_calc '(b - a) * 1e6 / (d / k)' a="$pg_before" b="$pg_after" d="$delivered" k="$ev_devices")
  ev_p50_ms=$(ev_calc 'sprintf("%.2f", p / 1000)' p="$ev_w_p50_us")
  ev_p99_ms=$(ev_calc 'sprintf("%.2f", p / 1000)' p="$ev_w_p99_us")
  record "$prefix.sends" "$ev_w_ok"
  record "$prefix.delivered" "$delivered"
  record "$prefix.sends_per_second" "$(printf '%.1f' "$ev_rate")"
  record "$prefix.notifications_per_second" "$(ev_calc 'sprintf("%.1f", r * k)' r="$ev_rate" k="$ev_devices")"
  record "$prefix.p50_ms" "$ev_p50_ms"
  record "$prefix.p99_ms" "$ev_p99_ms"
  record "$prefix.cpu_us_per_send" "$(printf '%.0f' "$ev_cpu_us")"
  [ -n "${ev_pg:-}" ] && record "$prefix.postgres_cpu_us_per_send" "$(printf '%.0f' "$ev_pg_us")"
  if ! ev_true 'c > 0 && c * r <= cores * 1.1e6' c="$ev_cpu_us" r="$ev_rate" cores="$ev_cores"; then
    ev_fail "$prefix: implausible gateway CPU: $ev_cpu_us µs per send at $ev_rate sends/s on $ev_cores cores"
  fi
  ev_true 'p > 0 && p <= q' p="$ev_w_p50_us" q="$ev_w_p99_us" || ev_fail "$prefix: implausible latency: p50 $ev_w_p50_us µs, p99 $ev_w_p99_us µs"
}

# The commits a durable send cannot do without, on the gateway's database with the gateway
# stopped: pgbench, as many clients as the gateway's pool holds, two commits a "send" (insert a row
# into a scratch table, then update it). Checks that every send committed both; sets ev_pg_rate
# (sends/s).
cat > "$ev_dir/wire-send.sql" <<'SQL'
INSERT INTO bench_wire_sends (sender, state, payload) VALUES ('bob', 'queued', '"hello"') RETURNING id \gset
UPDATE bench_wire_sends SET state = 'sent', ended_at = now() WHERE id = :id;
SQL
ev_pgbench() {  # name
  local name=$1 output processed failed latency rows sent pg_before pg_after
  psql -q -v ON_ERROR_STOP=1 "$ev_pg_url" >&2 <<'SQL' || ev_fail "$name: could not make pgbench's scratch table"
DROP TABLE IF EXISTS bench_wire_sends;
CREATE TABLE bench_wire_sends (
  id bigserial PRIMARY KEY, sender text NOT NULL, state text NOT NULL, payload text NOT NULL,
  enqueued_at timestamptz NOT NULL DEFAULT now(), ended_at timestamptz);
SQL
  pg_before=$(ev_pg_cpu)
  output=$("$ev_pgbench_bin" -n -M prepared -c "$ev_pg_pool" -j 2 -T "$ev_seconds" -f "$ev_dir/wire-send.sql" "$ev_pg_url" 2>&1) \
    || ev_fail "$name: pgbench failed: $output"
  pg_after=$(ev_pg_cpu)
  ev_pg_rate=$(sed -nE 's/^tps = ([0-9.]+) .*/\1/p' <<<"$output")
  processed=$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' <<<"$output")
  failed=$(sed -nE 's/^number of failed transactions: ([0-9]+).*/\1/p' <<<"$output")
  latency=$(sed -nE 's/^latency average = ([0-9.]+) ms.*/\1/p' <<<"$output")
  read -r rows sent < <(psql -At -F ' ' "$ev_pg_url" -c "SELECT count(*), count(*) FILTER (WHERE state = 'sent') FROM bench_wire_sends")
  psql -q "$ev_pg_url" -c "DROP TABLE bench_wire_sends" >&2
  ev_true 'r > 0 && n > 0' r="${ev_pg_rate:-0}" n="${processed:-0}" || ev_fail "$name: pgbench measured no sends: $output"
  [ "${failed:-0}" -eq 0 ] || ev_fail "$name: pgbench: $failed failed sends: $output"
  # A client stopped by the clock ends its script; at most one send per client beyond the count.
  rows=${rows:-0}; sent=${sent:-0}
  if [ "$rows" -lt "$processed" ] || [ "$rows" -gt $((processed + ev_pg_pool)) ] || [ "$sent" -lt "$processed" ]; then
    ev_fail "$name: pgbench counted $processed sends, its table holds $rows rows of which $sent updated"
  fi
  record "everyday.$name.pgbench.clients" "$ev_pg_pool"
  record "everyday.$name.pgbench.sends" "$processed"
  record "everyday.$name.pgbench.sends_per_second" "$(printf '%.1f' "$ev_pg_rate")"
  record "everyday.$name.pgbench.latency_ms" "${latency:-}"
  record "everyday.$name.pgbench.server_cpu_us_per_send" "$(ev_calc 'sprintf("%.0f", (b - a) * 1e6 / n)' a="$pg_before" b="$pg_after" n="$processed")"
}

# The wire's bound of configuration $1 from its own run's H ($2), C ($3) and P ($4, empty on
# SQLite); its 64-connection rate ($5) beside it, and the issue's targets with the p99 at 4
# connections ($6, ms) and the gateway's CPU per send at 64 ($7, µs): each pass or miss.
ev_bound() {
  local name=$1 h=$2 c=$3 p=$4 r=$5 p99=$6 cpu=$7 bound ratio formula minimum p99_max="" cpu_max="" verdict all=pass line
  ev_true 'c > 0' c="${c:-0}" || ev_fail "$name: no C client rate for the bound (C = '${c:-}')"
  if [ -n "${ev_pg:-}" ]; then
    ev_true 'p > 0' p="${p:-0}" || ev_fail "$name: no pgbench rate for the bound (P = '${p:-}')"
    bound=$(ev_calc '1 / (1 / h + k / c + 1 / p)' h="$h" k="$ev_devices" c="$c" p="$p")
    formula="1 / (1/H + $ev_devices/C + 1/P), H $h, C $c, P $(printf '%.0f' "$p")"
  else
    bound=$(ev_calc '1 / (1 / h + k / c)' h="$h" k="$ev_devices" c="$c")
    formula="1 / (1/H + $ev_devices/C), H $h, C $c"
  fi
  ratio=$(ev_calc 'r / b' r="$r" b="$bound")
  record "everyday.$name.wire_bound_per_second" "$(printf '%.1f' "$bound")"
  record "everyday.$name.of_bound" "$(printf '%.4f' "$ratio")"
  ev_true 'x > 0 && x <= 1.0' x="$ratio" \
    || ev_fail "$name: $r sends/s is $(printf '%.3f' "$ratio") × the wire's bound $(printf '%.0f' "$bound")/s ($formula): more than its own requests and commits allow"
  case "$name" in
  sqlite_outbox) minimum=0.5; p99_max=5; cpu_max=500 ;;
  sqlite_direct) minimum=0.6 ;;
  postgres_outbox) minimum=0.5; p99_max=8 ;;
  esac
  verdict=$(ev_true 'x >= m' x="$ratio" m="$minimum" && echo pass || echo miss); [ "$verdict" = pass ] || all=miss
  record "everyday.$name.target.of_bound_min" "$minimum"
  record "everyday.$name.target.of_bound" "$verdict"
  line="≥ $minimum × the bound: $verdict ($(printf '%.3f' "$ratio") ×)"
  if [ -n "$p99_max" ]; then
    verdict=$(ev_true 'x <= m' x="$p99" m="$p99_max" && echo pass || echo miss); [ "$verdict" = pass ] || all=miss
    record "everyday.$name.target.p99_c4_max_ms" "$p99_max"
    record "everyday.$name.target.p99_c4" "$verdict"
    line+="; p99 at 4 connections ≤ $p99_max ms: $verdict ($p99 ms)"
  fi
  if [ -n "$cpu_max" ]; then
    verdict=$(ev_true 'x <= m' x="$cpu" m="$cpu_max" && echo pass || echo miss); [ "$verdict" = pass ] || all=miss
    record "everyday.$name.target.cpu_us_max" "$cpu_max"
    record "everyday.$name.target.cpu" "$verdict"
    line+="; gateway CPU ≤ $cpu_max µs per send: $verdict ($(printf '%.0f' "$cpu") µs)"
  fi
  record "everyday.$name.target.all" "$all"
  echo "-- $name: wire bound $(printf '%.0f' "$bound") sends/s ($formula); $(printf '%.0f' "$r") sends/s at 64 connections = $(printf '%.3f' "$ratio") × the bound" >&2
  echo "-- $name: targets: $line" >&2
}

ev_run() {  # name config
  local name=$1 conf=$2 healthz output non2xx errors floor floor_failed curl_rate
  ev_start "$name" "$conf"
  if [ "$name" = sqlite_outbox ]; then
    sleep 2
    record "everyday.idle_rss_mib" "$(ev_calc 'sprintf("%.1f", k / 1024)' k="$(rss_kib "$ev_gateway")")"
    record "everyday.idle_rss_anon_mib" "$(awk '/^RssAnon/ { printf "%.1f", $2 / 1024 }' "/proc/$ev_gateway/status")"
  fi
  echo "-- $name: warm-up (3 s)" >&2
  ev_sends "everyday.$name.warmup" 64 3
  ev_wait_idle "$name.healthz"
  output=$(wrk -t 2 -c 64 -d "${ev_seconds}s" --timeout 10s "$ev_base/healthz") || ev_fail "$name: wrk on /healthz failed: $output"
  healthz=$(awk '/Requests\/sec/ { printf "%.0f", $2 }' <<<"$output")
  non2xx=$(awk '/Non-2xx/ { n = $5 } END { print n + 0 }' <<<"$output")
  errors=$(awk '/Socket errors/ { gsub(/,/, ""); n = $4 + $6 + $8 + $10 } END { print n + 0 }' <<<"$output")
  [ "$non2xx" -eq 0 ] && [ "$errors" -eq 0 ] || { echo "$output" >&2; ev_fail "$name: /healthz answered $non2xx non-2xx, $errors socket errors"; }
  ev_true 'h > 0 && h < 1e6' h="${healthz:-0}" || ev_fail "$name: implausible /healthz rate: ${healthz:-none}/s"
  record "everyday.$name.healthz_per_second" "$healthz"

  ev_wait_idle "$name.sends64"
  ev_sends "everyday.$name.c64" 64 "$ev_seconds"
  ev_true 'r < h' r="$ev_rate" h="$healthz" || ev_fail "$name: $ev_rate sends/s is above the gateway's own /healthz rate ($healthz/s)"
  record "everyday.$name.sends_over_healthz" "$(ev_calc 'sprintf("%.4f", r / h)' r="$ev_rate" h="$healthz")"
  local rate64=$ev_rate cpu64=$ev_cpu_us

  ev_wait_idle "$name.sends4"
  ev_sends "everyday.$name.c4" 4 "$ev_seconds"
  local p99_c4=$ev_p99_ms
  ev_stop

  # The wire's reference: the C libcurl client against the same sink, gateway stopped.
  ev_wait_idle "$name.curl"
  floor=$("$work/curl_floor" socket "$ev_sink/3/device/$ev_token" "$work/cert.pem" "$ev_curl_count" "$streams" "$pools") \
    || ev_fail "$name: the C client failed: $floor"
  floor_failed=$(sed -nE 's/.*\(([0-9]+) failed\).*/\1/p' <<<"$floor")
  [ "${floor_failed:-1}" -eq 0 ] || ev_fail "$name: the C client's requests failed: $floor"
  ev_settle > /dev/null
  curl_rate=$(rate_of <<<"$floor")
  ev_true 'c > 0' c="${curl_rate:-0}" || ev_fail "$name: the C client measured no rate: $floor"
  record "everyday.$name.curl_per_second" "$curl_rate"
  record "everyday.$name.curl_cpu_us" "$(cpu_of <<<"$floor")"
  ev_true 'r * k <= c * 1.5' r="$rate64" k="$ev_devices" c="$curl_rate" \
    || ev_fail "$name: $rate64 sends/s × $ev_devices is above 1.5 × the C client's $curl_rate requests/s on the same sink"
  record "everyday.$name.notifications_over_curl" "$(ev_calc 'sprintf("%.4f", r * k / c)' r="$rate64" k="$ev_devices" c="$curl_rate")"

  # PostgreSQL: the two commits a send cannot do without, on the same database (gateway stopped).
  local pg_rate=""
  if [ -n "${ev_pg:-}" ]; then
    ev_wait_idle "$name.pgbench"
    ev_pgbench "$name"
    pg_rate=$ev_pg_rate
  fi
  ev_bound "$name" "$healthz" "$curl_rate" "$pg_rate" "$rate64" "$p99_c4" "$cpu64"
}

for ev_name in $ev_configs; do
  case "$ev_name" in
  sqlite_outbox|sqlite_direct)
    ev_pg=""
    ev_run "$ev_name" "$ev_conf-$ev_name.json"
    ;;
  postgres_outbox)
    ev_pg_dir=$(mktemp -d /tmp/pushgate-bench-everyday-pg.XXXXXX)  # outside $work: the postgres user must reach it
    ev_pg_options=""
    [ -n "$ev_pg_statements" ] && ev_pg_options="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c pg_stat_statements.track_planning=on"
    ev_pg_url=$(PUSHGATE_PG_OPTIONS="$ev_pg_options" "$root/scripts/postgres.sh" start "$ev_pg_dir" --durable)
    python3 - "$ev_conf-sqlite_outbox.json" "$ev_conf-postgres_outbox.json" "$ev_pg_url" "$ev_pg_prepared" "$ev_pg_pool" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["store"] = {"postgres": {"url": sys.argv[3], "poolSize": int(sys.argv[5])}}
if sys.argv[4]:
    config["store"]["postgres"]["preparedStatements"] = sys.argv[4] == "true"
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
    ev_import postgres "$ev_conf-postgres_outbox.json"
    psql -q "$ev_pg_url" -c "ANALYZE;" >&2
    [ -n "$ev_pg_statements" ] && psql -q "$ev_pg_url" -c "CREATE EXTENSION pg_stat_statements; SELECT pg_stat_statements_reset();" > /dev/null
    ev_pg=1
    ev_run "$ev_name" "$ev_conf-postgres_outbox.json"
    ev_pg=""
    if [ -n "$ev_pg_statements" ]; then
      # Every statement of the run (warm-up, 64 and 4 connections): calls, execution and planning time.
      psql "$ev_pg_url" -c "SELECT calls, round(total_exec_time::numeric, 1) AS exec_ms, round(total_plan_time::numeric, 1) AS plan_ms,
          plans, round((total_exec_time / nullif(calls, 0))::numeric, 3) AS exec_ms_per_call, rows,
          left(regexp_replace(query, '\\s+', ' ', 'g'), 200) AS query
        FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 40" > "${out%.json}-postgres-statements.txt"
    fi
    "$root/scripts/postgres.sh" stop "$ev_pg_dir"
    ;;
  *) ev_fail "unknown configuration '$ev_name' in PUSHGATE_BENCH_EVERYDAY_CONFIGS (sqlite_outbox sqlite_direct postgres_outbox)" ;;
  esac
done
kill -TERM "$ev_nginx" 2>/dev/null; wait "$ev_nginx" 2>/dev/null || true
