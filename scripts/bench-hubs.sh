# Sourced by scripts/bench-all.sh (section "hubs"): the Notification Hubs REST API beside the
# tutorial API, on the same gateway, store and nginx sink.
#
# 1. The Shared Access Signature check per request: `pushgate bench sas` (cached: the same token
#    again; uncached: a new token each time; a bare HMAC-SHA256 of the same string as reference).
# 2. The broadcast's APNs share (70% of the store, username:carol) through `POST /default/messages`
#    (a native apple send, 201 at once, followed through `GET /default/messages/{id}` to its final
#    state) and through `POST /api/notifications?pns=apns` (synchronous), interleaved in rounds;
#    notifications per second from request to last outcome, and the gateway's CPU per notification.
echo "== hubs: the SAS check, and a broadcast through /default/messages beside /api/notifications" >&2
"$bin" bench sas --count 200000 --rounds 5 > "$work/sas.txt"
cat "$work/sas.txt" >&2
record "hubs.sas_cached_ns" "$(awk '/^sas cached:/ { print $3 }' "$work/sas.txt")"
record "hubs.sas_uncached_ns" "$(awk '/^sas uncached:/ { print $3 }' "$work/sas.txt")"
record "hubs.hmac_reference_ns" "$(awk '/^hmac-sha256 reference:/ { print $3 }' "$work/sas.txt")"

cat > "$work/hub_send.py" <<'PY'
"""One native apple send to username:carol through /default/messages, followed to its final state.
Prints: seconds targets."""
import base64, hashlib, hmac, re, sys, time, urllib.parse, urllib.request
base, key_file = sys.argv[1], sys.argv[2]
key = open(key_file).read().strip()
resource = urllib.parse.quote((base + "/default").lower(), safe="")
expiry = int(time.time()) + 3600
signature = base64.b64encode(hmac.new(key.encode(), f"{resource}\n{expiry}".encode(), hashlib.sha256).digest()).decode()
token = f"SharedAccessSignature sr={resource}&sig={urllib.parse.quote(signature, safe='')}&se={expiry}&skn=DefaultFullSharedAccessSignature"
start = time.monotonic()
request = urllib.request.Request(
    base + "/default/messages/?api-version=2015-04", method="POST", data=b'{"aps":{"alert":"Hello, everyone"}}',
    headers={"Authorization": token, "ServiceBusNotification-Format": "apple", "ServiceBusNotification-Tags": "username:carol",
             "Content-Type": "application/json;charset=utf-8", "apns-push-type": "alert"})
with urllib.request.urlopen(request) as answer:
    assert answer.status == 201, answer.status
    location = answer.headers["Location"]
notification = location.split("?")[0].rsplit("/", 1)[1]
while True:
    details = urllib.request.urlopen(urllib.request.Request(
        f"{base}/default/messages/{notification}?api-version=2015-04", headers={"Authorization": token})).read().decode()
    state = re.search(r"<State>(\w+)</State>", details).group(1)
    if state in ("Completed", "Abandoned", "NoTargetFound", "Canceled", "Unknown"):
        break
    time.sleep(0.05)
elapsed = time.monotonic() - start
targets = sum(int(n) for n in re.findall(r"<Count>(\d+)</Count>", details))
print(f"{elapsed:.2f} {targets} {state}")
PY

(cd "$work/sandbox" && exec "$bin" serve --config "$config" > "$work/gateway-hubs.log" 2>&1) &
hubs_gateway=$!
pids+=($hubs_gateway)
base="http://127.0.0.1:$gateway_port"
wait_http "$base/healthz"
key_file="$work/sandbox/hub-keys/default.DefaultFullSharedAccessSignature.key"
for round in $(seq 1 "${PUSHGATE_BENCH_HUB_ROUNDS:-3}"); do
  cpu_before=$(cpu_seconds "$hubs_gateway")
  start=$(date +%s.%N)
  curl -s -u bob:bob -X POST -H 'Content-Type: application/json' -d '"Hello, everyone"' \
    "$base/api/notifications?pns=apns&to_tag=carol" -o "$work/hub-api.json"
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  cpu_after=$(cpu_seconds "$hubs_gateway")
  targets=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("success",0)+r.get("failure",0))' "$work/hub-api.json")
  record "hubs.api.r$round.seconds" "$elapsed"
  record "hubs.api.r$round.rate" "$(awk -v n="$targets" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }')"
  record "hubs.api.r$round.cpu_us_per_notification" "$(awk -v a="$cpu_before" -v b="$cpu_after" -v n="$targets" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"

  cpu_before=$(cpu_seconds "$hubs_gateway")
  read -r elapsed targets state < <(python3 "$work/hub_send.py" "$base" "$key_file")
  cpu_after=$(cpu_seconds "$hubs_gateway")
  record "hubs.hub.r$round.seconds" "$elapsed"
  record "hubs.hub.r$round.state" "$state"
  record "hubs.hub.r$round.targets" "$targets"
  record "hubs.hub.r$round.rate" "$(awk -v n="$targets" -v s="$elapsed" 'BEGIN { printf "%.0f", n / s }')"
  record "hubs.hub.r$round.cpu_us_per_notification" "$(awk -v a="$cpu_before" -v b="$cpu_after" -v n="$targets" 'BEGIN { printf "%.1f", (b - a) * 1e6 / n }')"
  tail -n 8 "$results" >&2
done
kill -TERM "$hubs_gateway" 2>/dev/null; wait "$hubs_gateway" 2>/dev/null || true
