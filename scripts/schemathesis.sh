#!/usr/bin/env bash
# Contract run: checks a live gateway against its OpenAPI document
# (Sources/PushgateServer/OpenAPI/openapi.json) with schemathesis. Starts `pushgate sandbox` and
# `pushgate serve` on free loopback ports with a throwaway configuration (two users with PBKDF2
# hashes, bob a user and alice an admin; the `default` hub with Notification Hubs' two SAS rules),
# seeds registrations, installations and notifications (Tests/Contract/contract.py), then lets
# schemathesis generate requests, authenticated with Basic for /api and a Shared Access Signature
# (the Full rule, signed for the namespace) for /{hub}, and check every answer: no 5xx, a
# documented status, content type, body (JSON, and the hub's XML through Tests/Contract/hooks.py)
# and headers, and that an error body names its own status. Three passes: every operation with
# /api as bob and the hub's Full rule; the operations whose answers depend on admin rights
# (/api/me, the listings, the sandbox routes, telemetry and cancel, the webhooks' admin routes) as alice; the hub operations a
# device's Listen rule may call (registrations, installations), and a send it may not, with the
# Listen rule.
#
# Nothing is excluded for the run's own sake: the requests are free to delete, cancel, uninstall
# and overwrite what was seeded (schemathesis also reuses ids it reads in answers), so later
# requests find less; the seeds are there so that early ones reach real resources.
#
#   scripts/schemathesis.sh                      # against .build/release/pushgate
#   PUSHGATE_BIN=/path/to/pushgate scripts/schemathesis.sh --include-path-regex '^/api/'
#
# Extra arguments go to `schemathesis run`. Settings (environment):
#   PUSHGATE_CONTRACT_EXCLUDE   parts of the contract the binary does not serve yet, removed from
#                               the document for this run (space-separated; "" checks everything):
#                               openapi-json dry-run idempotency-key metrics-token (default: none)
#   PUSHGATE_CONTRACT_EXAMPLES  test cases per operation and phase (default 50)
#   PUSHGATE_CONTRACT_SEED      the seed (default 20261126): the same seed generates the same test cases
#   PUSHGATE_CONTRACT_CONFIG_PATCH   JSON merged into the gateway's configuration (e.g. a metrics token)
#   PUSHGATE_CONTRACT_METRICS_TOKEN  the Bearer token schemathesis sends to /metrics
#   PUSHGATE_CONTRACT_KEEP=1    keep the temporary folder (logs, configuration, reports)
#
# Needs python3 (python3-venv is installed with apt-get when venv is missing). The venv lives in
# .build/schemathesis-venv and is reused; requirements are reinstalled only when
# Tests/Contract/requirements.txt changes. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build/schemathesis-venv
requirements=Tests/Contract/requirements.txt
spec=Sources/PushgateServer/OpenAPI/openapi.json
bin="${PUSHGATE_BIN:-.build/release/pushgate}"
exclude="${PUSHGATE_CONTRACT_EXCLUDE-}"
examples="${PUSHGATE_CONTRACT_EXAMPLES:-50}"
seed="${PUSHGATE_CONTRACT_SEED:-20261126}"

if [ ! -x "$bin" ]; then
  echo "contract: no pushgate binary at $bin (build it: scripts/build-release.sh, or set PUSHGATE_BIN)" >&2
  exit 1
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
source scripts/python-venv.sh
python_venv contract "$venv" "$requirements"
venv_abs="$(pwd)/$venv"
python="$venv_abs/bin/python"
helper="$(pwd)/Tests/Contract/contract.py"
export PYTHONDONTWRITEBYTECODE=1

echo "== validating $spec (OpenAPI 3.1)"
"$venv/bin/openapi-spec-validator" "$spec"

work=$(mktemp -d "${TMPDIR:-/tmp}/pushgate-contract.XXXXXX")
sandbox_pid=""
gateway_pid=""
cleanup() {
  local status=$?
  for pid in "$gateway_pid" "$sandbox_pid"; do
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  done
  if [ "${PUSHGATE_CONTRACT_KEEP:-0}" = 1 ]; then
    echo "contract: kept $work"
  else
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits up to 30 s for a URL to answer 200, giving up early when the process died.
wait_for() {
  local url=$1 pid=$2 log=$3
  for _ in $(seq 1 300); do
    if ! kill -0 "$pid" 2>/dev/null; then echo "contract: process exited early:" >&2; cat "$log" >&2; exit 1; fi
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$url" 2>/dev/null || true)" = 200 ]; then return 0; fi
    sleep 0.1
  done
  echo "contract: $url did not answer in 30 s:" >&2
  cat "$log" >&2
  exit 1
}

