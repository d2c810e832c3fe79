# shellcheck shell=bash
# Section "postgres" of scripts/bench-all.sh: the broadcast of section 2 from PostgreSQL, with one
# and with two gateway instances, beside the SQLite figure of the same run.
#
#   PUSHGATE_BENCH_SECTIONS="broadcast postgres" scripts/bench-all.sh
#
# Sourced by bench-all.sh after section 2; uses its variables and helpers (bin, work, broadcast,
# results, gateway_port, config, pids, record, free_port, wait_http, cpu_seconds, hwm_kib).
#
# 1. A throwaway cluster (scripts/postgres.sh, fsync on: durable as a production server) and the
#    SQLite store's registrations copied into it with `pushgate store copy` (timed).
# 2. pg1: one instance, the same synchronous POST as section 2 (one notification, 1,000,000
#    targets). Gateway CPU and the server's CPU (every postgres process) per notification.
# 3. pg2: the audience split in two halves (a tag per half, added in SQL), one asynchronous
#    notification per half sent at once, each instance driving one (outbox.concurrentNotifications
#    1): the aggregate rate of two instances on one database, with each instance's CPU. A single
#    notification is driven by one instance at a time (its lease), so a second instance adds
#    throughput when there is more than one notification; pg2_one sends the same two halves to
#    one instance (one after the other) as the reference.
# 4. shared_one / shared2 (/ shared3 with PUSHGATE_BENCH_INSTANCES3=1): one asynchronous
#    notification to the whole audience; every running instance claims pages of it. Each
#    instance's share of the page claims, the cluster's CPU per notification, and its ratio to
#    one instance's (shared2.cluster_cpu_ratio).
echo "== postgres: broadcast to $broadcast registrations from PostgreSQL, one and two instances" >&2
pg_dir=$(mktemp -d /tmp/pushgate-bench-pg.XXXXXX)  # outside $work: the postgres user must reach it
pg_url=$(scripts/postgres.sh start "$pg_dir" --durable)
pg_cpu() { local total=0; for pid in $(pgrep -u postgres); do total=$(awk -v t="$total" -v c="$(cpu_seconds "$pid" 2>/dev/null || echo 0)" 'BEGIN { printf "%.2f", t + c }'); done; echo "$total"; }
python3 - "$config" "$work/sandbox/config-pg.json" "$pg_url" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["store"] = {"postgres": {"url": sys.argv[3], "poolSize": 8}}
config["outbox"] = {"concurrentNotifications": 1}
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
pg_config=$work/sandbox/config-pg.json
copy_start=$(date +%s.%N)
(cd "$work/sandbox" && "$bin" store copy --from "$config" --to "$pg_config" --batch-size 5000 >&2)
record "postgres.copy_seconds" "$(awk -v a="$copy_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
psql -q "$pg_url" -c "INSERT INTO registration_tags (app, tag, id) SELECT app, CASE WHEN ('x' || right(id, 1))::bit(4)::int % 2 = 0 THEN 'half:a' ELSE 'half:b' END, id FROM registrations WHERE id <> 'alice0000000001'; ANALYZE;" >&2

