"""Helpers of scripts/schemathesis.sh, one subcommand each:

  config   patch the gateway configuration `pushgate sandbox` wrote: users with PBKDF2 hashes
  seed     fill a running gateway with registrations, installations and notifications, and
           write schemathesis.toml (/api as the user bob, /{hub} with the Full rule),
           schemathesis-admin.toml (/api as the admin alice) and schemathesis-listen.toml
           (/{hub} with the Listen rule): auth for both APIs, the seeded ids as dictionaries
  spec     copy the OpenAPI document without the parts PUSHGATE_CONTRACT_EXCLUDE names
  summary  print the counts of schemathesis' JSON reports; exit 1 on any failure or error

Nothing here knows what the gateway answers beyond docs/api.md and docs/hub-api.md; the checks
are schemathesis' own, against Sources/PushgateServer/OpenAPI/openapi.json.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import requests

USERS = {"alice": "alice-contract-pw", "bob": "bob-contract-pw"}
ADMINS = ["alice"]
HUB = "default"
FULL_RULE = "DefaultFullSharedAccessSignature"
LISTEN_RULE = "DefaultListenSharedAccessSignature"

# The parts of the contract the gateway may not serve yet, by the name PUSHGATE_CONTRACT_EXCLUDE
# takes: what each removes from the document before the run.
EXCLUDABLE = {
    "openapi-json": "GET /openapi.json",
    "dry-run": "dryRun and sample on POST /api/notifications, and its DryRun answer",
    "idempotency-key": "Idempotency-Key, its 422 and Idempotent-Replayed on the sends",
    "metrics-token": "the Bearer token and 401 of GET /metrics",
}


# --- config ---------------------------------------------------------------------------------------


def cmd_config(binary: str, config_path: str) -> None:
    path = Path(config_path)
    config = json.loads(path.read_text())

    def hashed(password: str) -> str:
        # Few iterations: a throwaway configuration, and every new login costs one PBKDF2 check.
        return subprocess.run(
            [binary, "users", "hash", "--iterations", "1000"], input=password, capture_output=True, text=True, check=True
        ).stdout.strip()

    config["auth"] = {
        "users": [{"name": name, "passwordHash": hashed(password)} for name, password in USERS.items()],
        "admins": ADMINS,
        "demoPasswordEqualsName": False,
    }
    # The fuzzer creates hundreds of registrations and installations with the Listen key from one
    # address and sends hundreds of times as one user: at the default rates (6 creations a minute,
    # 10,000 stored sends a day) most of its cases would be 429s and check nothing else. The 429s
    # themselves are in the document and held by the suite (HostileProbeFiveTests).
    limits = config.setdefault("limits", {})
    limits.update({"hubDeviceCreationsPerMinute": 100000, "hubDeviceCreationBurst": 100000})
    # PUSHGATE_CONTRACT_CONFIG_PATCH: a JSON object merged into the configuration (objects merged
    # member by member, anything else replaced), for settings a run needs, such as a metrics token.
    patch = os.environ.get("PUSHGATE_CONTRACT_CONFIG_PATCH", "").strip()
    if patch:
        merge(config, json.loads(patch))
    path.write_text(json.dumps(config, indent=2))


def merge(target: dict, patch: dict) -> None:
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = value


# --- seed -----------------------------------------------------------------------------------------


def sas_token(base: str, rule: str, key: str, lifetime: int = 3 * 3600) -> str:
    """A Shared Access Signature for the namespace `base`, as SharedAccessSignature.swift checks it:
    base64(HMAC-SHA256(key, sr + "\\n" + se)) over sr as sent (URL-encoded, lower-case)."""
    expiry = int(time.time()) + lifetime
    resource = urllib.parse.quote(base.lower().rstrip("/") + "/", safe="")
    mac = hmac.new(key.encode(), f"{resource}\n{expiry}".encode(), hashlib.sha256).digest()
    signature = urllib.parse.quote(base64.b64encode(mac).decode(), safe="")
    return f"SharedAccessSignature sr={resource}&sig={signature}&se={expiry}&skn={rule}"


class Seeder:
    def __init__(self, base: str, directory: Path):
        self.base = base
        self.directory = directory
        key = (directory / "hub-keys" / f"{HUB}.{FULL_RULE}.key").read_text().strip()
        self.sas = sas_token(base, FULL_RULE, key)
        listen_key = (directory / "hub-keys" / f"{HUB}.{LISTEN_RULE}.key").read_text().strip()
        self.listen_sas = sas_token(base, LISTEN_RULE, listen_key)

    def api(self, user: str, method: str, path: str, **kwargs) -> requests.Response:
        response = requests.request(method, self.base + path, auth=(user, USERS[user]), timeout=30, **kwargs)
        if response.status_code >= 300:
            raise SystemExit(f"seed: {method} {path} as {user}: {response.status_code} {response.text[:300]}")
        return response

    def hub(self, method: str, path: str, expect: int, **kwargs) -> requests.Response:
        headers = {"Authorization": self.sas, **kwargs.pop("headers", {})}
        response = requests.request(method, f"{self.base}/{HUB}{path}", headers=headers, timeout=30, **kwargs)
        if response.status_code != expect:
            raise SystemExit(f"seed: {method} /{HUB}{path}: {response.status_code} {response.text[:300]}")
        return response

    def device(self, platform: str) -> dict:
        return self.api("alice", "POST", "/api/sandbox/devices", json={"platform": platform}).json()

    def register(self, user: str, device: dict, tags: list[str]) -> str:
        reserved = self.api(user, "POST", "/api/register", params={"handle": device["handle"]}).json()
        self.api(user, "PUT", f"/api/register/{reserved}", json={"Platform": device["platform"], "Handle": device["handle"], "Tags": tags})
        return reserved

    def send(self, user: str, **params) -> requests.Response:
        return self.api(user, "POST", "/api/notifications", params=params, json="contract seed")


USER, ADMIN = "bob", "alice"
# Ids no resource has: every id dictionary holds one, so that the 404 answers are asked for too.
MISSING_ID = "contract-missing-0"


def cmd_seed(base: str, directory: str, output: str) -> None:
    """Seeds the gateway as USER (a user) and ADMIN, and writes two schemathesis configurations:
    `<output>/schemathesis.toml` signing /api requests in as USER, `schemathesis-admin.toml` as ADMIN."""
    seeder = Seeder(base, Path(directory))
    user, other = USER, ADMIN
    platforms = ["apns", "fcm", "gcm", "wns", "browser"]
    kept_devices: list[str] = []
    doomed_devices: list[str] = []
    registrations: list[str] = []
    doomed_registrations: list[str] = []
    for platform in platforms:
        # Two devices per platform for the user (one for the device actions, which uninstall and
        # expire it), one for the admin: sends have targets on every platform.
        for doomed in (False, True):
            device = seeder.device(platform)
            registration = seeder.register(user, device, ["news", "lang:en"])
            (doomed_devices if doomed else kept_devices).append(device["id"])
            (doomed_registrations if doomed else registrations).append(registration)
        seeder.register(other, seeder.device(platform), ["news", "lang:fr"])

    tomorrow = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    completed = seeder.send(user, pns="all", to_tag=other).json()["notificationId"]
    scheduled = [seeder.send(user, pns="all", to_tag=other, deliverAt=tomorrow).json()["notificationId"] for _ in range(3)]
    secure = [seeder.send(other, pns="all", to_tag=user, secure="true").headers["X-Pushgate-Secure-Id"] for _ in range(2)]
    admin_secure = [seeder.send(user, pns="all", to_tag=other, secure="true").headers["X-Pushgate-Secure-Id"] for _ in range(2)]

    # The hub: installations, Atom registrations, sends and scheduled sends.
    installations, doomed_installations = [], []
    for index, platform in enumerate(["apns", "fcm", "apns", "wns"]):
        device = seeder.device(platform)
        installation = f"contract-installation-{index}"
        body = {
            "installationId": installation,
            "platform": "fcmV1" if platform == "fcm" else platform,
            "pushChannel": device["handle"],
            "tags": ["news", "hub"],
        }
        if platform == "apns":
            body["templates"] = {"t1": {"body": '{"aps": {"alert": "$(message)"}}', "tags": ["t1"]}}
        seeder.hub("PUT", f"/installations/{installation}", 200, json=body)
        (doomed_installations if index >= 2 else installations).append(installation)
    hub_registrations = []
    for _ in range(4):
        device = seeder.device("apns")
        entry = (
            '<?xml version="1.0" encoding="utf-8"?><entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">'
            '<AppleRegistrationDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">'
            f"<Tags>news,hub</Tags><DeviceToken>{device['handle']}</DeviceToken></AppleRegistrationDescription></content></entry>"
        )
        answer = seeder.hub("POST", "/registrations", 200, data=entry, headers={"Content-Type": "application/atom+xml;type=entry;charset=utf-8"})
        hub_registrations.append(answer.text.split("<RegistrationId>")[1].split("</RegistrationId>")[0])
    native = {"ServiceBusNotification-Format": "apple", "ServiceBusNotification-Tags": "news", "Content-Type": "application/json"}

    def last_segment(location: str) -> str:
        return urllib.parse.urlsplit(location).path.rstrip("/").rsplit("/", 1)[-1]

    hub_messages = [
        last_segment(seeder.hub("POST", "/messages", 201, headers=native, data='{"aps": {"alert": "contract seed"}}').headers["Location"])
        for _ in range(2)
    ]
    hub_scheduled = [
        last_segment(
            seeder.hub(
                "POST", "/schedulednotifications", 201, headers={**native, "ServiceBusNotification-ScheduleTime": tomorrow},
                data='{"aps": {"alert": "contract seed"}}').headers["Location"])
        for _ in range(3)
    ]

    dictionaries = {
        "users": [user, other, "nobody"],
        "tag_expressions": ["news", "lang:en", "news && lang:fr", f"username:{user}", "hub || t1"],
        "registrations": [*registrations, MISSING_ID],
        "doomed_registrations": [*doomed_registrations, MISSING_ID],
        "notifications": [completed, *scheduled, *hub_messages, MISSING_ID],
        "secure_messages": [*secure, *admin_secure, MISSING_ID],
        "devices": [*kept_devices, MISSING_ID],
        "doomed_devices": [*doomed_devices, MISSING_ID],
        "hub_registrations": [*hub_registrations, MISSING_ID],
        "installations": [*installations, *doomed_installations, MISSING_ID],
        "doomed_installations": [*doomed_installations, MISSING_ID],
        "hub_notifications": [*hub_messages, completed, MISSING_ID],
        "hub_scheduled": [*hub_scheduled, MISSING_ID],
        "tags": ["news", "hub", "t1", "lang:en"],
        "platforms": ["all", "apns", "fcm", "gcm", "wns", "browser", "apns,wns", "fcm, gcm"],
        "future_times": [
            (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ") for seconds in (5, 3600, 86400)
        ],
    }
    # Which parameter of which operation draws from which dictionary (half the time; schemathesis
    # generates the other half).
    bindings = [
        ("sendNotification", "query.to_tag", "users"),
        ("sendNotification", "query.pns", "platforms"),
        ("sendNotification", "query.deliverAt", "future_times"),
        ("hubScheduleSend", "header.ServiceBusNotification-ScheduleTime", "future_times"),
        ("listRegistrations", "query.tags", "tag_expressions"),
        ("listNotifications", "query.sender", "users"),
        ("upsertRegistration", "path.id", "registrations"),
        ("deleteRegistration", "path.id", "doomed_registrations"),
        ("readSecureMessage", "path.id", "secure_messages"),
        ("cancelNotification", "path.id", "notifications"),
        ("getNotificationOutcome", "path.id", "notifications"),
        ("getSandboxInbox", "path.id", "devices"),
        ("actOnSandboxDevice", "path.id", "doomed_devices"),
        ("hubSend", "header.ServiceBusNotification-Tags", "tag_expressions"),
        ("hubScheduleSend", "header.ServiceBusNotification-Tags", "tag_expressions"),
        ("hubCancelScheduledSend", "path.id", "hub_scheduled"),
        ("hubGetNotificationDetails", "path.id", "hub_notifications"),
        ("hubUpsertRegistration", "path.id", "hub_registrations"),
        ("hubGetRegistration", "path.id", "hub_registrations"),
        ("hubDeleteRegistration", "path.id", "hub_registrations"),
        ("hubListRegistrationsByTag", "path.tag", "tags"),
        ("hubPutInstallation", "path.id", "installations"),
        ("hubPatchInstallation", "path.id", "installations"),
        ("hubGetInstallation", "path.id", "installations"),
        ("hubDeleteInstallation", "path.id", "doomed_installations"),
    ]

    def toml(value) -> str:
        return json.dumps(value)  # a JSON string or array of strings is valid TOML

    def write(path: Path, login: str, sas: str) -> None:
        lines = [
            f"# Written by scripts/schemathesis.sh for one run: the gateway it started, /api as {login}, the seeded ids.",
            "[parameters]",
            f'"path.hub" = {toml(HUB)}',
            "",
            "# Operations without examples get their examples phase too, the missing parts generated.",
            "[phases.examples]",
            "fill-missing = true",
            "",
            "# Header values stay valid HTTP: a control character (but HTAB) in a header is refused by the HTTP/1.1",
            "# parser itself (RFC 9110 5.5: a bare 400, the connection closed) before any route sees the request.",
            "[generation]",
            f"exclude-header-characters = {toml(''.join(chr(c) for c in [*range(0, 9), *range(10, 32), 127]))}",
            "",
            "[auth.openapi.gatewayBasic]",
            f"username = {toml(login)}",
            f"password = {toml(USERS[login])}",
            "",
            "[auth.openapi.hubSharedAccessSignature]",
            f"api_key = {toml(sas)}",
            "",
        ]
        metrics_token = os.environ.get("PUSHGATE_CONTRACT_METRICS_TOKEN", "")
        if metrics_token:
            lines += ["[auth.openapi.metricsBearer]", f"bearer = {toml(metrics_token)}", ""]
        for name, values in dictionaries.items():
            lines += [f"[dictionaries.{name}]", f"values = {toml(values)}", ""]
        by_operation: dict[str, list[tuple[str, str]]] = {}
        for operation, parameter, dictionary in bindings:
            by_operation.setdefault(operation, []).append((parameter, dictionary))
        for operation, entries in by_operation.items():
            lines += ["[[operations]]", f"include-operation-id = {toml(operation)}"]
            lines += [f'parameters = {{ {", ".join(f"{toml(p)} = {{ dictionary = {toml(d)}, probability = 0.5 }}" for p, d in entries)} }}']
            lines.append("")
        path.write_text("\n".join(lines))

    write(Path(output) / "schemathesis.toml", user, seeder.sas)
    write(Path(output) / "schemathesis-admin.toml", other, seeder.sas)
    write(Path(output) / "schemathesis-listen.toml", user, seeder.listen_sas)
    print(
        f"  seeded: {len(registrations) + len(doomed_registrations)} registrations for {user}, {len(platforms)} for {other}, "
        f"{1 + len(scheduled)} sends ({len(scheduled)} scheduled), {len(secure) + len(admin_secure)} secure messages, "
        f"{len(installations + doomed_installations)} installations, {len(hub_registrations)} hub registrations, "
        f"{len(hub_messages) + len(hub_scheduled)} hub sends"
    )


# --- spec -----------------------------------------------------------------------------------------


def cmd_spec(source: str, output: str, exclude: str) -> None:
    groups = exclude.replace(",", " ").split()
    unknown = [name for name in groups if name not in EXCLUDABLE]
    if unknown:
        raise SystemExit(f"PUSHGATE_CONTRACT_EXCLUDE: unknown part {', '.join(unknown)}; known: {', '.join(EXCLUDABLE)}")
    spec = json.loads(Path(source).read_text())
    if "openapi-json" in groups:
        del spec["paths"]["/openapi.json"]
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "put", "post", "delete", "patch"):
                continue
            if "dry-run" in groups and operation["operationId"] == "sendNotification":
                operation["parameters"] = [p for p in operation["parameters"] if p.get("name") not in ("dryRun", "sample")]
                operation["responses"]["200"]["content"]["application/json"]["schema"] = {"$ref": "#/components/schemas/NotificationResult"}
            if "idempotency-key" in groups:
                parameters = operation.get("parameters", [])
                kept = [p for p in parameters if p.get("$ref") != "#/components/parameters/IdempotencyKey"]
                if len(kept) != len(parameters):
                    operation["parameters"] = kept
                    operation["responses"].pop("422", None)
                    for response in operation["responses"].values():
                        response.get("headers", {}).pop("Idempotent-Replayed", None)
            if "metrics-token" in groups and operation["operationId"] == "getMetrics":
                operation["security"] = []
                operation["responses"].pop("401", None)
    Path(output).write_text(json.dumps(spec, indent=2))
    for name in groups:
        print(f"  excluded ({name}): {EXCLUDABLE[name]}")


# --- summary --------------------------------------------------------------------------------------


def cmd_summary(*reports: str) -> None:
    """Prints each pass's counts (`label=path` arguments) and the totals; exits 1 on any failure."""
    failed = False
    totals = {"generated": 0, "with_failures": 0, "unique_failures": 0, "errored": 0}
    for argument in reports:
        label, _, report = argument.rpartition("=")
        data = json.loads(Path(report).read_text())
        operations = data["operations"]
        cases = data["test_cases"]
        failures = data.get("failures", [])
        errors = data.get("errors", [])
        print(f"{label or report}:")
        print(f"  operations:  {operations['tested']} tested of {operations['selected']} selected ({operations['total']} in the document)")
        print(f"  test cases:  {cases['generated']} generated, {cases['with_failures']} with failures, {cases['errored']} errored")
        print(f"  failures:    {cases['unique_failures']} unique")
        for failure in failures:
            where = ", ".join(failure.get("operations") or []) or "?"
            print(f"    - {failure.get('code', '')} {failure.get('title', failure)} (x{failure.get('count', 1)}): {where}")
        for error in errors:
            where = ", ".join(error.get("operations") or []) or error.get("label") or "?"
            print(f"    ! {error.get('title') or error.get('message') or error}: {where}")
        print(f"  seed {data['seed']}, {data['running_time']:.1f} s")
        totals["generated"] += cases["generated"]
        totals["with_failures"] += cases["with_failures"]
        totals["unique_failures"] += cases["unique_failures"]
        totals["errored"] += cases["errored"]
        if cases["with_failures"] or cases["errored"] or failures or errors or data.get("exit_code", 0) != 0:
            failed = True
    print(
        f"total: {totals['generated']} test cases, {totals['with_failures']} with failures "
        f"({totals['unique_failures']} unique), {totals['errored']} errored"
    )
    if failed:
        sys.exit(1)


def main() -> None:
    command, *args = sys.argv[1:]
    {"config": cmd_config, "seed": cmd_seed, "spec": cmd_spec, "summary": cmd_summary}[command](*args)


if __name__ == "__main__":
    main()
