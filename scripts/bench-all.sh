#!/usr/bin/env bash
# Pushgate's benchmark suite: every figure beside a reference measured in the same run, on the
# same sink, on this machine. Writes JSON and prints a table.
#
#   scripts/bench-all.sh                 # the full suite (about 10 minutes on 2 cores, and 3–4 for "everyday")
#   PUSHGATE_BENCH_BROADCAST=100000 PUSHGATE_BENCH_ROUNDS=1 scripts/bench-all.sh   # a quick look
#
# Environment: PUSHGATE_BIN (a release pushgate; default: build one), PUSHGATE_BENCH_OUT (JSON,
# default .build/bench/bench-all.json), PUSHGATE_BENCH_BROADCAST (registrations, 1,000,000),
# PUSHGATE_BENCH_DISPATCH (requests per dispatch round, 100,000), PUSHGATE_BENCH_ROUNDS (3),
# PUSHGATE_BENCH_WEBHOOKS (outcome webhook kinds posted to a receiver on nginx, comma-separated;
# default none), PUSHGATE_BENCH_FAILING_APNS (1: the broadcast's APNs devices answered 400), PUSHGATE_BENCH_SECTIONS (default "dispatch everyday broadcast platforms hubs postgres latency upserts idle"; the
# broadcast's store is built when a section that uses it runs (broadcast, platforms, hubs,
# sandbox, postgres, latency, upserts); "sandbox" adds the broadcast against
# `pushgate sandbox` beside nginx, scripts/bench-sandbox-sink.sh), PUSHGATE_BENCH_PERF=1
# (profile the gateway during the broadcast with perf; the report lands beside the JSON).
#
# 1. dispatch: one nghttpd HTTP/2 + TLS sink; per round, interleaved: h2load, the two plain-C
#    libcurl floors (curl_multi_poll; curl_multi_socket_action + epoll), `pushgate bench
#    dispatch`, and aioapns (PyPI, in a virtual environment this script makes); against nginx,
#    APNs beside WNS (HTTP/1.1, 32 connections per pool) with each one's CPU per notification.
# 1b. everyday (scripts/bench-everyday.sh): the tutorials' everyday call, one message to one
#    user's 3 APNs devices, wrk with a random user of PUSHGATE_BENCH_USERS (20,000) per request:
#    sends/s at 64 connections, p50/p99 at 4, gateway CPU per send, for outbox on + SQLite,
#    outbox off + SQLite and outbox on + PostgreSQL, each beside the gateway's /healthz rate and
#    the C libcurl client on the same (counting) nginx sink (and, on PostgreSQL, pgbench's two
#    commits a send on the same database): the wire's bound 1 / (1/H + 3/C [+ 1/P]), the ratio to
#    it and the issue's targets (pass or miss); every answer and the sink's count checked; idle
#    RSS of the default gateway.
# 2. broadcast: BROADCAST registrations in SQLite (65% APNs, 25% FCM v1, 5% WNS, 5% browsers (Web Push:
#    PUSHGATE_BENCH_BROWSER_SHARE=0 puts them back to APNs, as before Web Push); one APNs device
#    in 256 answers 410 Unregistered and is pruned), one POST /api/notifications from request to
#    last outcome, against an nginx sink that answers each service's documented success (and
#    OAuth token) responses; peak RSS and CPU of the gateway. Reference: `pushgate bench
#    dispatch` against the same nginx, just before.
# 2c. platforms: the same store's broadcast to one platform at a time (pns=apns, fcm, wns,
#    browser: that platform's share of the audience), through the outbox, each beside the C
#    libcurl client on the same nginx (HTTP/2, or HTTP/1.1 for WNS): rate and CPU per request.
#    PUSHGATE_BENCH_MIX=worldwide seeds 35% APNs, 60% FCM v1, 5% WNS instead (no browsers).
# 2b. hubs (scripts/bench-hubs.sh): the SAS check per request, cached and not, beside a bare
#    HMAC; the broadcast's APNs share through the Notification Hubs API (/default/messages)
#    beside the tutorial API (/api/notifications?pns=apns), interleaved rounds on one gateway.
# 3. latency: single-target sends through the HTTP API at a fixed 1,000 requests/s (an open-loop
#    generator, Benchmarks/FixedRate) with the full store; reference: the same generator against
#    nginx answering directly.
# 4. upserts: PUT /api/register/{id} with wrk (closed loop, 32 connections) on random ids of one
#    account with changing tags, in the broadcast's store; references: the gateway's /healthz (H)
#    and, measured first, the store's own bound S: the same statements in the same transaction
#    groups (32 upserts a commit, one per connection) from a plain C program against the same file,
#    no HTTP (Benchmarks/StoreBound). Target (issue 55, section 5): at least 0.5 × 1 / (1/H + 1/S)
#    with p99 at most 10 ms, printed as pass or miss; a rate above the bound stops the run.
#    PUSHGATE_BENCH_UPSERT_SECONDS (10) per wrk run and for the store's bound.
# 5. idle RSS: a gateway started on the generated configuration, nothing sent, empty store; split
#    into private memory and file-backed code pages, with the mappings that hold them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
broadcast=${PUSHGATE_BENCH_BROADCAST:-1000000}
dispatch=${PUSHGATE_BENCH_DISPATCH:-100000}
rounds=${PUSHGATE_BENCH_ROUNDS:-3}
out=${PUSHGATE_BENCH_OUT:-.build/bench/bench-all.json}
streams=100
pools=2
sections=" ${PUSHGATE_BENCH_SECTIONS:-dispatch everyday broadcast platforms hubs postgres latency upserts idle} "
want() { [[ "$sections" == *" $1 "* ]]; }
# The sections that use the broadcast's store (seeded after section 1b).
needs_store() { local s; for s in broadcast platforms hubs sandbox postgres latency upserts; do want "$s" && return 0; done; return 1; }

scripts/setup.sh --postgres >&2
need=()
command -v nghttpd >/dev/null || need+=(nghttp2-server)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v nginx >/dev/null || need+=(nginx-light)
command -v wrk >/dev/null || need+=(wrk)
command -v openssl >/dev/null || need+=(openssl)
command -v cc >/dev/null || need+=(gcc)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ "${#need[@]}" -gt 0 ]; then
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

mkdir -p "$(dirname "$out")"
bin=${PUSHGATE_BIN:-}
if [ -z "$bin" ]; then
  echo "building release…" >&2
  scripts/build-release.sh >&2
  bin=$root/.build/release/pushgate
fi

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  # Throwaway PostgreSQL clusters a section left behind when the run stopped early.
  for dir in "${pg_dir:-}" "${ev_pg_dir:-}"; do
    [ -n "$dir" ] && [ -d "$dir" ] && "$root/scripts/postgres.sh" stop "$dir" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
results=$work/results.txt
: > "$results"
record() { echo "$1=$2" >> "$results"; echo "  $1 = $2" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 100); do curl -sk -o /dev/null "$1" && return 0; sleep 0.1; done; echo "nothing answers $1" >&2; return 1; }
# CPU seconds (user + system) a process has used so far.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }
# Empty files named as `pushgate bench dispatch`'s tokens 0..<max($2, 2000) (its warm-up) in $1,
# so that a static sink (nghttpd) answers each with 200.
bench_tokens() { python3 scripts/bench-tokens.py "$1" "$2"; }

cc -O2 -o "$work/curl_floor" Benchmarks/CurlFloor/curl_floor.c -lcurl -lpthread
cc -O2 -o "$work/fixed_rate" Benchmarks/FixedRate/fixed_rate.c -lcurl -lm
if want upserts; then cc -O2 -o "$work/store_bound" Benchmarks/StoreBound/store_bound.c -lsqlite3; fi
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
  -days 1 -subj "/CN=localhost" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>/dev/null

