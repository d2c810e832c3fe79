# shellcheck shell=bash
# Section "sandbox" of scripts/bench-all.sh: the broadcast of section 2 against `pushgate sandbox`
# (every platform's real checks and answers: JWT / OAuth, handle lookup, inboxes), beside the same
# broadcast against the nginx sink, interleaved, in the same run. Target: sandbox rate ≥ 0.8 × the
# nginx rate.
#
# Sourced by bench-all.sh after section 2 (the broadcast), when PUSHGATE_BENCH_SECTIONS contains
# "sandbox":
#
#   if want sandbox; then source scripts/bench-sandbox-sink.sh; fi
#
# It uses bench-all.sh's variables and helpers: bin, work, out, broadcast, results, gateway_port,
# config (the nginx-sink configuration, outbox on), pids, record, free_port, wait_http,
# cpu_seconds, rss_kib, hwm_kib, broadcast_once, perf_tables.
#
# Environment: PUSHGATE_BENCH_BROADCAST_ROUNDS (rounds, each: nginx then sandbox; default 1),
# PUSHGATE_BENCH_SANDBOX_ARGS (extra `pushgate sandbox` arguments; default `--inbox-limit
# ${PUSHGATE_BENCH_SANDBOX_INBOX_LIMIT:-1}` when the binary has that option, else none — the
# inboxes then keep every notification of every round), PUSHGATE_BENCH_SANDBOX_PERF=1 (one more,
# unmeasured sandbox broadcast under `perf record -g` of the sandbox; report beside the JSON).
#
# Figures (results file and ${out%.json}-sandbox.json): sandbox_sink.rN.* (gateway, as
# broadcast_once records them), sandbox_ref.rN.* (the same on nginx), sandbox_proc.rN.* (the
# sandbox process: CPU per notification, RSS after the round, peak RSS), sandbox.ratio.rN.

echo "== sandbox: broadcast to $broadcast registrations through \`pushgate sandbox\`, nginx sink as reference" >&2
sbx_dir=$work/pns-sandbox
sbx_args=()
if [ -n "${PUSHGATE_BENCH_SANDBOX_ARGS+set}" ]; then
  read -r -a sbx_args <<< "$PUSHGATE_BENCH_SANDBOX_ARGS"
elif grep -q -- '--inbox-limit' <<<"$("$bin" sandbox --help 2>/dev/null)"; then
  sbx_args=(--inbox-limit "${PUSHGATE_BENCH_SANDBOX_INBOX_LIMIT:-1}")
fi
"$bin" sandbox --dir "$sbx_dir" --gateway-port "$gateway_port" --gateway-tls-port 0 "${sbx_args[@]}" > "$work/pns-sandbox.out" 2> "$work/pns-sandbox.err" &
sbx_pid=$!
pids+=("$sbx_pid")
for _ in $(seq 1 100); do grep -q gateway "$work/pns-sandbox.out" 2>/dev/null && break; sleep 0.1; done
control=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["endpoints"]["control"])' "$sbx_dir/sandbox.json")
wait_http "$control/health"
record "sandbox_proc.args" "\"${sbx_args[*]}\""
record "sandbox_proc.rss_start_mib" "$(awk -v k="$(rss_kib "$sbx_pid")" 'BEGIN { printf "%.0f", k / 1024 }')"

# The gateway configuration the sandbox wrote, on the bench's gateway port and its own store
# (relative paths resolve against the configuration's folder). GCM off, as on nginx.
sbx_config=$sbx_dir/config.json
python3 - "$sbx_config" "$gateway_port" <<'PY'
import json, sys
path, port = sys.argv[1], int(sys.argv[2])
config = json.load(open(path))
config["listener"]["port"] = port
config["store"] = {"sqlite": {"path": "bench.sqlite"}}
config["apps"]["default"]["services"].pop("gcm", None)
json.dump(config, open(path, "w"), indent=2)
PY

