"""UnifiedPush with code nobody here wrote: pywebpush (with py_vapid and http_ece) as an application
server sends to the sandbox's UnifiedPush distributor (ntfy's behaviour, `/up/<token>` on the Web
Push listener), which answers the discovery request, takes messages with or without VAPID,
decrypts them with the subscription's private key, and answers ntfy's 507 when the app has no
active subscriber.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from pywebpush import WebPushException, webpush


def subscription(device: dict) -> dict:
    value = json.loads(device["handle"])
    # pywebpush takes the browser's shape: endpoint and keys.
    return {"endpoint": value["endpoint"], "keys": value["keys"]}


def vapid_private_key(sandbox) -> str:
    return Path(sandbox.info["files"]["vapidPrivateKey"]).read_text().strip()


def unifiedpush_device(sandbox, vapid: bool = False) -> dict:
    r = requests.post(f"{sandbox.control}/devices", json={"platform": "unifiedpush", "vapid": vapid}, timeout=10)
    assert r.status_code == 201, r.text
    return r.json()


@pytest.fixture
def trusted(sandbox, monkeypatch):
    """requests (inside pywebpush) trusts the sandbox's CA."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", sandbox.ca)
    return sandbox


def test_the_endpoint_answers_the_unifiedpush_discovery_request(sandbox):
    device = unifiedpush_device(sandbox)
    endpoint = subscription(device)["endpoint"]
    assert "/up/" in endpoint
    response = requests.get(endpoint, verify=sandbox.ca, timeout=10)
    assert response.status_code == 200, response.text
    assert response.json() == {"unifiedpush": {"version": 1}}


def test_a_browser_push_service_is_no_unifiedpush_server(sandbox):
    # The discovery request the gateway makes at registration fails on autopush's endpoints.
    device = sandbox.create_device("browser")
    response = requests.get(json.loads(device["handle"])["endpoint"], verify=sandbox.ca, timeout=10)
    assert response.status_code != 200


def test_pywebpush_without_vapid_delivers_and_the_distributor_decrypts(trusted):
    sandbox = trusted
    device = unifiedpush_device(sandbox)
    text = '{"title": "Grüße", "message": "☕ from pywebpush"}'
    response = webpush(subscription_info=subscription(device), data=text, ttl=60)
    # ntfy answers 200 with its message JSON.
    assert response.status_code == 200, response.text
    assert response.json()["event"] == "message"
    inbox = sandbox.inbox(device["id"])
    assert [item["payload"] for item in inbox] == [text]
    assert all(header["name"].lower() != "authorization" for header in inbox[0]["headers"])


def test_pywebpush_with_vapid_delivers_to_a_subscription_that_wants_it(trusted):
    sandbox = trusted
    device = unifiedpush_device(sandbox, vapid=True)
    response = webpush(
        subscription_info=subscription(device), data="signed", vapid_private_key=vapid_private_key(sandbox),
        vapid_claims={"sub": "mailto:interop@example.com"}, ttl=60)
    assert response.status_code == 200, response.text
    inbox = sandbox.inbox(device["id"])
    assert [item["payload"] for item in inbox] == ["signed"]
    assert {"name": "Authorization", "value": "vapid"} in inbox[0]["headers"]


def test_a_subscription_that_wants_vapid_refuses_an_unsigned_message(trusted):
    sandbox = trusted
    device = unifiedpush_device(sandbox, vapid=True)
    with pytest.raises(WebPushException) as raised:
        webpush(subscription_info=subscription(device), data="unsigned", ttl=60)
    assert raised.value.response.status_code == 401
    assert sandbox.inbox(device["id"]) == []


@pytest.mark.parametrize(
    ("action", "status", "code"),
    [("uninstall", 507, 50701), ("expire", 410, 41001)],
    ids=["no active subscriber: ntfy's 507", "expired: 410"],
)
def test_a_device_without_an_active_subscriber_or_expired_is_refused(trusted, action, status, code):
    sandbox = trusted
    device = unifiedpush_device(sandbox)
    getattr(sandbox, action)(device["id"])
    with pytest.raises(WebPushException) as raised:
        webpush(subscription_info=subscription(device), data="x", ttl=60)
    assert raised.value.response.status_code == status
    assert raised.value.response.json()["code"] == code
    assert sandbox.inbox(device["id"]) == []


def test_an_unknown_endpoint_answers_404(trusted):
    sandbox = trusted
    device = unifiedpush_device(sandbox)
    sub = subscription(device)
    sub["endpoint"] = sub["endpoint"].rsplit("/", 1)[0] + "/unknown-token"
    with pytest.raises(WebPushException) as raised:
        webpush(subscription_info=sub, data="x", ttl=60)
    assert raised.value.response.status_code == 404


def test_an_oversized_message_answers_413(trusted):
    sandbox = trusted
    device = unifiedpush_device(sandbox)
    with pytest.raises(WebPushException) as raised:
        webpush(subscription_info=subscription(device), data="x" * 5000, ttl=60)
    assert raised.value.response.status_code == 413