if want dispatch; then
echo "== python virtual environment with aioapns" >&2
python3 -m venv "$work/venv" >&2
"$work/venv/bin/pip" install -q aioapns >&2
fi

# ---------------------------------------------------------------------------------------------
# The nginx sink: each service's documented answers (used by the broadcast, the aioapns
# comparison, and as the latency and upsert reference).
token=$(printf 'ab%.0s' $(seq 1 32))
nginx_port=$(free_port)
plain_port=$(free_port)
mkdir -p "$work/nginx"
# PUSHGATE_BENCH_FAILING_APNS=1: the broadcast's APNs devices (their seeded tokens start with
# sixteen zeros) are answered 400 BadDeviceToken, a failure that prunes nothing: with
# PUSHGATE_BENCH_WEBHOOKS=delivery.failed each becomes an event (65% of the broadcast).
failing_apns=""
if [ -n "${PUSHGATE_BENCH_FAILING_APNS:-}" ]; then
  failing_apns='location ~ "^/3/device/0{16}" { default_type application/json; return 400 '"'"'{"reason":"BadDeviceToken"}'"'"'; }'
fi
cat > "$work/nginx/nginx.conf" <<NGINX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  http2_max_concurrent_streams 1000;
  # APNs echoes the request's apns-id (clients such as aioapns match answers by it), or makes one.
  map \$http_apns_id \$apns_id { "" \$request_id; default \$http_apns_id; }
  client_body_buffer_size 64k;
  server {
    listen 127.0.0.1:$nginx_port ssl http2;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    # APNs (api.push.apple.com): 200 with apns-id; a token Apple no longer knows: 410 Unregistered.
    $failing_apns
    location ~ "^/3/device/[0-9a-f]*ff\$" {
      default_type application/json;
      return 410 '{"reason":"Unregistered","timestamp":1700000000000}';
    }
    location /3/device/ { add_header apns-id \$apns_id always; return 200; }
    # FCM HTTP v1: 200 with the message name; Google's OAuth token endpoint.
    location ~ "^/v1/projects/([^/]+)/messages:send\$" {
      default_type application/json;
      return 200 '{"name":"projects/\$1/messages/0:\$request_id"}';
    }
    location = /token {
      default_type application/json;
      return 200 '{"access_token":"ya29.bench-token","expires_in":3599,"token_type":"Bearer"}';
    }
    # WNS: 200 with X-WNS-Status; its OAuth token endpoint.
    location /wns/ { add_header X-WNS-Status received always; add_header X-WNS-Msg-ID \$request_id always; return 200; }
    # Web Push (RFC 8030): 201 Created with the message's Location.
    location /wpush/ { add_header Location /m/\$request_id always; return 201; }
    location = /wns-token {
      default_type application/json;
      return 200 '{"token_type":"bearer","access_token":"EgAbench","expires_in":86400}';
    }
  }
  server {
    listen 127.0.0.1:$plain_port;
    location / { default_type application/json; return 200 '{"ok":true}'; }
  }
}
NGINX
nginx -c "$work/nginx/nginx.conf" -p "$work/nginx"
sink="https://127.0.0.1:$nginx_port"
wait_http "$sink/3/device/$token"

# ---------------------------------------------------------------------------------------------
want dispatch && echo "== 1. dispatch: $dispatch requests per round, $rounds round(s), nghttpd sink" >&2
mkdir -p "$work/docroot/3/device"
# One file per token that `pushgate bench dispatch` sends to (nghttpd answers 404 for any other path).
bench_tokens "$work/docroot/3/device" "$dispatch"
: > "$work/docroot/3/device/$token"
h2port=$(free_port)
nghttpd --htdocs="$work/docroot" --max-concurrent-streams=$((streams * 4)) "$h2port" "$work/key.pem" "$work/cert.pem" >/dev/null 2>&1 &
pids+=($!)
sleep 1
url="https://127.0.0.1:$h2port"
printf '%s' '{"aps":{"alert":"From bench: throughput"}}' > "$work/payload.json"
openssl ecparam -name prime256v1 -genkey -noout -out "$work/apns-key.pem" 2>/dev/null
cat > "$work/aioapns_bench.py" <<'PY'
import asyncio, ssl, sys, time
from aioapns import APNs, NotificationRequest
from aioapns.connection import APNsProductionClientProtocol

port, ca, key, token, count, concurrency = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
APNsProductionClientProtocol.APNS_SERVER = "127.0.0.1"
APNsProductionClientProtocol.APNS_PORT = int(port)

async def main():
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    client = APNs(key=open(key).read(), key_id="BENCHKEY01", team_id="BENCHTEAM1", topic="com.example.bench",
                  use_sandbox=False, ssl_context=context, max_connections=1)
    async def one():
        response = await client.send_notification(NotificationRequest(device_token=token, message={"aps": {"alert": "From bench: throughput"}}))
        return response.is_successful
    await asyncio.gather(*(one() for _ in range(200)))
    queue = asyncio.Queue()
    for _ in range(count): queue.put_nowait(None)
    failed = 0
    async def worker():
        nonlocal failed
        while not queue.empty():
            queue.get_nowait()
            if not await one(): failed += 1
    started = time.monotonic()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.monotonic() - started
    print(f"aioapns: {count} requests in {elapsed:.2f} s = {count / elapsed:.0f} requests/s ({failed} failed)")

asyncio.run(main())
PY
rate_of() { sed -nE 's/.* = ([0-9]+) (requests|notifications)\/s.*/\1/p' | head -1; }
# `pushgate bench dispatch` to the sink at $1: its rate, or the end of the whole run when it did
# not measure real sends (it exits non-zero unless every notification succeeded).
bench_dispatch() {
  local output
  if ! output=$("$bin" bench dispatch --url "$1" --ca-file "$work/cert.pem" --count "$dispatch" \
    --connections 1 --streams "$streams" --pools "$pools" 2>&1); then
    echo "$output" >&2
    echo "bench-all: pushgate bench dispatch against $1 did not measure real sends (above); stopping" >&2
    exit 1
  fi
  echo "$output" | sed -nE 's/.*CPU ([0-9.]+) us per notification.*/\1/p' > "$work/last_cpu"
  echo "$output" | rate_of
}
cpu_of() { sed -nE 's/.*CPU ([0-9.]+) us per (request|notification).*/\1/p' | head -1; }
# WNS (HTTP/1.1, 32 connections per pool as the gateway opens them) to nginx's /wns/ channel URIs:
# "rate cpu_us_per_notification", or the end of the whole run when it did not measure real sends.
bench_dispatch_wns() {
  local output
  if ! output=$("$bin" bench dispatch --pns wns --url "$sink" --ca-file "$work/cert.pem" --count "$dispatch" \
    --connections 32 --pools "$pools" 2>&1); then
    echo "$output" >&2
    echo "bench-all: pushgate bench dispatch --pns wns did not measure real sends (above); stopping" >&2
    exit 1
  fi
  echo "$(echo "$output" | rate_of) $(echo "$output" | sed -nE 's/.*CPU ([0-9.]+) us per notification.*/\1/p')"
}
want dispatch || rounds_run=0
for round in $(seq 1 "${rounds_run:-$rounds}"); do
  echo "-- round $round" >&2
  h2=$(h2load -n "$dispatch" -c 1 -m "$streams" -d "$work/payload.json" -H 'apns-push-type: alert' \
    -H 'apns-topic: com.example.bench' "$url/3/device/$token" | sed -nE 's/^finished in .*, ([0-9.]+) req\/s.*/\1/p')
  record "dispatch.h2load.r$round" "${h2%.*}"
  record "dispatch.curl_poll.r$round" "$("$work/curl_floor" poll "$url/3/device/$token" "$work/cert.pem" "$dispatch" "$streams" "$pools" | rate_of)"
  record "dispatch.curl_socket.r$round" "$("$work/curl_floor" socket "$url/3/device/$token" "$work/cert.pem" "$dispatch" "$streams" "$pools" | rate_of)"
  rate=$(bench_dispatch "$url")  # an assignment: the run stops here when the bench fails
  record "dispatch.pushgate.r$round" "$rate"
  # aioapns matches answers by the apns-id header, which nghttpd does not echo: both it and
  # Pushgate are measured against nginx too.
  rate=$(bench_dispatch "$sink")
  record "dispatch.pushgate_nginx.r$round" "$rate"
  record "dispatch.pushgate_nginx_cpu_us.r$round" "$(cat "$work/last_cpu")"
  # The C client against the same nginx, HTTP/2 (APNs' path) and HTTP/1.1 (WNS's): rate and CPU per request.
  floor=$("$work/curl_floor" socket "$sink/3/device/$token" "$work/cert.pem" "$dispatch" "$streams" "$pools")
  record "dispatch.curl_socket_nginx.r$round" "$(echo "$floor" | rate_of)"
  record "dispatch.curl_socket_nginx_cpu_us.r$round" "$(echo "$floor" | cpu_of)"
  wns=$(bench_dispatch_wns)
  record "dispatch.pushgate_wns_nginx.r$round" "${wns% *}"
  record "dispatch.pushgate_wns_nginx_cpu_us.r$round" "${wns#* }"
  floor=$("$work/curl_floor" socket-h1 "$sink/wns/?token=floor" "$work/cert.pem" "$dispatch" 32 "$pools")
  record "dispatch.curl_h1_nginx.r$round" "$(echo "$floor" | rate_of)"
  record "dispatch.curl_h1_nginx_cpu_us.r$round" "$(echo "$floor" | cpu_of)"
  record "dispatch.aioapns.r$round" "$("$work/venv/bin/python" "$work/aioapns_bench.py" "$nginx_port" "$work/cert.pem" \
    "$work/apns-key.pem" "$token" $((dispatch / 10)) "$streams" | rate_of)"