# One instance, one synchronous broadcast.
start_instance() {
  local name=$1 port=$2
  python3 - "$pg_config" "$work/sandbox/config-$name.json" "$port" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["listener"]["port"] = int(sys.argv[3])
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
  (cd "$work/sandbox" && exec "$bin" serve --config "$work/sandbox/config-$name.json" > "$work/gateway-$name.log" 2>&1) &
  pids+=($!)
  wait_http "http://127.0.0.1:$port/healthz"
}
port_a=$(free_port)
start_instance a "$port_a"
pid_a=${pids[-1]}
cpu_a=$(cpu_seconds "$pid_a"); cpu_pg=$(pg_cpu); start=$(date +%s.%N)
curl -s -u bob:bob -X POST -H 'Content-Type: application/json' -d '"Hello, everyone"' \
  "http://127.0.0.1:$port_a/api/notifications?pns=all&to_tag=carol" -o "$work/pg1.json" -w '%{http_code}\n' > "$work/pg1.status"
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
record "postgres.pg1.http_status" "$(cat "$work/pg1.status")"
record "postgres.pg1.seconds" "$elapsed"
record "postgres.pg1.rate" "$(awk -v n="$broadcast" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }')"
record "postgres.pg1.gateway_cpu_us_per_notification" "$(awk -v a="$cpu_a" -v b="$(cpu_seconds "$pid_a")" -v n="$broadcast" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
record "postgres.pg1.server_cpu_us_per_notification" "$(awk -v a="$cpu_pg" -v b="$(pg_cpu)" -v n="$broadcast" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
record "postgres.pg1.peak_rss_mib" "$(awk -v k="$(hwm_kib "$pid_a")" 'BEGIN { printf "%.0f", k / 1024 }')"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("postgres.pg1.succeeded=%d" % r.get("success", 0))' "$work/pg1.json" >> "$results"