echo "== starting the sandbox and a gateway ($bin)"
"$bin" sandbox --dir "$work/sandbox" --gateway-port 0 --gateway-tls-port=-1 >"$work/sandbox.log" 2>&1 &
sandbox_pid=$!
for _ in $(seq 1 300); do [ -s "$work/sandbox/sandbox.json" ] && break; sleep 0.1; done
control=$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["endpoints"]["control"])' "$work/sandbox/sandbox.json")
wait_for "$control/health" "$sandbox_pid" "$work/sandbox.log"

"$python" "$helper" config "$bin" "$work/sandbox/config.json"
port=$(free_port)
base="http://127.0.0.1:$port"
(cd "$work/sandbox" && exec "$bin" serve --config config.json --port "$port") >"$work/gateway.log" 2>&1 &
gateway_pid=$!
wait_for "$base/healthz" "$gateway_pid" "$work/gateway.log"
echo "  gateway $base, sandbox control $control"

echo "== seeding"
"$python" "$helper" seed "$base" "$work/sandbox" "$work"
"$python" "$helper" spec "$spec" "$work/openapi.json" "$exclude"

# schemathesis' own checks, and two of Tests/Contract/hooks.py (which also reads XML answers).
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance
checks+=,unsupported_method,error_status_matches,dry_run_answers_dry_run
export SCHEMATHESIS_HOOKS="$(pwd)/Tests/Contract/hooks.py"
admin_operations=(getMe listRegistrations listNotifications getNotificationOutcome cancelNotification readSecureMessage
  deleteRegistration listSandboxDevices createSandboxDevice getSandboxInbox actOnSandboxDevice
  listParkedWebhookEvents retryParkedWebhookEvents testWebhookReceivers)
listen_operations=(hubCreateRegistrationId hubCreateRegistration hubUpsertRegistration hubGetRegistration hubDeleteRegistration
  hubPutInstallation hubPatchInstallation hubGetInstallation hubDeleteInstallation hubListRegistrations hubSend)

# One schemathesis pass: $1 its name, $2 its configuration, the rest extra arguments.
run_pass() {
  local name=$1 config=$2
  shift 2
  echo "== schemathesis ($name): $examples cases per operation and phase, seed $seed"
  (
    cd "$work"
    "$venv_abs/bin/schemathesis" --config-file "$config" --no-color run openapi.json \
      --url "$base" --checks "$checks" --phases examples,coverage,fuzzing \
      --max-examples "$examples" --seed "$seed" --workers 1 --request-timeout 30 --max-failures 100 \
      --report json,junit,har --report-dir "reports/$name" --report-json-path "reports/$name/run.json" \
      --report-junit-path "reports/$name/junit.xml" "$@"
  ) 2>&1 | tee "$work/schemathesis-$name.log"
  return "${PIPESTATUS[0]}"
}

set +e
run_pass user schemathesis.toml "$@"
user_status=$?
admin_filters=()
for operation in "${admin_operations[@]}"; do admin_filters+=(--include-operation-id "$operation"); done
run_pass admin schemathesis-admin.toml "${admin_filters[@]}" "$@"
admin_status=$?
listen_filters=()
for operation in "${listen_operations[@]}"; do listen_filters+=(--include-operation-id "$operation"); done
run_pass listen schemathesis-listen.toml "${listen_filters[@]}" "$@"
listen_status=$?
set -e

echo "== summary"
for name in user admin listen; do
  if [ ! -s "$work/reports/$name/run.json" ]; then
    echo "contract: schemathesis wrote no report for the $name pass" >&2
    exit 1
  fi
done
summary_status=0
"$python" "$helper" summary "user (bob, every operation)=$work/reports/user/run.json" \
  "admin (alice, ${#admin_operations[@]} operations)=$work/reports/admin/run.json" \
  "listen (the hub's Listen rule, ${#listen_operations[@]} operations)=$work/reports/listen/run.json" || summary_status=$?
if ! kill -0 "$gateway_pid" 2>/dev/null; then
  echo "contract: the gateway died during the run:" >&2
  tail -50 "$work/gateway.log" >&2
  exit 1
fi
if [ "$user_status" -ne 0 ] || [ "$admin_status" -ne 0 ] || [ "$listen_status" -ne 0 ] || [ "$summary_status" -ne 0 ]; then
  echo "contract: FAILED (schemathesis exits $user_status, $admin_status, $listen_status); PUSHGATE_CONTRACT_KEEP=1 keeps $work (logs, reports/*/har)" >&2
  exit 1
fi
echo "contract: passed"