done

# ---------------------------------------------------------------------------------------------
needs_store && echo "== 2. broadcast to $broadcast registrations, nginx sink" >&2

# Credentials and a configuration: what `pushgate sandbox` writes, pointed at nginx.
"$bin" sandbox --dir "$work/sandbox" > "$work/sandbox.out" 2>/dev/null &
sandbox_pid=$!
for _ in $(seq 1 100); do grep -q gateway "$work/sandbox.out" 2>/dev/null && break; sleep 0.1; done
kill "$sandbox_pid"; wait "$sandbox_pid" 2>/dev/null || true
gateway_port=$(free_port)
python3 - "$work/sandbox/config.json" "$sink" "$nginx_port" "$work/cert.pem" "$gateway_port" "$plain_port" \
  "${PUSHGATE_BENCH_WEBHOOKS:-}" <<'PY'
import json, sys
path, sink, port, ca, gateway_port = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
plain_port, webhook_events = sys.argv[6], sys.argv[7]
config = json.load(open(path))
config["listener"]["port"] = gateway_port
config["listener"].pop("tls", None)  # plain HTTP on loopback: the send path, not TLS, is measured
config["store"] = {"sqlite": {"path": "bench.sqlite"}}
app = config["apps"]["default"]
app["handles"]["wnsChannelHosts"] = [f"127.0.0.1:{port}"]
services = app["services"]
services["apns"]["endpoint"] = sink
services["apns"]["caFile"] = ca
account_path = services["fcm"]["serviceAccount"]["file"]
account = json.load(open(account_path))
account["token_uri"] = sink + "/token"
json.dump(account, open(account_path, "w"))
services["fcm"]["endpoint"] = sink
services["fcm"]["caFile"] = ca
services.pop("gcm", None)
services["wns"] = {"tokenEndpoint": sink + "/wns-token", "clientId": "ms-app://s-1-15-2-bench",
                   "clientSecret": {"value": "bench-secret"}, "caFile": ca}
app["handles"]["webPushHosts"] = [f"127.0.0.1:{port}"]
services["browser"]["caFile"] = ca
# One sender (bob) makes hundreds of thousands of sends a run: past the per-user cap of stored
# sends a day (limits.maxStoredPerUserPerDay, 10,000, a bound against hostile users) they would be
# 429s. Raised here; every send still takes its token, so that cost is measured.
config.setdefault("limits", {})["maxStoredPerUserPerDay"] = 10_000_000
# Outcome webhooks (PUSHGATE_BENCH_WEBHOOKS, e.g. "delivery.failed,registration.pruned"): one
# receiver, nginx's plain server answering 200 to every POST, so that the cost of storing and
# posting the events is measured (docs/webhooks.md#cost).
if webhook_events:
    config["webhooks"] = {"allowedHosts": [f"http://127.0.0.1:{plain_port}"]}
    app["webhooks"] = {"receivers": [{"name": "bench", "url": f"http://127.0.0.1:{plain_port}/hooks",
                                      "secret": {"value": "bench-webhook-secret"}, "events": webhook_events.split(",")}]}
json.dump(config, open(path, "w"), indent=2)
PY
config=$work/sandbox/config.json

# The everyday send (a store and a sink of its own).
if want everyday; then source scripts/bench-everyday.sh; fi

