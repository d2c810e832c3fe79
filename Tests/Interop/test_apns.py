"""APNs provider API (HTTP/2) driven by aioapns, and by httpx + h2 where aioapns cannot shape the
request. Expected answers are Apple's (the APNs provider API's status and reason tables), not the sandbox's."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aioapns import NotificationRequest, PushType
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography import x509

from support import (
    aioapns_send,
    apns_json,
    apns_message_of_size,
    aps_reason,
    headers_by_name,
    httpx_apns_client,
    provider_token,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HERE = Path(__file__).resolve().parent


def alert(token: str, text: str = "hello", **kwargs) -> NotificationRequest:
    return NotificationRequest(device_token=token, message={"aps": {"alert": text}}, **kwargs)


# 1. Good sends land in the device inbox byte for byte ---------------------------------------------


def test_apns_alert_lands_in_inbox_byte_for_byte(sandbox):
    device = sandbox.create_device("apns")
    message = {"aps": {"alert": {"title": "Grüße", "body": "naïve café ☕"}, "badge": 3}, "custom": {"k": [1, 2]}}
    request = NotificationRequest(
        device_token=device["handle"],
        message=message,
        time_to_live=3600,
        priority=10,
        collapse_key="score-17",
        push_type=PushType.ALERT,
    )
    before = int(time.time())
    [result] = aioapns_send(sandbox, [request])
    after = int(time.time())
    assert (result.status, result.description) == ("200", None)

    [entry] = sandbox.inbox(device["id"])
    assert entry["payload"].encode() == apns_json(message)
    headers = headers_by_name(entry)
    assert headers["apns-id"] == request.notification_id
    assert headers["apns-topic"] == sandbox.topic
    assert headers["apns-priority"] == "10"
    assert headers["apns-collapse-id"] == "score-17"
    assert headers["apns-push-type"] == "alert"
    assert before + 3600 <= int(headers["apns-expiration"]) <= after + 3600


def test_apns_raw_http2_request_lands_in_inbox(sandbox):
    device = sandbox.create_device("apns")
    body = b'{"aps":{"content-available":1},"secureId":"42"}'
    apns_id = "0f7a3f6e-5b0c-4f6e-9c7d-1a2b3c4d5e6f"
    headers = {
        "authorization": f"bearer {provider_token(sandbox)}",
        "apns-id": apns_id,
        "apns-topic": sandbox.topic,
        "apns-push-type": "background",
        "apns-priority": "5",
        "apns-expiration": "0",
        "content-type": "application/json; charset=utf-8",
    }
    with httpx_apns_client(sandbox) as client:
        response = client.post(f"/3/device/{device['handle']}", content=body, headers=headers)
    assert response.http_version == "HTTP/2"
    assert response.status_code == 200, response.text
    assert response.content == b""
    assert response.headers["apns-id"] == apns_id

    [entry] = sandbox.inbox(device["id"])
    assert entry["payload"].encode() == body
    got = headers_by_name(entry)
    for name in ("apns-id", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "content-type"):
        assert got.get(name) == headers[name], name


def test_apns_generated_apns_id_and_development_unique_id(sandbox):
    """Without apns-id APNs generates one and returns it; the development environment (which the
    sandbox is: its client certificate is a development one) also returns apns-unique-id."""
    device = sandbox.create_device("apns")
    headers = {
        "authorization": f"bearer {provider_token(sandbox)}",
        "apns-topic": sandbox.topic,
        "apns-push-type": "alert",
    }
    with httpx_apns_client(sandbox) as client:
        response = client.post(f"/3/device/{device['handle']}", content=b'{"aps":{"alert":"x"}}', headers=headers)
    assert response.status_code == 200, response.text
    assert UUID.match(response.headers.get("apns-id", "")), response.headers
    assert UUID.match(response.headers.get("apns-unique-id", "")), dict(response.headers)


def test_apns_aioapns_default_tls_context(sandbox):
    """aioapns (like Pushy) builds its TLS context with ssl.create_default_context() and offers no
    ALPN; it speaks HTTP/2 straight after the handshake, which api.push.apple.com accepts. Only the
    sandbox CA is added here."""
    device = sandbox.create_device("apns")
    context = ssl.create_default_context(cafile=sandbox.ca)
    try:
        [result] = aioapns_send(sandbox, [alert(device["handle"])], ssl_context=context)
    except Exception as error:  # aioapns gives up with MaxAttemptsExceeded when the connection closes
        pytest.fail(f"aioapns without ALPN could not send: {type(error).__name__} {error}")
    assert result.status == "200", result.description


# 2. Uninstalled / expired devices ------------------------------------------------------------------


def test_apns_uninstalled_device_is_unregistered_with_timestamp(sandbox):
    device = sandbox.create_device("apns")
    before_ms = int(time.time() * 1000)
    sandbox.uninstall(device["id"])
    [result] = aioapns_send(sandbox, [alert(device["handle"])])
    after_ms = int(time.time() * 1000)
    assert (result.status, result.description) == ("410", "Unregistered")
    assert isinstance(result.timestamp, int), result.timestamp
    assert before_ms - 1000 <= result.timestamp <= after_ms + 1000
    assert sandbox.inbox(device["id"]) == []


def test_apns_expired_device_token(sandbox):
    device = sandbox.create_device("apns")
    sandbox.expire(device["id"])
    [result] = aioapns_send(sandbox, [alert(device["handle"])])
    assert (result.status, result.description) == ("410", "ExpiredToken")


# 3. Bad and unknown device tokens ------------------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    ["not-a-device-token", "abcd", "ab" * 32],  # malformed, too short, well formed but never issued
    ids=["malformed", "short", "unknown"],
)
def test_apns_bad_device_token(sandbox, token):
    [result] = aioapns_send(sandbox, [alert(token)])
    assert (result.status, result.description) == ("400", "BadDeviceToken")


# 4. Payload size -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "push_type,topic_suffix,limit", [(PushType.ALERT, "", 4096), (PushType.VOIP, ".voip", 5120)], ids=["alert", "voip"]
)
def test_apns_payload_limits(sandbox, push_type, topic_suffix, limit):
    device = sandbox.create_device("apns")
    topic = sandbox.topic + topic_suffix
    at_limit = apns_message_of_size(limit)
    over = apns_message_of_size(limit + 1)
    assert len(apns_json(at_limit)) == limit and len(apns_json(over)) == limit + 1
    results = aioapns_send(
        sandbox,
        [
            NotificationRequest(device_token=device["handle"], message=at_limit, push_type=push_type, apns_topic=topic),
            NotificationRequest(device_token=device["handle"], message=over, push_type=push_type, apns_topic=topic),
        ],
    )
    assert [(r.status, r.description) for r in results] == [("200", None), ("413", "PayloadTooLarge")]
    [entry] = sandbox.inbox(device["id"])
    assert entry["payload"].encode() == apns_json(at_limit)


# 5. Provider-token errors ------------------------------------------------------------------------


def test_apns_expired_provider_token(sandbox):
    device = sandbox.create_device("apns")
    stale = provider_token(sandbox, issued_at=int(time.time()) - 3700)
    headers = {"authorization": f"bearer {stale}", "apns-topic": sandbox.topic, "apns-push-type": "alert"}
    with httpx_apns_client(sandbox) as client:
        response = client.post(f"/3/device/{device['handle']}", content=b'{"aps":{"alert":"x"}}', headers=headers)
    assert (response.status_code, aps_reason(response)) == (403, "ExpiredProviderToken")


def test_apns_token_signed_by_another_key(sandbox):
    device = sandbox.create_device("apns")
    other = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode()
    )
    [result] = aioapns_send(sandbox, [alert(device["handle"])], key=other)
    assert (result.status, result.description) == ("403", "InvalidProviderToken")


def test_apns_no_authorization_and_no_certificate(sandbox):
    device = sandbox.create_device("apns")
    headers = {"apns-topic": sandbox.topic, "apns-push-type": "alert"}
    with httpx_apns_client(sandbox) as client:
        response = client.post(f"/3/device/{device['handle']}", content=b'{"aps":{"alert":"x"}}', headers=headers)
    assert (response.status_code, aps_reason(response)) == (403, "MissingProviderToken")


# 6. Two client processes in a row --------------------------------------------------------------


def test_apns_two_client_processes_in_a_row(sandbox):
    """A restarted gateway (or a second replica) makes its own fresh provider token and opens its own
    connection; Apple's token-update limit is per connection, so both processes get 200."""
    device = sandbox.create_device("apns")
    outputs = []
    for n in (1, 2):
        if n == 2:
            time.sleep(1.1)  # the second token's iat is strictly newer
        run = subprocess.run(
            [sys.executable, str(HERE / "apns_client_process.py"), str(sandbox.directory), device["handle"], f"run {n}"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=HERE,
        )
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout.strip().splitlines()[-1])
    results = [json.loads(line) for line in outputs]
    assert [(r["status"], r["reason"]) for r in results] == [("200", None), ("200", None)]
    assert [e["payload"] for e in sandbox.inbox(device["id"])] == [
        '{"aps": {"alert": "run 1"}}',
        '{"aps": {"alert": "run 2"}}',
    ]


