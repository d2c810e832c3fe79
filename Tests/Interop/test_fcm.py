"""FCM HTTP v1 driven by google-auth (service-account OAuth) and requests. Expected answers are
Google's (the FCM HTTP v1 reference and its ErrorCode page)."""

from __future__ import annotations

import json
import re
import time

import pytest

from support import detail, fcm_credentials, fcm_post, google_session, rpc_error


@pytest.fixture
def fcm(sandbox):
    """A requests session trusting the sandbox CA and a fresh google-auth access token."""
    session = google_session(sandbox)
    credentials = fcm_credentials(sandbox, session)
    return session, credentials.token


def message_for(token: str, **extra) -> bytes:
    return json.dumps({"message": {"token": token, **extra}}).encode()


def test_fcm_google_auth_service_account_token(sandbox):
    """google-auth signs the assertion with aud=https://oauth2.googleapis.com/token, the audience
    Google documents as constant, and posts it to the service account's token_uri."""
    session = google_session(sandbox)
    credentials = fcm_credentials(sandbox, session)
    assert credentials.token
    assert credentials.expiry is not None and credentials.expiry.timestamp() > time.time() + 60


def test_fcm_send_lands_in_inbox_byte_for_byte(sandbox, fcm):
    session, token = fcm
    device = sandbox.create_device("fcm")
    body = json.dumps(
        {
            "message": {
                "token": device["handle"],
                "notification": {"title": "Grüße", "body": "café ☕"},
                "data": {"orderId": "17", "kind": "shipped"},
                "android": {"priority": "HIGH", "ttl": "86400s", "collapse_key": "orders"},
                "apns": {"headers": {"apns-priority": "10"}, "payload": {"aps": {"badge": 1}}},
            }
        },
        ensure_ascii=False,
    ).encode()
    response = fcm_post(sandbox, session, token, body)
    assert response.status_code == 200, response.text
    name = response.json()["name"]
    assert re.fullmatch(rf"projects/{re.escape(sandbox.fcm_project)}/messages/[^/]+", name), name

    [entry] = sandbox.inbox(device["id"])
    assert entry["payload"].encode() == body
    assert {h["name"].lower(): h["value"] for h in entry["headers"]}["content-type"] == "application/json; charset=UTF-8"


@pytest.mark.parametrize("action", ["uninstall", "expire"])
def test_fcm_gone_device_is_unregistered(sandbox, fcm, action):
    session, token = fcm
    device = sandbox.create_device("fcm")
    getattr(sandbox, action)(device["id"])
    response = fcm_post(sandbox, session, token, message_for(device["handle"], data={"a": "b"}))
    assert response.status_code == 404, response.text
    error = rpc_error(response)
    assert error["code"] == 404 and error["status"] == "NOT_FOUND"
    fcm_error = detail(error, "google.firebase.fcm.v1.FcmError")
    assert fcm_error and fcm_error["errorCode"] == "UNREGISTERED", error


def test_fcm_invalid_registration_token(sandbox, fcm):
    session, token = fcm
    response = fcm_post(sandbox, session, token, message_for("not-a-registration-token", data={"a": "b"}))
    assert response.status_code == 400, response.text
    error = rpc_error(response)
    assert error["status"] == "INVALID_ARGUMENT"
    fcm_error = detail(error, "google.firebase.fcm.v1.FcmError")
    assert fcm_error and fcm_error["errorCode"] == "INVALID_ARGUMENT", error
    bad_request = detail(error, "google.rpc.BadRequest")
    assert bad_request, f"no google.rpc.BadRequest detail in {error}"
    assert [v["field"] for v in bad_request["fieldViolations"]] == ["message.token"], bad_request


def test_fcm_message_too_big(sandbox, fcm):
    session, token = fcm
    device = sandbox.create_device("fcm")
    response = fcm_post(sandbox, session, token, message_for(device["handle"], data={"blob": "x" * 5000}))
    assert response.status_code == 400, response.text
    error = rpc_error(response)
    assert error["status"] == "INVALID_ARGUMENT"
    fcm_error = detail(error, "google.firebase.fcm.v1.FcmError")
    assert fcm_error is None or fcm_error["errorCode"] == "INVALID_ARGUMENT", error
    assert sandbox.inbox(device["id"]) == []


def test_fcm_revoked_access_token(own_sandbox):
    """After the sandbox forgets its access tokens, a send with the old one is 401
    UNAUTHENTICATED; a client that refreshes (google-auth) gets through again."""
    sandbox = own_sandbox
    session = google_session(sandbox)
    credentials = fcm_credentials(sandbox, session)
    device = sandbox.create_device("fcm")
    assert fcm_post(sandbox, session, credentials.token, message_for(device["handle"])).status_code == 200

    sandbox.revoke_tokens()
    response = fcm_post(sandbox, session, credentials.token, message_for(device["handle"]))
    assert response.status_code == 401, response.text
    assert rpc_error(response)["status"] == "UNAUTHENTICATED"

    refreshed = fcm_credentials(sandbox, session)
    assert fcm_post(sandbox, session, refreshed.token, message_for(device["handle"])).status_code == 200
    assert len(sandbox.inbox(device["id"])) == 2


def test_fcm_unknown_field_in_message(sandbox, fcm):
    """Google's JSON transcoding rejects fields the Message proto lacks: 400 INVALID_ARGUMENT,
    'Invalid JSON payload received. Unknown name "..." at 'message': Cannot find field.'"""
    session, token = fcm
    device = sandbox.create_device("fcm")
    response = fcm_post(sandbox, session, token, message_for(device["handle"], priority="high"))
    assert response.status_code == 400, response.text
    error = rpc_error(response)
    assert error["status"] == "INVALID_ARGUMENT"
    assert "Unknown name" in error["message"], error
    assert sandbox.inbox(device["id"]) == []