if needs_store; then
echo "-- seeding $broadcast registrations" >&2
python3 - "$broadcast" "$nginx_port" "${PUSHGATE_BENCH_BROWSER_SHARE:-5}" "${PUSHGATE_BENCH_MIX:-}" > "$work/registrations.jsonl" <<'PY'
import base64, json, sys
count, port, browser_percent, mix = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
out = sys.stdout
# One receiving key for every browser (a sender's cost per message is the same for any receiver):
# an uncompressed P-256 point (the generator, 4 || Gx || Gy) and a 16-byte auth secret.
g = bytes.fromhex("04" "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                  "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
keys = {"p256dh": b64(g), "auth": b64(bytes(range(16)))}
browser_kinds = browser_percent // 5  # the share in twentieths, taken from APNs
for i in range(count):
    rid = "%016x" % ((i * 0x9E3779B97F4A7C15) % (1 << 64))  # ids in no platform order
    kind = i % 20
    if mix == "worldwide":
        # A worldwide audience: 35% APNs, 60% FCM v1, 5% WNS.
        kind = 0 if kind < 7 else 14 if kind < 19 else 19
        browser_kinds = 0
    if kind < 14 - browser_kinds:
        platform, handle = "apns", "%064x" % i
    elif kind < 14:
        platform = "browser"
        handle = json.dumps({"endpoint": "https://127.0.0.1:%s/wpush/%d" % (port, i), "keys": keys}, separators=(",", ":"))
        out.write(json.dumps({"id": rid, "platform": platform, "handle": handle, "tags": ["username:carol", "news"], "owner": "carol"}) + "\n")
        continue
    elif kind < 19:
        platform, handle = "fcm", "bench-%08d:APA91b" % i + "x" * 140
    else:
        platform, handle = "wns", "https://127.0.0.1:%s/wns/?token=%d" % (port, i)
    out.write('{"id":"%s","platform":"%s","handle":"%s","tags":["username:carol","news"],"owner":"carol"}\n' % (rid, platform, handle))
out.write('{"id":"alice0000000001","platform":"apns","handle":"%s","tags":["username:alice"],"owner":"alice"}\n' % ("ab" * 32))
PY
seed_start=$(date +%s.%N)
(cd "$work/sandbox" && "$bin" registrations import --config "$config" "$work/registrations.jsonl" >&2)
record "broadcast.seed_seconds" "$(awk -v a="$seed_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"

# The reference: the dispatch engine alone against the same nginx, just before.
rate=$(bench_dispatch "$sink")
record "broadcast.reference_dispatch_rate" "$rate"
fi

# One broadcast through a freshly started gateway: `prefix` names the figures, `config` the
# configuration (the outbox on, or off for the reference), `profile` whether perf records it.
# A perf recording summarised: self time by thread, by library, by symbol (top 40 each). perf
# report goes to a file, then head: a pipe would end the script under pipefail (SIGPIPE).
perf_tables() {
  for key in comm dso sym; do
    perf report -i "$1" --no-children --sort "$key" -g none -q 2>/dev/null > "$work/report.txt" || true
    head -n 40 "$work/report.txt"
    echo
  done
}

broadcast_once() {
  local prefix=$1 config=$2 profile=$3 pns=${4:-all}
  (cd "$work/sandbox" && exec "$bin" serve --config "$config" > "$work/gateway-$prefix.log" 2>&1) &
  local gateway=$!
  pids+=($gateway)
  base="http://127.0.0.1:$gateway_port"
  wait_http "$base/healthz"
  gateway_pid=$gateway
  profiler=""
  if [ "$profile" = yes ] && [ -n "${PUSHGATE_BENCH_PERF:-}" ] && command -v perf >/dev/null; then
    perf record -F 499 -g -p "$gateway_pid" -o "$work/broadcast.perf" >/dev/null 2>&1 &
    profiler=$!
    sleep 1
  fi
  cpu_before=$(cpu_seconds "$gateway_pid")
  start=$(date +%s.%N)
  curl -s -u bob:bob -X POST -H 'Content-Type: application/json' -d '"Hello, everyone"' \
    "$base/api/notifications?pns=$pns&to_tag=carol" -o "$work/broadcast.json" -w '%{http_code}\n' > "$work/broadcast.status"
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  cpu_after=$(cpu_seconds "$gateway_pid")
  if [ -n "$profiler" ]; then
    kill -INT "$profiler"; wait "$profiler" 2>/dev/null || true
    mkdir -p "$(dirname "$out")"
    profile=${out%.json}-broadcast-profile.txt
    { echo "# perf, gateway process, during the broadcast: by thread, by library, top symbols"
      perf_tables "$work/broadcast.perf"
    } > "$profile"
    cp "$work/broadcast.perf" "${out%.json}-broadcast.perf.data" 2>/dev/null || true
    echo "profile: $profile" >&2
  fi
  record "$prefix.http_status" "$(cat "$work/broadcast.status")"
  record "$prefix.seconds" "$elapsed"
  # The targets the send reached (one platform's share with pns=<platform>).
  local targets
  targets=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("success",0)+r.get("failure",0))' "$work/broadcast.json")
  [ "$targets" -gt 0 ] || { echo "bench-all: $prefix reached no target; stopping" >&2; exit 1; }
  record "$prefix.targets" "$targets"
  record "$prefix.rate" "$(awk -v n="$targets" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }')"
  record "$prefix.peak_rss_mib" "$(awk -v k="$(hwm_kib "$gateway_pid")" 'BEGIN { printf "%.0f", k / 1024 }')"
  record "$prefix.cpu_us_per_notification" "$(awk -v a="$cpu_before" -v b="$cpu_after" -v n="$targets" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
  python3 - "$work/broadcast.json" "$prefix" >> "$results" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
prefix = sys.argv[2]
print("%s.succeeded=%d" % (prefix, result.get("success", 0)))
print("%s.failed=%d" % (prefix, result.get("failure", 0)))
for platform in result.get("platforms", []):
    if platform.get("total", 0) == 0: continue
    print("%s.%s=%s" % (prefix, platform.get("platform"), json.dumps(platform.get("outcomes"), separators=(",", ":"))))
PY
  tail -n 5 "$results" >&2
  # With outcome webhooks on, the run checks its own events: one delivery.failed event stored per
  # failed target, every one posted (the receiver answers 200), and how long the posting took
  # after the send's answer (the drain). An event missing or unposted after 10 minutes stops it.
  if [ -n "${PUSHGATE_BENCH_WEBHOOKS:-}" ]; then
    python3 - "$work/sandbox/bench.sqlite" "$work/broadcast.json" "$prefix" "$PUSHGATE_BENCH_WEBHOOKS" >> "$results" <<'PY' || exit 1
import json, sqlite3, sys, time
database, result_path, prefix, kinds = sys.argv[1:5]
result = json.load(open(result_path))
notification = result["notificationId"]
expected = result.get("failure", 0) if "delivery.failed" in kinds.split(",") else 0
start = time.time()
while True:
    connection = sqlite3.connect(database, timeout=30)
    stored, posted = connection.execute(
        "SELECT count(*), count(posted_at) FROM outbox_rows WHERE kind LIKE 'webhook:%' AND notification_id = ? "
        "AND body LIKE '%\"type\":\"delivery.failed\"%'", (notification,)).fetchone()
    connection.close()
    if (stored >= expected and posted >= stored) or time.time() - start > 600:
        break
    time.sleep(0.5)
print("%s.webhook_events=%d" % (prefix, stored))
print("%s.webhook_events_posted=%d" % (prefix, posted))
print("%s.webhook_drain_seconds=%.1f" % (prefix, time.time() - start))
if stored != expected or posted != stored:
    sys.exit("bench-all: %s: %d delivery.failed events stored and %d posted; expected %d of each" % (prefix, stored, posted, expected))
PY
    tail -n 3 "$results" >&2
  fi
  kill -TERM "$gateway" 2>/dev/null; wait "$gateway" 2>/dev/null || true
}

# The outbox costs at most 20% of the broadcast rate: both modes, interleaved, same store and sink.
direct_config=$work/sandbox/config-direct.json
python3 - "$config" "$direct_config" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["outbox"] = {"enabled": False}
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
broadcast_rounds=${PUSHGATE_BENCH_BROADCAST_ROUNDS:-1}
want broadcast || broadcast_rounds=0
for round in $(seq 1 "$broadcast_rounds"); do
  echo "-- broadcast round $round: without the outbox (reference), then through it" >&2
  broadcast_once "broadcast_direct.r$round" "$direct_config" no
  broadcast_once "broadcast.r$round" "$config" "$([ "$round" = 1 ] && echo yes || echo no)"
done
# Each platform alone (pns=<platform>: that platform's share of the audience), through the outbox,
# beside the C libcurl client on the same nginx (HTTP/2; HTTP/1.1 for WNS): rate and CPU per request.
if want platforms; then
  echo "== 2c. each platform alone, and the C client beside it" >&2
  for pns in apns fcm wns browser; do
    if [ "$pns" = wns ]; then
      floor=$("$work/curl_floor" socket-h1 "$sink/wns/?token=floor" "$work/cert.pem" "$dispatch" 32 "$pools")
    else
      floor=$("$work/curl_floor" socket "$sink/3/device/$token" "$work/cert.pem" "$dispatch" "$streams" "$pools")
    fi
    record "platforms.$pns.curl_rate" "$(echo "$floor" | rate_of)"
    record "platforms.$pns.curl_cpu_us" "$(echo "$floor" | sed -nE 's/.*CPU ([0-9.]+) us per request.*/\1/p')"
    if [ "$(grep -cE "\"platform\": ?\"$pns\"" "$work/registrations.jsonl")" -eq 0 ]; then
      echo "-- no $pns registrations in this mix" >&2
      continue
    fi
    broadcast_once "platforms.$pns" "$config" no "$pns"
  done
fi
# The summary's broadcast figures are the last round's, through the outbox (the default path).
grep "^broadcast\.r$broadcast_rounds\." "$results" | sed "s/^broadcast\.r$broadcast_rounds\./broadcast./" >> "$results.tmp" || true
grep "^broadcast_direct\.r$broadcast_rounds\." "$results" | sed "s/^broadcast_direct\.r$broadcast_rounds\./broadcast_direct./" >> "$results.tmp" || true
touch "$results.tmp"; cat "$results.tmp" >> "$results"; rm -f "$results.tmp"