# Two halves, sent at once; `instances` gateways take them. Waits until both are final.
send_halves() {
  local prefix=$1; shift
  local ports=("$@") ids=() cpu=() before_pg after
  for pid in "${halves_pids[@]}"; do cpu+=("$(cpu_seconds "$pid")"); done
  before_pg=$(pg_cpu); start=$(date +%s.%N)
  local i=0
  for half in a b; do
    local port=${ports[$((i % ${#ports[@]}))]}
    ids+=("$(curl -s -u bob:bob -X POST -H 'Content-Type: application/json' -H 'Prefer: respond-async' -d '"Hello, half"' \
      "http://127.0.0.1:$port/api/notifications?pns=all&tags=half:$half" | python3 -c 'import json,sys; print(json.load(sys.stdin)["notificationId"])')")
    i=$((i + 1))
  done
  for id in "${ids[@]}"; do
    while :; do
      state=$(curl -s -u bob:bob "http://127.0.0.1:${ports[0]}/api/notifications/$id/outcome" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("state",""))')
      case "$state" in
        Completed|Abandoned|Cancelled) break ;;
        NoTargetFound) echo "bench-postgres: notification $id found no target" >&2; exit 1 ;;
      esac
      sleep 0.5
    done
  done
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  record "$prefix.seconds" "$elapsed"
  record "$prefix.rate" "$(awk -v n="$broadcast" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }')"
  i=0
  local total=0
  for pid in "${halves_pids[@]}"; do
    after=$(cpu_seconds "$pid")
    record "$prefix.instance$((i + 1)).cpu_seconds" "$(awk -v a="${cpu[$i]}" -v b="$after" 'BEGIN { printf "%.1f", b - a }')"
    total=$(awk -v t="$total" -v a="${cpu[$i]}" -v b="$after" 'BEGIN { printf "%.2f", t + b - a }')
    i=$((i + 1))
  done
  record "$prefix.gateway_cpu_us_per_notification" "$(awk -v t="$total" -v n="$broadcast" 'BEGIN { printf "%.1f", t * 1e6 / n }')"
  record "$prefix.server_cpu_us_per_notification" "$(awk -v a="$before_pg" -v b="$(pg_cpu)" -v n="$broadcast" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
}
# One asynchronous notification to the whole audience, sent to the first instance; every running
# instance claims pages of it (shared pages). Each instance's share of the page claims (from its
# /metrics), its CPU, and the cluster's CPU per notification; waits until it is final and checks
# that every target has its outcome.
page_claims() { curl -s "http://127.0.0.1:$1/metrics" | awk '$1 == "pushgate_outbox_page_claims_total" { printf "%d", $2 }'; }
send_shared() {
  local prefix=$1; shift
  local ports=("$@") cpu=() claims=() before_pg id state total=0 claimed=0 i
  for pid in "${halves_pids[@]}"; do cpu+=("$(cpu_seconds "$pid")"); done
  for port in "${ports[@]}"; do claims+=("$(page_claims "$port")"); done
  before_pg=$(pg_cpu); start=$(date +%s.%N)
  id=$(curl -s -u bob:bob -X POST -H 'Content-Type: application/json' -H 'Prefer: respond-async' -d '"Hello, everyone"' \
    "http://127.0.0.1:${ports[0]}/api/notifications?pns=all&to_tag=carol" | python3 -c 'import json,sys; print(json.load(sys.stdin)["notificationId"])')
  while :; do
    curl -s -u bob:bob "http://127.0.0.1:${ports[0]}/api/notifications/$id/outcome" > "$work/$prefix.json"
    state=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("state",""))' "$work/$prefix.json")
    case "$state" in Completed|Abandoned|Cancelled|NoTargetFound) break ;; esac
    sleep 0.2
  done
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  processed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("processed",0))' "$work/$prefix.json")
  # carol's registrations: the broadcast's audience (less the devices the SQLite broadcast pruned).
  audience=$(psql -tA "$pg_url" -c "SELECT count(*) FROM registration_tags WHERE tag = 'username:carol'")
  if [ "$state" != Completed ] || [ "$processed" != "$audience" ]; then
    echo "bench-postgres: $prefix ended $state with $processed of $audience targets processed; stopping" >&2
    exit 1
  fi
  record "$prefix.targets" "$processed"
  record "$prefix.seconds" "$elapsed"
  record "$prefix.rate" "$(awk -v n="$broadcast" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }')"
  for i in "${!ports[@]}"; do claims[$i]=$(( $(page_claims "${ports[$i]}") - claims[$i] )); claimed=$((claimed + claims[$i])); done
  for i in "${!halves_pids[@]}"; do
    after=$(cpu_seconds "${halves_pids[$i]}")
    record "$prefix.instance$((i + 1)).cpu_seconds" "$(awk -v a="${cpu[$i]}" -v b="$after" 'BEGIN { printf "%.1f", b - a }')"
    record "$prefix.instance$((i + 1)).page_claims" "${claims[$i]}"
    record "$prefix.instance$((i + 1)).page_share_percent" "$(awk -v c="${claims[$i]}" -v t="$claimed" 'BEGIN { printf "%.1f", t ? 100 * c / t : 0 }')"
    total=$(awk -v t="$total" -v a="${cpu[$i]}" -v b="$after" 'BEGIN { printf "%.2f", t + b - a }')
  done
  record "$prefix.gateway_cpu_us_per_notification" "$(awk -v t="$total" -v n="$broadcast" 'BEGIN { printf "%.1f", t * 1e6 / n }')"
  record "$prefix.server_cpu_us_per_notification" "$(awk -v a="$before_pg" -v b="$(pg_cpu)" -v n="$broadcast" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
}

halves_pids=("$pid_a")
send_halves postgres.pg2_one "$port_a"
send_shared postgres.shared_one "$port_a"
port_b=$(free_port)
start_instance b "$port_b"
halves_pids=("$pid_a" "${pids[-1]}")
send_halves postgres.pg2 "$port_a" "$port_b"
send_shared postgres.shared2 "$port_a" "$port_b"
record "postgres.shared2.cluster_cpu_ratio" "$(awk -v a="$(sed -n 's/^postgres.shared2.gateway_cpu_us_per_notification=//p' "$results")" \
  -v b="$(sed -n 's/^postgres.shared_one.gateway_cpu_us_per_notification=//p' "$results")" 'BEGIN { printf "%.2f", b ? a / b : 0 }')"
if [ -n "${PUSHGATE_BENCH_INSTANCES3:-}" ]; then
  port_c=$(free_port)
  start_instance c "$port_c"
  halves_pids=("$pid_a" "${halves_pids[1]}" "${pids[-1]}")
  send_shared postgres.shared3 "$port_a" "$port_b" "$port_c"
fi
for pid in "${halves_pids[@]}"; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
scripts/postgres.sh stop "$pg_dir"