# The same mix as section 2 (70% APNs, 25% FCM v1, 5% WNS, ids in no platform order, one APNs
# device in 256 uninstalled: 410 Unregistered, pruned), on devices the sandbox creates, in chunks.
echo "-- creating $broadcast sandbox devices" >&2
devices_start=$(date +%s.%N)
python3 - "$broadcast" "$control" > "$sbx_dir/registrations.jsonl" <<'PY'
import http.client, json, sys, urllib.parse
count, control = int(sys.argv[1]), urllib.parse.urlsplit(sys.argv[2])
connection = http.client.HTTPConnection(control.hostname, control.port, timeout=600)
def call(method, path, body=None):
    connection.request(method, path, body=json.dumps(body) if body is not None else None,
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    if response.status >= 300: sys.exit(f"{method} {path}: {response.status} {data[:200]!r}")
    return json.loads(data)
kinds = ["apns" if i % 20 < 14 else "fcm" if i % 20 < 19 else "wns" for i in range(count)]
devices = {}
chunk = 50000
for platform in ("apns", "fcm", "wns"):
    wanted, made = kinds.count(platform), []
    while len(made) < wanted:
        made += call("POST", "/devices", {"platform": platform, "count": min(chunk, wanted - len(made))})
    devices[platform] = made
for device in devices["apns"][255::256]:
    call("POST", "/devices/%s/uninstall" % device["id"])
taken = {"apns": 0, "fcm": 0, "wns": 0}
out = sys.stdout
for i, platform in enumerate(kinds):
    device = devices[platform][taken[platform]]
    taken[platform] += 1
    rid = "%016x" % ((i * 0x9E3779B97F4A7C15) % (1 << 64))
    out.write('{"id":"%s","platform":"%s","handle":"%s","tags":["username:carol","news"],"owner":"carol"}\n'
              % (rid, platform, device["handle"]))
PY
record "sandbox_proc.devices_seconds" "$(awk -v a="$devices_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
record "sandbox_proc.rss_devices_mib" "$(awk -v k="$(rss_kib "$sbx_pid")" 'BEGIN { printf "%.0f", k / 1024 }')"
(cd "$sbx_dir" && "$bin" registrations import --config "$sbx_config" "$sbx_dir/registrations.jsonl" >&2)

# The sandbox side of one round: the gateway's figures from broadcast_once, the sandbox's around it.
sandbox_broadcast() {
  local round=$1
  local cpu_before cpu_after
  cpu_before=$(cpu_seconds "$sbx_pid")
  broadcast_once "sandbox_sink.r$round" "$sbx_config" no
  cpu_after=$(cpu_seconds "$sbx_pid")
  record "sandbox_proc.r$round.cpu_us_per_notification" \
    "$(awk -v a="$cpu_before" -v b="$cpu_after" -v n="$broadcast" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
  record "sandbox_proc.r$round.rss_mib" "$(awk -v k="$(rss_kib "$sbx_pid")" 'BEGIN { printf "%.0f", k / 1024 }')"
  record "sandbox_proc.r$round.peak_rss_mib" "$(awk -v k="$(hwm_kib "$sbx_pid")" 'BEGIN { printf "%.0f", k / 1024 }')"
  record "sandbox_proc.r$round.inboxes" "$(curl -s "$control/stats/inboxes" | tr -d ' \n')"
}

sbx_rounds=${PUSHGATE_BENCH_BROADCAST_ROUNDS:-1}
for round in $(seq 1 "$sbx_rounds"); do
  echo "-- sandbox round $round: nginx sink (reference), then the sandbox" >&2
  broadcast_once "sandbox_ref.r$round" "$config" no
  sandbox_broadcast "$round"
  record "sandbox.ratio.r$round" "$(awk -F= -v r="$round" '
    $1 == "sandbox_sink.r" r ".rate" { s = $2 } $1 == "sandbox_ref.r" r ".rate" { n = $2 }
    END { if (n > 0) printf "%.2f", s / n; else print "n/a" }' "$results")"
done

if [ -n "${PUSHGATE_BENCH_SANDBOX_PERF:-}" ] && command -v perf >/dev/null; then
  echo "-- sandbox profile round (not in the figures)" >&2
  perf record -F 499 -g -p "$sbx_pid" -o "$work/sandbox.perf" >/dev/null 2>&1 &
  sbx_profiler=$!
  sleep 1
  broadcast_once "sandbox_profiled" "$sbx_config" no
  kill -INT "$sbx_profiler"; wait "$sbx_profiler" 2>/dev/null || true
  { echo "# perf, sandbox process, during a broadcast: by thread, by library, top symbols (self), top symbols (children)"
    perf_tables "$work/sandbox.perf"
    perf report -i "$work/sandbox.perf" --children --sort sym -g none -q 2>/dev/null > "$work/sandbox-report.txt" || true
    head -n 60 "$work/sandbox-report.txt"
  } > "${out%.json}-sandbox-profile.txt"
  if [ -n "${PUSHGATE_BENCH_SANDBOX_PERF_KEEP:-}" ]; then cp "$work/sandbox.perf" "${out%.json}-sandbox.perf"; fi
  echo "profile: ${out%.json}-sandbox-profile.txt" >&2
fi
kill -TERM "$sbx_pid" 2>/dev/null; wait "$sbx_pid" 2>/dev/null || true

python3 - "$results" "${out%.json}-sandbox.json" "$sbx_rounds" <<'PY'
import json, statistics, sys
path, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
raw = dict(line.rstrip("\n").partition("=")[::2] for line in open(path) if "=" in line)
num = lambda k: float(raw[k]) if raw.get(k, "").replace(".", "", 1).isdigit() else None
per = lambda prefix, key: [num(f"{prefix}.r{r}.{key}") for r in range(1, rounds + 1)]
summary = {
    "nginx": {k: per("sandbox_ref", k) for k in ["rate", "seconds", "cpu_us_per_notification", "peak_rss_mib"]},
    "sandbox": {k: per("sandbox_sink", k) for k in ["rate", "seconds", "cpu_us_per_notification", "peak_rss_mib"]},
    "sandbox_process": {k: per("sandbox_proc", k) for k in ["cpu_us_per_notification", "rss_mib", "peak_rss_mib"]},
    "ratio": [num(f"sandbox.ratio.r{r}") for r in range(1, rounds + 1)],
    "raw": {k: v for k, v in raw.items() if k.startswith("sandbox")},
}
json.dump(summary, open(out, "w"), indent=2)
ok = [r for r in summary["ratio"] if r is not None]
median = lambda v: statistics.median([x for x in v if x is not None]) if any(x is not None for x in v) else None
print(f"sandbox sink: rate {median(summary['sandbox']['rate'])} vs nginx {median(summary['nginx']['rate'])} notifications/s; "
      f"ratio per round {ok} (target ≥ 0.8); JSON: {out}", file=sys.stderr)
PY