# 7. Push types that need a topic suffix ------------------------------------------------------------


def test_apns_voip_with_bare_bundle_id_is_refused(sandbox):
    """Apple: with apns-push-type voip the apns-topic must be the bundle id + `.voip`. The bare bundle
    id is a well-formed topic the team may not push VoIP to, which Apple's reason table calls
    `TopicDisallowed` ("pushing to this topic is not allowed"); `BadTopic` is for an invalid
    apns-topic value. Reports from real APNs agree (node-apn#635, PyAPNs2#70: VoIP to the bare
    bundle id -> TopicDisallowed, fixed by adding .voip)."""
    device = sandbox.create_device("apns")
    results = aioapns_send(
        sandbox,
        [
            alert(device["handle"], "bare", push_type=PushType.VOIP, apns_topic=sandbox.topic),
            alert(device["handle"], "suffixed", push_type=PushType.VOIP, apns_topic=sandbox.topic + ".voip"),
        ],
    )
    assert [(r.status, r.description) for r in results] == [("400", "TopicDisallowed"), ("200", None)]
    assert [e["payload"] for e in sandbox.inbox(device["id"])] == ['{"aps": {"alert": "suffixed"}}']


# 10. Certificate authentication ---------------------------------------------------------------


def client_certificate(sandbox, name: str) -> str:
    path = sandbox.directory / name
    if not path.exists():
        pytest.fail(f"the sandbox wrote no {name} into --dir (has: {sorted(p.name for p in sandbox.directory.iterdir())})")
    return str(path)