# The Notification Hubs API beside the tutorial API.
if want hubs; then source scripts/bench-hubs.sh; fi
# The same broadcast against `pushgate sandbox` (every platform's real answers), nginx beside it.
if want sandbox; then source scripts/bench-sandbox-sink.sh; fi
# The same broadcast from PostgreSQL, one and two instances.
if want postgres; then source scripts/bench-postgres.sh; fi

# The later sections use a gateway on the full store (the outbox on, as shipped).
base="http://127.0.0.1:$gateway_port"  # also when no broadcast ran before (a latency-only run)
if want latency || want upserts; then
(cd "$work/sandbox" && exec "$bin" serve --config "$config" > "$work/gateway.log" 2>&1) &
gateway=$!
pids+=($gateway)
wait_http "$base/healthz"
gateway_pid=$gateway

# ---------------------------------------------------------------------------------------------
if want latency; then
echo "== 3. single-target sends at 1,000 requests/s for 30 s (open loop)" >&2
auth="Basic $(printf 'bob:bob' | base64)"
"$work/fixed_rate" "$base/api/notifications?pns=apns&to_tag=alice" 1000 5 "$auth" '"warm-up"' >/dev/null || true
latency=$("$work/fixed_rate" "$base/api/notifications?pns=apns&to_tag=alice" 1000 30 "$auth" '"Hello, Alice"' || true)
echo "$latency" >&2
for key in p50_ms p99_ms p999_ms max_ms errors late_starts; do
  record "latency.gateway.$key" "$(echo "$latency" | sed -nE "s/.*$key=([0-9.]+).*/\1/p")"
done
reference=$("$work/fixed_rate" "http://127.0.0.1:$plain_port/" 1000 10 "" '"x"' || true)
for key in p50_ms p99_ms p999_ms; do
  record "latency.nginx.$key" "$(echo "$reference" | sed -nE "s/.*$key=([0-9.]+).*/\1/p")"
done

fi

# ---------------------------------------------------------------------------------------------
if want upserts; then
echo "== 4. registration upserts (wrk, 32 connections, ${PUSHGATE_BENCH_UPSERT_SECONDS:-10} s): random ids of one account, changing tags" >&2
# Every app launch re-registers: alice's $upsert_ids registrations (reserved 100 at a time, the
# default cap on reservations, and registered once), then PUT on a random one of them with a
# random tag, beside the gateway's own /healthz at 32 connections in the same run. Every answer
# must be 2xx.
upsert_ids=${PUSHGATE_BENCH_UPSERT_IDS:-500}
upsert_seconds=${PUSHGATE_BENCH_UPSERT_SECONDS:-10}
upsert_connections=32
alice="Basic $(printf 'alice:alice' | base64)"
: > "$work/upsert-ids.txt"
upsert_handle() { printf 'cd%062x' "$1"; }
for ((n = 0; n < upsert_ids; n++)); do
  id=$(curl -sf -H "Authorization: $alice" -X POST "$base/api/register" | tr -d '"') || { echo "upserts: could not reserve an id" >&2; exit 1; }
  curl -sf -o /dev/null -H "Authorization: $alice" -H 'Content-Type: application/json' -X PUT "$base/api/register/$id" \
    -d "{\"Platform\":\"apns\",\"Handle\":\"$(upsert_handle "$n")\",\"Tags\":[\"news\"]}" \
    || { echo "upserts: could not register $id" >&2; exit 1; }
  echo "$id" >> "$work/upsert-ids.txt"
