"""Legacy GCM / FCM HTTP (`POST /fcm/send`) with requests. Expected answers are Google's
(the legacy FCM HTTP reference): HTTP 200 with per-token errors in `results`."""

from __future__ import annotations

import json

import pytest
import requests


def gcm_post(sandbox, body: bytes, key: str | None = None) -> requests.Response:
    return requests.post(
        sandbox.gcm_url,
        data=body,
        headers={"Authorization": f"key={key or sandbox.gcm_server_key}", "Content-Type": "application/json"},
        verify=sandbox.ca,
        timeout=20,
    )


def single_result(response: requests.Response) -> tuple[dict, dict]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body["multicast_id"], int)
    [result] = body["results"]
    assert body["success"] + body["failure"] == 1
    return body, result


def test_gcm_send_lands_in_inbox_byte_for_byte(sandbox):
    device = sandbox.create_device("gcm")
    body = json.dumps(
        {
            "to": device["handle"],
            "priority": "high",
            "time_to_live": 600,
            "collapse_key": "news",
            "data": {"headline": "Grüße", "id": "7"},
            "notification": {"title": "café ☕"},
        },
        ensure_ascii=False,
    ).encode()
    envelope, result = single_result(gcm_post(sandbox, body))
    assert (envelope["success"], envelope["failure"], envelope["canonical_ids"]) == (1, 0, 0)
    assert result["message_id"] and "error" not in result

    [entry] = sandbox.inbox(device["id"])
    assert entry["payload"].encode() == body
    assert {h["name"].lower(): h["value"] for h in entry["headers"]}["content-type"] == "application/json"


def test_gcm_multicast_results_in_order(sandbox):
    good = sandbox.create_device("gcm")
    gone = sandbox.create_device("gcm")
    sandbox.uninstall(gone["id"])
    body = json.dumps({"registration_ids": [good["handle"], "bogus", gone["handle"]], "data": {"a": "b"}}).encode()
    response = gcm_post(sandbox, body)
    assert response.status_code == 200, response.text
    envelope = response.json()
    assert (envelope["success"], envelope["failure"]) == (1, 2)
    results = envelope["results"]
    assert "message_id" in results[0]
    assert [r.get("error") for r in results[1:]] == ["InvalidRegistration", "NotRegistered"]


@pytest.mark.parametrize("action", ["uninstall", "expire"])
def test_gcm_gone_device_not_registered(sandbox, action):
    device = sandbox.create_device("gcm")
    getattr(sandbox, action)(device["id"])
    _, result = single_result(gcm_post(sandbox, json.dumps({"to": device["handle"], "data": {"a": "b"}}).encode()))
    assert result == {"error": "NotRegistered"}


def test_gcm_invalid_registration(sandbox):
    _, result = single_result(gcm_post(sandbox, json.dumps({"to": "not-a-token", "data": {"a": "b"}}).encode()))
    assert result == {"error": "InvalidRegistration"}


def test_gcm_message_too_big(sandbox):
    device = sandbox.create_device("gcm")
    body = json.dumps({"to": device["handle"], "data": {"blob": "x" * 5000}}).encode()
    _, result = single_result(gcm_post(sandbox, body))
    assert result == {"error": "MessageTooBig"}
    assert sandbox.inbox(device["id"]) == []


def test_gcm_bad_server_key(sandbox):
    device = sandbox.create_device("gcm")
    response = gcm_post(sandbox, json.dumps({"to": device["handle"]}).encode(), key="AAAA-not-the-key")
    assert response.status_code == 401