def test_apns_development_client_certificate(sandbox):
    cert = client_certificate(sandbox, "apns-client.pem")
    device = sandbox.create_device("apns")
    request = alert(device["handle"], "by certificate", push_type=PushType.ALERT)
    [result] = aioapns_send(sandbox, [request], client_cert=cert, topic=sandbox.topic)
    assert (result.status, result.description) == ("200", None)
    [entry] = sandbox.inbox(device["id"])
    assert entry["payload"] == '{"aps": {"alert": "by certificate"}}'
    assert headers_by_name(entry)["apns-id"] == request.notification_id


def test_apns_client_certificate_subject_names_the_topic(sandbox):
    """Apple's push certificates carry the bundle id as the subject UID; aioapns takes its default
    topic from there when none is given."""
    cert = client_certificate(sandbox, "apns-client.pem")
    subject = x509.load_pem_x509_certificate(Path(cert).read_bytes()).subject
    uids = [a.value for a in subject.get_attributes_for_oid(x509.NameOID.USER_ID)]
    assert uids == [sandbox.topic], subject.rfc4514_string()
    device = sandbox.create_device("apns")
    [result] = aioapns_send(sandbox, [alert(device["handle"])], client_cert=cert)
    assert (result.status, result.description) == ("200", None)


def test_apns_production_certificate_on_development_service(sandbox):
    cert = client_certificate(sandbox, "apns-client-production.pem")
    device = sandbox.create_device("apns")
    [result] = aioapns_send(sandbox, [alert(device["handle"])], client_cert=cert, topic=sandbox.topic)
    assert (result.status, result.description) == ("403", "BadCertificateEnvironment")
    assert sandbox.inbox(device["id"]) == []