done
{
  echo 'ids = {'; sed 's/.*/  "&",/' "$work/upsert-ids.txt"; echo '}'
  cat <<LUA
request = function()
  local n = math.random(#ids)
  local body = string.format('{"Platform":"apns","Handle":"cd%062x","Tags":["news","topic-%d"]}', n - 1, math.random(1000))
  return wrk.format("PUT", "/api/register/" .. ids[n], {["Content-Type"] = "application/json", ["Authorization"] = "$alice"}, body)
end
LUA
} > "$work/upsert.lua"
upsert_healthz=$(wrk -t 2 -c "$upsert_connections" -d "${upsert_seconds}s" "$base/healthz" | awk '/Requests\/sec/ { printf "%.0f", $2 }')
# The store's own bound S, first: the same statements in the same transaction groups (one upsert
# per connection in a commit, the most sharing 32 connections allow) on the same file, from a plain
# C program while the gateway idles; it checks its own writes.
store_bound=$("$work/store_bound" "$work/sandbox/bench.sqlite" "$work/upsert-ids.txt" alice "$upsert_connections" "$upsert_seconds") \
  || { echo "upserts: the store's bound could not be measured: $store_bound" >&2; exit 1; }
echo "$store_bound" >&2
store_rate=$(sed -nE 's/.* = ([0-9]+) upserts\/s.*/\1/p' <<<"$store_bound")
upserts=$(wrk -t 2 -c "$upsert_connections" -d "${upsert_seconds}s" --latency -s "$work/upsert.lua" "$base/api/register/")
upsert_rate=$(echo "$upserts" | awk '/Requests\/sec/ { printf "%.0f", $2 }')
upsert_bad=$(echo "$upserts" | awk '/Non-2xx/ { n = $5 } END { print n + 0 }')
upsert_errors=$(echo "$upserts" | awk '/Socket errors/ { gsub(/,/, ""); n = $4 + $6 + $8 + $10 } END { print n + 0 }')
[ "$upsert_bad" -eq 0 ] && [ "$upsert_errors" -eq 0 ] || { echo "$upserts" >&2; echo "upserts: $upsert_bad answers were not 2xx, $upsert_errors socket errors" >&2; exit 1; }
[ "${upsert_rate:-0}" -gt 0 ] && [ "$upsert_rate" -lt "${upsert_healthz:-0}" ] \
  || { echo "upserts: implausible: $upsert_rate upserts/s beside /healthz $upsert_healthz/s" >&2; exit 1; }
record "upserts.ids" "$upsert_ids"
record "upserts.gateway.per_second" "$upsert_rate"
record "upserts.gateway.non_2xx" "$upsert_bad"
record "upserts.gateway.p50" "$(echo "$upserts" | awk '$1 == "50%" { print $2 }')"
record "upserts.gateway.p99" "$(echo "$upserts" | awk '$1 == "99%" { print $2 }')"
record "upserts.healthz.per_second" "$upsert_healthz"
record "upserts.over_healthz" "$(awk -v u="$upsert_rate" -v h="$upsert_healthz" 'BEGIN { printf "%.3f", u / h }')"
# The bound 1 / (1/H + 1/S), the ratio to it and the target (≥ 0.5 ×, p99 ≤ 10 ms): pass or miss.
[ "${store_rate:-0}" -gt 0 ] || { echo "upserts: implausible store bound: '$store_bound'" >&2; exit 1; }
upsert_p99_ms=$(awk '$1 == "99%" { v = $2; n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) ; else if (v ~ /m$/) n *= 60000; else if (v ~ /s$/) n *= 1000; printf "%.2f", n }' <<<"$upserts")
upsert_bound=$(awk -v h="$upsert_healthz" -v s="$store_rate" 'BEGIN { printf "%.1f", 1 / (1 / h + 1 / s) }')
upsert_of_bound=$(awk -v u="$upsert_rate" -v b="$upsert_bound" 'BEGIN { printf "%.4f", u / b }')
record "upserts.store_bound.per_second" "$store_rate"
record "upserts.store_bound.group" "$upsert_connections"
record "upserts.store_bound.commit_p99_ms" "$(sed -nE 's/.*commit p50 [0-9.]+ ms, p99 ([0-9.]+) ms.*/\1/p' <<<"$store_bound")"
record "upserts.store_bound.cpu_us_per_upsert" "$(sed -nE 's/.*CPU ([0-9.]+) us per upsert.*/\1/p' <<<"$store_bound")"
record "upserts.bound.per_second" "$upsert_bound"
record "upserts.of_bound" "$upsert_of_bound"
record "upserts.gateway.p99_ms" "$upsert_p99_ms"
awk -v x="$upsert_of_bound" 'BEGIN { exit !(x > 0 && x <= 1.0) }' \
  || { echo "upserts: implausible: $upsert_rate upserts/s is $upsert_of_bound × the bound $upsert_bound/s (H $upsert_healthz, S $store_rate)" >&2; exit 1; }
upsert_verdict() { awk -v x="$1" -v m="$2" -v op="$3" 'BEGIN { ok = op == ">=" ? x >= m : x <= m; print ok ? "pass" : "miss" }'; }
record "upserts.target.of_bound_min" "0.5"
record "upserts.target.of_bound" "$(upsert_verdict "$upsert_of_bound" 0.5 ">=")"
record "upserts.target.p99_max_ms" "10"
record "upserts.target.p99" "$(upsert_verdict "$upsert_p99_ms" 10 "<=")"
echo "-- upserts: bound 1 / (1/H + 1/S) = $upsert_bound/s (H $upsert_healthz, S $store_rate); $upsert_rate upserts/s = $upsert_of_bound × the bound;" \
  "targets: ≥ 0.5 ×: $(upsert_verdict "$upsert_of_bound" 0.5 ">="), p99 $upsert_p99_ms ms ≤ 10 ms: $(upsert_verdict "$upsert_p99_ms" 10 "<=")" >&2
fi
kill "$gateway_pid"; wait "$gateway" 2>/dev/null || true
fi

# ---------------------------------------------------------------------------------------------
if want idle; then
echo "== 5. idle RSS after start-up (empty store)" >&2
rm -f "$work/sandbox/bench.sqlite"*
(cd "$work/sandbox" && exec "$bin" serve --config "$config" > "$work/gateway-idle.log" 2>&1) &
idle=$!
pids+=($idle)
wait_http "$base/healthz"
sleep 2
idle_pid=$idle
record "idle.rss_mib" "$(awk -v k="$(rss_kib "$idle_pid")" 'BEGIN { printf "%.1f", k / 1024 }')"
# Of which private (anonymous: heap, stacks) and file-backed (the binary's and shared libraries'
# code pages, shared with other processes and clean).
record "idle.rss_anon_mib" "$(awk '/^RssAnon/ { printf "%.1f", $2 / 1024 }' "/proc/$idle_pid/status")"
record "idle.rss_file_mib" "$(awk '/^RssFile/ { printf "%.1f", $2 / 1024 }' "/proc/$idle_pid/status")"
awk '/^[0-9a-f]+-/ { name = $6 } /^Rss:/ { rss[name] += $2 } END { for (n in rss) if (rss[n] > 1000) printf "%6.1f MiB %s\n", rss[n] / 1024, n }' \
  "/proc/$idle_pid/smaps" | sort -rn > "${out%.json}-idle-rss.txt"
kill "$idle_pid"; wait "$idle" 2>/dev/null || true
fi

# ---------------------------------------------------------------------------------------------
PUSHGATE_BENCH_BROADCAST_TOTAL=$broadcast python3 - "$results" "$out" "$rounds" <<'PY'
import json, os, platform, statistics, subprocess, sys, time
path, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
raw = {}
for line in open(path):
    key, _, value = line.strip().partition("=")
    raw[key] = value
def num(key):
    try: return float(raw.get(key, ""))
    except ValueError: return None
def rounds_of(name):
    values = [num(f"dispatch.{name}.r{r}") for r in range(1, rounds + 1)]
    return [v for v in values if v is not None]
dispatch = {name: rounds_of(name) for name in ["h2load", "curl_poll", "curl_socket", "pushgate", "pushgate_nginx", "pushgate_nginx_cpu_us",
                                               "curl_socket_nginx", "curl_socket_nginx_cpu_us", "pushgate_wns_nginx",
                                               "pushgate_wns_nginx_cpu_us", "curl_h1_nginx", "curl_h1_nginx_cpu_us", "aioapns"]}
median = {name: statistics.median(v) if v else None for name, v in dispatch.items()}
ratio_rounds = lambda a, b: [x / y for x, y in zip(dispatch[a], dispatch[b]) if y]
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
summary = {
    "machine": {"cpus": os.cpu_count(), "cpu": cpu, "kernel": platform.release(), "date": time.strftime("%Y-%m-%d %H:%M")},
    "dispatch": {"rounds": dispatch, "median": median,
                 "pushgate_over_curl_socket": ratio_rounds("pushgate", "curl_socket"),
                 "pushgate_over_aioapns": ratio_rounds("pushgate_nginx", "aioapns"),
                 "wns_over_apns_nginx": ratio_rounds("pushgate_wns_nginx", "pushgate_nginx"),
                 "pushgate_over_h2load": ratio_rounds("pushgate", "h2load")},
    "broadcast": {k.split(".", 1)[1]: v for k, v in raw.items() if k.startswith("broadcast.")},
    "broadcast_direct": {k.split(".", 1)[1]: v for k, v in raw.items() if k.startswith("broadcast_direct.")},
    "latency": {k.split(".", 1)[1]: v for k, v in raw.items() if k.startswith("latency.")},
    "upserts": {k.split(".", 1)[1]: v for k, v in raw.items() if k.startswith("upserts.")},
    "postgres": {k.split(".", 1)[1]: v for k, v in raw.items() if k.startswith("postgres.")},
    "hubs": {k.split(".", 1)[1]: v for k, v in raw.items() if k.startswith("hubs.")},
    "platforms": {k.split(".", 1)[1]: v for k, v in raw.items() if k.startswith("platforms.")},
    "idle": {"rss_mib": num("idle.rss_mib"), "rss_anon_mib": num("idle.rss_anon_mib"), "rss_file_mib": num("idle.rss_file_mib")},
}
# The everyday send: everyday.<config>.<run>.<figure> nested, numbers as numbers.
everyday = {}
for key, value in raw.items():
    if not key.startswith("everyday."): continue
    node, parts = everyday, key.split(".")[1:]
    for part in parts[:-1]: node = node.setdefault(part, {})
    try: node[parts[-1]] = int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError: node[parts[-1]] = value
if everyday: summary["everyday"] = everyday
json.dump(summary, open(out, "w"), indent=2)
def fmt(v, unit=""):
    return "n/a" if v is None else (f"{v:,.0f}{unit}" if v >= 100 else f"{v:.2f}{unit}")
def span(values):
    return "n/a" if not values else f"{min(values):.2f}–{max(values):.2f}"
rows = [
    ("dispatch, Pushgate (notifications/s)", fmt(median["pushgate"]), "socket-action libcurl floor " + fmt(median["curl_socket"]),
     "× " + span(summary["dispatch"]["pushgate_over_curl_socket"]), "≥ 0.9"),
    ("dispatch vs aioapns (nginx sink)", fmt(median["pushgate_nginx"]), "aioapns " + fmt(median["aioapns"]), "× " + span(summary["dispatch"]["pushgate_over_aioapns"]), "≥ 10"),
    ("dispatch vs h2load", fmt(median["pushgate"]), "h2load " + fmt(median["h2load"]), "× " + span(summary["dispatch"]["pushgate_over_h2load"]), ""),
    ("dispatch, poll libcurl floor", fmt(median["curl_poll"]), "", "", ""),
    ("dispatch, WNS (HTTP/1.1, nginx sink)", fmt(median["pushgate_wns_nginx"]), "APNs on nginx " + fmt(median["pushgate_nginx"]),
     "× " + span(summary["dispatch"]["wns_over_apns_nginx"]), "≥ 0.9"),
    ("CPU per notification, APNs (µs, nginx)", fmt(median["pushgate_nginx_cpu_us"]), "C client (HTTP/2) " + fmt(median["curl_socket_nginx_cpu_us"]), "", "≤ C"),
    ("CPU per notification, WNS (µs, nginx)", fmt(median["pushgate_wns_nginx_cpu_us"]), "C client (HTTP/1.1) " + fmt(median["curl_h1_nginx_cpu_us"]), "", "≤ C"),
    ("C client on nginx, HTTP/1.1 vs HTTP/2", fmt(median["curl_h1_nginx"]), "HTTP/2 " + fmt(median["curl_socket_nginx"]), "", ""),
]
pl = summary["platforms"]
for name in ["apns", "fcm", "wns", "browser"]:
    if pl.get(f"{name}.rate"):
        rows.append((f"{name} alone: rate / CPU per notification (µs)", f"{float(pl[name + '.rate']):,.0f} / {pl.get(name + '.cpu_us_per_notification')}",
                     f"C client {float(pl.get(name + '.curl_rate') or 0):,.0f} / {pl.get(name + '.curl_cpu_us')}", "", "CPU ≤ C"))
b = summary["broadcast"]
bn = lambda k: num("broadcast." + k)
if bn("rate") and bn("reference_dispatch_rate"):
    rows.append((f"broadcast {int(b.get('succeeded', '0')) + int(b.get('failed', '0')):,} targets (notifications/s)", fmt(bn("rate")),
                 "dispatch on the same nginx " + fmt(bn("reference_dispatch_rate")), f"× {bn('rate') / bn('reference_dispatch_rate'):.2f}", "≥ 0.8"))
rows.append(("broadcast time (s)", b.get("seconds", "n/a"), "", "", "< 30"))
import re
direct = {k.split(".")[1]: num(k) for k in raw if re.fullmatch(r"broadcast_direct\.r\d+\.rate", k)}
outboxed = {k.split(".")[1]: num(k) for k in raw if re.fullmatch(r"broadcast\.r\d+\.rate", k)}
paired = sorted(set(direct) & set(outboxed))
if paired:
    per_round = ", ".join(f"{outboxed[r] / direct[r]:.2f}" for r in paired)
    rows.append(("broadcast through the outbox (notifications/s, median of rounds)", fmt(statistics.median(outboxed[r] for r in paired)),
                 "without the outbox " + fmt(statistics.median(direct[r] for r in paired)), f"× {per_round} (per round)", "≥ 0.8"))
rows.append(("broadcast peak RSS (MiB)", b.get("peak_rss_mib", "n/a"), "", "", "< 300"))
rows.append(("broadcast CPU per notification (µs)", b.get("cpu_us_per_notification", "n/a"), "", "", ""))
p = summary["postgres"]
if p.get("pg1.rate"):
    rows.append(("broadcast from PostgreSQL, 1 instance (notifications/s)", fmt(num("postgres.pg1.rate")), "SQLite " + fmt(bn("rate")),
                 f"× {num('postgres.pg1.rate') / bn('rate'):.2f}" if bn("rate") else "", ""))
    rows.append(("  CPU per notification (µs): gateway / PostgreSQL server", f"{p.get('pg1.gateway_cpu_us_per_notification')} / {p.get('pg1.server_cpu_us_per_notification')}",
                 "SQLite gateway " + b.get("cpu_us_per_notification", "n/a"), "", ""))
if p.get("pg2.rate"):
    rows.append(("two halves at once, 2 instances (notifications/s)", fmt(num("postgres.pg2.rate")), "1 instance " + fmt(num("postgres.pg2_one.rate")),
                 f"× {num('postgres.pg2.rate') / num('postgres.pg2_one.rate'):.2f}" if num("postgres.pg2_one.rate") else "", ""))
    rows.append(("  CPU per notification (µs): gateways / server (2 instances; 1 instance)",
                 f"{p.get('pg2.gateway_cpu_us_per_notification')} / {p.get('pg2.server_cpu_us_per_notification')}",
                 f"{p.get('pg2_one.gateway_cpu_us_per_notification')} / {p.get('pg2_one.server_cpu_us_per_notification')}", "", ""))
h = summary["hubs"]
if h:
    hub_rates = {k.split(".")[2]: num(k) for k in raw if re.fullmatch(r"hubs\.hub\.r\d+\.rate", k)}
    api_rates = {k.split(".")[2]: num(k) for k in raw if re.fullmatch(r"hubs\.api\.r\d+\.rate", k)}
    paired = sorted(set(hub_rates) & set(api_rates))
    if paired:
        ratios = [hub_rates[r] / api_rates[r] for r in paired if api_rates[r]]
        rows.append(("APNs share via /default/messages (notifications/s, median of rounds)", fmt(statistics.median(hub_rates[r] for r in paired)),
                     "/api/notifications " + fmt(statistics.median(api_rates[r] for r in paired)),
                     "× " + (f"{min(ratios):.2f}–{max(ratios):.2f}" if ratios else "n/a"), "≈ 1"))
    rows.append(("SAS check per request (ns): cached / uncached", f"{h.get('sas_cached_ns')} / {h.get('sas_uncached_ns')}",
                 "HMAC-SHA256 " + str(h.get("hmac_reference_ns")), "", ""))
l = summary["latency"]
rows.append(("single-target send at 1,000/s: p50 / p99 / p99.9 (ms)",
             f"{l.get('gateway.p50_ms')} / {l.get('gateway.p99_ms')} / {l.get('gateway.p999_ms')}",
             f"nginx {l.get('nginx.p50_ms')} / {l.get('nginx.p99_ms')} / {l.get('nginx.p999_ms')}", "", "p99 < 5"))
u = summary["upserts"]
rows.append(("registration upserts (per s, wrk 32 conn.; p99 ms)", f"{u.get('gateway.per_second', 'n/a')}; {u.get('gateway.p99', 'n/a')}",
             "/healthz " + u.get("healthz.per_second", "n/a"), u.get("over_healthz", "n/a"), ""))
if u.get("store_bound.per_second"):
    rows.append((f"  the store's own bound S (plain C, same statements, groups of {u.get('store_bound.group', '?')}; per s)",
                 fmt(num("upserts.store_bound.per_second")),
                 f"commit p99 {u.get('store_bound.commit_p99_ms', 'n/a')} ms, CPU {u.get('store_bound.cpu_us_per_upsert', 'n/a')} µs per upsert", "", ""))
    rows.append(("  upserts vs the bound 1 / (1/H + 1/S) (per s)", fmt(num("upserts.gateway.per_second")), "bound " + fmt(num("upserts.bound.per_second")),
                 "× " + u.get("of_bound", "n/a"),
                 f"≥ {u.get('target.of_bound_min')}: {u.get('target.of_bound')}; p99 ≤ {u.get('target.p99_max_ms')} ms: {u.get('target.p99')}"))
rows.append(("idle RSS (MiB): all / private / file-backed code", f"{fmt(summary['idle']['rss_mib'])} / {fmt(summary['idle']['rss_anon_mib'])} / {fmt(summary['idle']['rss_file_mib'])}", "", "", "< 30"))
widths = [max(len(r[i]) for r in rows + [("figure", "Pushgate", "reference (same run)", "ratio", "target")]) for i in range(5)]
header = ("figure", "Pushgate", "reference (same run)", "ratio", "target")
if any(not key.startswith("everyday.") for key in raw):  # not when the everyday section ran alone
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
print(f"\n{summary['machine']['cpus']} cores, {cpu}, {summary['machine']['date']}; JSON: {out}")

# The everyday send, one column per configuration.
def e(c, *path):
    node = everyday.get(c, {})
    for part in path: node = node.get(part, {}) if isinstance(node, dict) else {}
    return node
everyday_configs = [(k, label) for k, label in [("sqlite_outbox", "outbox on, SQLite"), ("sqlite_direct", "outbox off, SQLite"),
                                                 ("postgres_outbox", "outbox on, PostgreSQL")] if isinstance(everyday.get(k), dict)]
if everyday_configs:
    def cell(value, digits=0):
        return "n/a" if value in ({}, None) or isinstance(value, (dict, str)) else f"{value:,.{digits}f}"
    # The issue's targets (issue 55, section 5) as the section judged them: pass or miss each.
    def target_text(c):
        t = e(c, "target")
        if not isinstance(t, dict) or not t: return "n/a"
        parts = []
        if "of_bound" in t: parts.append(f"≥ {t.get('of_bound_min')} × bound: {t['of_bound']}")
        if "p99_c4" in t: parts.append(f"p99@4 ≤ {t.get('p99_c4_max_ms')} ms: {t['p99_c4']}")
        if "cpu" in t: parts.append(f"CPU ≤ {t.get('cpu_us_max')} µs: {t['cpu']}")
        return "; ".join(parts)
    rows = [
        ("sends/s, 64 connections", lambda c: cell(e(c, "c64", "sends_per_second"))),
        (f"notifications/s ({everyday.get('devices_per_user', 3)} per send)", lambda c: cell(e(c, "c64", "notifications_per_second"))),
        ("p50 / p99 at 64 connections (ms)", lambda c: f"{cell(e(c, 'c64', 'p50_ms'), 1)} / {cell(e(c, 'c64', 'p99_ms'), 1)}"),
        ("p50 / p99 at 4 connections (ms)", lambda c: f"{cell(e(c, 'c4', 'p50_ms'), 1)} / {cell(e(c, 'c4', 'p99_ms'), 1)}"),
        ("sends/s, 4 connections", lambda c: cell(e(c, "c4", "sends_per_second"))),
        ("gateway CPU per send (µs), 64 conn.", lambda c: cell(e(c, "c64", "cpu_us_per_send"))),
        ("PostgreSQL server CPU per send (µs)", lambda c: cell(e(c, "c64", "postgres_cpu_us_per_send")) if c.startswith("postgres") else "–"),
        ("reference: the gateway's /healthz, 64 conn. (req/s)", lambda c: cell(e(c, "healthz_per_second"))),
        ("sends/s ÷ healthz/s", lambda c: cell(e(c, "sends_over_healthz"), 4)),
        ("reference: C libcurl client, same sink (req/s)", lambda c: cell(e(c, "curl_per_second"))),
        ("notifications/s ÷ C client", lambda c: cell(e(c, "notifications_over_curl"), 4)),
        ("reference: pgbench, insert + update, pool's clients (sends/s)",
         lambda c: f"{cell(e(c, 'pgbench', 'sends_per_second'))} ({e(c, 'pgbench', 'clients')} clients)" if c.startswith("postgres") else "–"),
        ("wire bound (sends/s)", lambda c: cell(e(c, "wire_bound_per_second"))),
        ("of the bound", lambda c: cell(e(c, "of_bound"), 3)),
        ("target", target_text),
        ("machine idle (healthz, 64, 4, curl[, pgbench])", lambda c: " ".join(str(e(c, step, "idle")) if e(c, step, "idle") != {} else "?"
                                                                   for step in ("healthz", "sends64", "sends4", "curl") + (("pgbench",) if c.startswith("postgres") else ()))),
    ]
    header = [f"everyday send, {everyday.get('users', 0):,} users × {everyday.get('devices_per_user', 3)} APNs devices"] + [label for _, label in everyday_configs]
    table = [header] + [[name] + [f(c) for c, _ in everyday_configs] for name, f in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    print()
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in table[1:]:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |")
    print(f"idle RSS of the default gateway before load: VmRSS {everyday.get('idle_rss_mib', 'n/a')} MiB, RssAnon {everyday.get('idle_rss_anon_mib', 'n/a')} MiB; "
          f"{everyday.get('seconds_per_run', '?')} s per wrk run")

# A figure that cannot be right voids the run: fail loudly instead of writing it down.
problems = []
for r, (p, h) in enumerate(zip(dispatch["pushgate"], dispatch["h2load"]), 1):
    if p > h * 1.05:
        problems.append(f"dispatch round {r}: Pushgate {p:,.0f}/s above h2load {h:,.0f}/s on the same sink (it cannot be sending what h2load sends)")
for r, (p, c) in enumerate(zip(dispatch["pushgate"], dispatch["curl_socket"]), 1):
    if p > c * 1.5:
        problems.append(f"dispatch round {r}: Pushgate {p:,.0f}/s over 1.5 × the plain libcurl client's {c:,.0f}/s")
# Each broadcast prunes the devices the sink calls gone (410), so the next one reaches fewer:
# a broadcast's targets plus those pruned before it make the audience.
pruned_before = 0
def check_broadcast(prefix, expected):
    global pruned_before
    if num(prefix + ".rate") is None: return
    expected -= pruned_before
    status = raw.get(prefix + ".http_status", "")
    if status not in ("200", "201"):
        problems.append(f"{prefix}: the send answered HTTP {status or 'nothing'}")
    answered = int(num(prefix + ".succeeded") or 0) + int(num(prefix + ".failed") or 0)
    if answered != expected:
        problems.append(f"{prefix}: {answered:,} targets answered of {expected:,} registered")
    for key, value in raw.items():
        if key.startswith(prefix + ".") and value.startswith("{"):
            outcomes = json.loads(value)
            pruned_before += outcomes.get("ExpiredChannel", 0)
            allowed = ("Success", "ExpiredChannel")
            # PUSHGATE_BENCH_FAILING_APNS=1: the sink answers every APNs device 400 BadDeviceToken.
            if os.environ.get("PUSHGATE_BENCH_FAILING_APNS") and key.endswith(".apns"):
                allowed = ("BadChannel", "ExpiredChannel")
            unexpected = {k: v for k, v in outcomes.items() if k not in allowed}
            if unexpected: problems.append(f"{key}: outcomes other than {' or '.join(allowed)}: {unexpected}")
    reference = num("broadcast.reference_dispatch_rate")
    if reference and num(prefix + ".rate") > reference * 1.2:
        problems.append(f"{prefix}: {num(prefix + '.rate'):,.0f}/s above the bare dispatch engine's {reference:,.0f}/s on the same sink")
for c, _ in everyday_configs:
    sends, healthz = e(c, "c64", "sends_per_second"), e(c, "healthz_per_second")
    if not isinstance(sends, (int, float)) or sends <= 0:
        problems.append(f"everyday {c}: no sends/s recorded")
    elif isinstance(healthz, (int, float)) and sends >= healthz:
        problems.append(f"everyday {c}: {sends:,.0f} sends/s at or above the gateway's own /healthz {healthz:,.0f}/s")
    bound, share = e(c, "wire_bound_per_second"), e(c, "of_bound")
    if not isinstance(bound, (int, float)) or bound <= 0:
        problems.append(f"everyday {c}: no wire bound recorded")
    elif isinstance(share, (int, float)) and share > 1.0:
        problems.append(f"everyday {c}: {share:.3f} × the wire's bound {bound:,.0f}/s (above what its own requests and commits allow)")
if (num("upserts.of_bound") or 0) > 1.0:
    problems.append(f"upserts: {raw['upserts.of_bound']} × the bound 1 / (1/H + 1/S) = {raw.get('upserts.bound.per_second')}/s")
broadcast_total = int(os.environ.get("PUSHGATE_BENCH_BROADCAST_TOTAL", "0"))
for key in raw:
    m = re.fullmatch(r"(broadcast(?:_direct)?\.r\d+)\.rate", key)
    if m and broadcast_total: check_broadcast(m.group(1), broadcast_total)
if problems:
    print("\nbench-all: IMPLAUSIBLE RESULTS, the figures above are void:", file=sys.stderr)
    for problem in problems: print("  - " + problem, file=sys.stderr)
    sys.exit(1)
PY