def test_fcm_validate_only(sandbox, fcm):
    session, token = fcm
    device = sandbox.create_device("fcm")
    body = json.dumps({"validate_only": True, "message": {"token": device["handle"], "data": {"a": "b"}}}).encode()
    response = fcm_post(sandbox, session, token, body)
    assert response.status_code == 200, response.text
    assert response.json()["name"].startswith(f"projects/{sandbox.fcm_project}/messages/")
    assert sandbox.inbox(device["id"]) == []


def iid_post(sandbox, session, token: str, action: str, topic: str, tokens: list[str]) -> dict:
    """The Instance ID batch call as firebase-admin makes it (access_token_auth, /topics/ prefix)."""
    response = session.post(
        f"{sandbox.info['endpoints']['fcm']}/iid/v1:{action}",
        json={"to": f"/topics/{topic}", "registration_tokens": tokens},
        headers={"Authorization": f"Bearer {token}", "access_token_auth": "true"},
        timeout=20,
    )
    assert response.status_code == 200, response.text
    return response.json()


def test_fcm_topic_and_condition_reach_subscribed_devices(sandbox, fcm):
    """Topic management through the Instance ID API, then one message to a topic and one to a
    condition: each subscribed device that matches receives it; an unknown token is NOT_FOUND."""
    session, token = fcm
    first, second = sandbox.create_device("fcm"), sandbox.create_device("fcm")
    topic = f"interop-{int(time.time() * 1000)}"
    added = iid_post(sandbox, session, token, "batchAdd", topic, [first["handle"], second["handle"], "unknown-token-123"])
    assert added["results"] == [{}, {}, {"error": "NOT_FOUND"}], added
    assert iid_post(sandbox, session, token, "batchAdd", f"{topic}-eu", [second["handle"]])["results"] == [{}]

    response = fcm_post(sandbox, session, token, json.dumps({"message": {"topic": topic, "data": {"n": "1"}}}).encode())
    assert response.status_code == 200, response.text
    assert [len(sandbox.inbox(device["id"])) for device in (first, second)] == [1, 1]

    condition = f"'{topic}' in topics && !('{topic}-eu' in topics)"
    response = fcm_post(sandbox, session, token, json.dumps({"message": {"condition": condition, "data": {"n": "2"}}}).encode())
    assert response.status_code == 200, response.text
    assert [len(sandbox.inbox(device["id"])) for device in (first, second)] == [2, 1]

    assert iid_post(sandbox, session, token, "batchRemove", topic, [first["handle"]])["results"] == [{}]
    fcm_post(sandbox, session, token, json.dumps({"message": {"topic": topic, "data": {"n": "3"}}}).encode())
    assert [len(sandbox.inbox(device["id"])) for device in (first, second)] == [2, 2]


@pytest.mark.parametrize(
    "target, field",
    [({"topic": "bad topic"}, "message.topic"), ({"topic": "/topics/news"}, "message.topic"),
     ({"condition": "'a' in topics &&"}, "message.condition"), ({"condition": "(" * 100000 + "'a' in topics" + ")" * 100000}, "message.condition"),
     ({"condition": " || ".join(f"'t{i}' in topics" for i in range(6))}, "message.condition")],
)
def test_fcm_malformed_topic_or_condition_is_invalid_argument(sandbox, fcm, target, field):
    session, token = fcm
    response = fcm_post(sandbox, session, token, json.dumps({"message": {**target, "data": {"a": "b"}}}).encode())
    assert response.status_code == 400, response.text
    error = rpc_error(response)
    violations = detail(error, "google.rpc.BadRequest")["fieldViolations"]
    assert violations[0]["field"] == field, error


def test_fcm_topic_messages_are_limited_to_2048_bytes(sandbox, fcm):
    session, token = fcm
    big = {"message": {"topic": "news", "data": {"a": "x" * 2100}}}
    response = fcm_post(sandbox, session, token, json.dumps(big).encode())
    assert response.status_code == 400, response.text
    assert rpc_error(response)["status"] == "INVALID_ARGUMENT"
    # The same message to a token is under the 4096-byte limit: refused for its unknown token, not its size.
    response = fcm_post(sandbox, session, token, json.dumps({"message": {"token": "no-such-token-1234", "data": {"a": "x" * 2100}}}).encode())
    assert response.status_code == 400, response.text
    assert detail(rpc_error(response), "google.rpc.BadRequest")["fieldViolations"][0]["field"] == "message.token", response.text


def test_fcm_condition_is_evaluated_left_to_right(sandbox, fcm):
    """Firebase evaluates parentheses first, then left to right: `A || B && C` is `(A || B) && C`,
    so a device subscribed to A alone does not receive it; with the parentheses moved it does."""
    session, token = fcm
    device = sandbox.create_device("fcm")
    stamp = int(time.time() * 1000)
    a, b, c = (f"lr{stamp}{name}" for name in "abc")
    assert iid_post(sandbox, session, token, "batchAdd", a, [device["handle"]])["results"] == [{}]
    for condition, received in [
        (f"'{a}' in topics || '{b}' in topics && '{c}' in topics", 0),
        (f"'{a}' in topics || ('{b}' in topics && '{c}' in topics)", 1),
    ]:
        response = fcm_post(sandbox, session, token, json.dumps({"message": {"condition": condition, "data": {"x": "y"}}}).encode())
        assert response.status_code == 200, response.text
        assert len(sandbox.inbox(device["id"])) == received, condition
