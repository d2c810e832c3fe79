"""APNs Live Activities (ActivityKit push notifications) driven by aioapns, and broadcast channel
management and broadcast sends (iOS 18) driven by httpx over HTTP/2. Expected answers are Apple's
("Starting and updating Live Activities with ActivityKit push notifications", "Sending channel
management requests to APNs", "Sending broadcast push notification requests to APNs"); the control
API calls (push-to-start tokens, what each device's activities show) are the sandbox's own.
"""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import requests
from aioapns import NotificationRequest, PushType

from support import aioapns_send, aps_reason, httpx_apns_client, provider_token

HEX64 = re.compile(r"^[0-9a-f]{64}$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# --- the sandbox's control API for Live Activities ---------------------------------------------


def push_to_start_token(sandbox, device_id: str, attributes_type: str = "DeliveryAttributes") -> str:
    r = requests.post(
        f"{sandbox.control}/devices/{device_id}/pushtostart", json={"attributesType": attributes_type}, timeout=10
    )
    assert r.status_code == 201, r.text
    return r.json()["token"]


def activities(sandbox, device_id: str) -> list[dict[str, Any]]:
    r = requests.get(f"{sandbox.control}/devices/{device_id}/activities", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["activities"]


def subscribe(sandbox, device_id: str, channel_id: str, name: str) -> dict[str, Any]:
    r = requests.post(
        f"{sandbox.control}/devices/{device_id}/channels", json={"channelId": channel_id, "name": name}, timeout=10
    )
    assert r.status_code in (200, 201), r.text
    return r.json()


def live_activity(sandbox, token: str, aps: dict[str, Any], **kwargs) -> NotificationRequest:
    return NotificationRequest(
        device_token=token,
        message={"aps": aps},
        push_type=PushType.LIVEACTIVITY,
        apns_topic=kwargs.pop("apns_topic", sandbox.topic + ".push-type.liveactivity"),
        priority=kwargs.pop("priority", 10),
        **kwargs,
    )


# 1. A Live Activity started by push, updated in order, ended -----------------------------------


def test_live_activity_start_update_and_end_with_aioapns(sandbox):
    device = sandbox.create_device("apns")
    token = push_to_start_token(sandbox, device["id"])
    assert HEX64.match(token)
    now = int(time.time())
    start = {
        "timestamp": now,
        "event": "start",
        "content-state": {"eta": "10:00", "stops": 3},
        "attributes-type": "DeliveryAttributes",
        "attributes": {"activityName": "order-42", "orderID": "42"},
        "alert": {"title": "On its way", "body": "Your order left"},
        "input-push-token": 1,
    }
    [started] = aioapns_send(sandbox, [live_activity(sandbox, token, start)])
    assert (started.status, started.description) == ("200", None)
    [activity] = activities(sandbox, device["id"])
    assert activity["name"] == "order-42"
    assert activity["attributesType"] == "DeliveryAttributes"
    assert activity["state"] == "active"
    assert activity["contentState"] == {"eta": "10:00", "stops": 3}
    update_token = activity["updateToken"]
    assert HEX64.match(update_token)

    # Two updates, then one older than the last applied: APNs accepts it, the device ignores it
    # (ActivityKit's ordering by `timestamp`).
    def update(timestamp: int, eta: str, stops: int) -> dict[str, Any]:
        return {"timestamp": timestamp, "event": "update", "content-state": {"eta": eta, "stops": stops}}

    updates = [
        live_activity(sandbox, update_token, update(now + 1, "10:05", 2)),
        live_activity(sandbox, update_token, update(now + 2, "10:10", 1)),
        live_activity(sandbox, update_token, update(now + 1, "old", 9), priority=5),
    ]
    assert [(r.status, r.description) for r in aioapns_send(sandbox, updates)] == [("200", None)] * 3
    [activity] = activities(sandbox, device["id"])
    assert activity["contentState"] == {"eta": "10:10", "stops": 1}
    assert (activity["updates"], activity["ignored"]) == (2, 1)

    end = {**update(now + 3, "delivered", 0), "event": "end", "dismissal-date": now + 3600}
    ended, late = aioapns_send(
        sandbox,
        [live_activity(sandbox, update_token, end), live_activity(sandbox, update_token, update(now + 4, "again", 0))],
    )
    assert (ended.status, ended.description) == ("200", None)
    # Apple: a token that is no longer active is 410 with the time APNs learnt it (ms).
    assert (late.status, late.description) == ("410", "Unregistered")
    assert late.timestamp is not None and late.timestamp >= now * 1000
    [activity] = activities(sandbox, device["id"])
    assert activity["state"] == "ended"
    assert activity["contentState"] == {"eta": "delivered", "stops": 0}
    # Every push the device received is in its inbox, the ignored one too.
    assert len(sandbox.inbox(device["id"])) == 5


def test_live_activity_needs_its_topic_and_its_keys(sandbox):
    """Apple: `apns-topic` is `<bundleId>.push-type.liveactivity`; the bare bundle id is another
    topic (`TopicDisallowed`, as for VoIP in test_apns). A start needs `attributes-type`; the
    reason for that is the sandbox's own (Apple documents none)."""
    device = sandbox.create_device("apns")
    token = push_to_start_token(sandbox, device["id"])
    start = {"timestamp": int(time.time()), "event": "start", "content-state": {}, "attributes": {}}
    results = aioapns_send(
        sandbox,
        [
            live_activity(sandbox, token, {**start, "attributes-type": "DeliveryAttributes"}, apns_topic=sandbox.topic),
            live_activity(sandbox, token, start),
            NotificationRequest(device_token=token, message={"aps": {"alert": "hi"}}, push_type=PushType.ALERT),
        ],
    )
    assert [(r.status, r.description) for r in results] == [
        ("400", "TopicDisallowed"),
        ("400", "MissingAttributesType"),
        ("400", "DeviceTokenNotForTopic"),
    ]
    assert activities(sandbox, device["id"]) == []


# 2. Broadcast channels ---------------------------------------------------------------------------


def test_channel_management_with_httpx(sandbox):
    jwt = provider_token(sandbox)
    auth = {"authorization": f"bearer {jwt}"}
    channels = f"/1/apps/{sandbox.topic}/channels"
    request_id = "0f7a3f6e-5b0c-4f6e-9c7d-1a2b3c4d5e6f"
    with httpx_apns_client(sandbox) as client:
        created = client.post(
            channels,
            headers={**auth, "apns-request-id": request_id},
            content=json.dumps({"message-storage-policy": 1, "push-type": "LiveActivity"}),
        )
        assert created.status_code == 201, created.text
        assert created.http_version == "HTTP/2"
        assert created.headers["apns-request-id"] == request_id
        channel = created.headers["apns-channel-id"]
        assert len(base64.b64decode(channel, validate=True)) == 16
        lower = client.post(
            channels, headers=auth, content=json.dumps({"message-storage-policy": 0, "push-type": "liveactivity"})
        )
        assert lower.status_code == 201
        assert UUID.match(lower.headers["apns-request-id"])

        read = client.get(channels, headers={**auth, "apns-channel-id": channel})
        assert (read.status_code, read.json()) == (200, {"message-storage-policy": 1, "push-type": "LiveActivity"})
        listed = client.get(f"/1/apps/{sandbox.topic}/all-channels", headers=auth)
        assert listed.status_code == 200
        assert {channel, lower.headers["apns-channel-id"]} <= set(listed.json()["channels"])

        deleted = client.delete(channels, headers={**auth, "apns-channel-id": channel})
        assert deleted.status_code == 204
        gone = client.get(channels, headers={**auth, "apns-channel-id": channel})
        assert (gone.status_code, aps_reason(gone)) == (400, "ChannelNotRegistered")

        refusals = [
            (client.get(channels, headers=auth), "MissingChannelId"),
            (client.get(channels, headers={**auth, "apns-channel-id": "not base64!"}), "BadChannelId"),
            (client.post(channels, headers=auth, content=json.dumps({"message-storage-policy": 0})), "MissingPushType"),
            (
                client.post(
                    channels, headers=auth, content=json.dumps({"message-storage-policy": 0, "push-type": "alert"})
                ),
                "InvalidPushType",
            ),
        ]
        assert [(r.status_code, aps_reason(r)) for r, _ in refusals] == [(400, reason) for _, reason in refusals]
        anonymous = client.get(f"/1/apps/{sandbox.topic}/all-channels")
        assert (anonymous.status_code, aps_reason(anonymous)) == (403, "MissingProviderToken")


def test_broadcast_reaches_every_subscribed_device(sandbox):
    jwt = provider_token(sandbox)
    auth = {"authorization": f"bearer {jwt}"}
    with httpx_apns_client(sandbox) as client:
        created = client.post(
            f"/1/apps/{sandbox.topic}/channels",
            headers=auth,
            content=json.dumps({"message-storage-policy": 0, "push-type": "LiveActivity"}),
        )
        assert created.status_code == 201, created.text
        channel = created.headers["apns-channel-id"]

        # One phone starts its activity by push, subscribed to the channel; another subscribes locally.
        by_push = sandbox.create_device("apns")
        token = push_to_start_token(sandbox, by_push["id"], "MatchAttributes")
        now = int(time.time())
        start = {
            "timestamp": now,
            "event": "start",
            "content-state": {"score": "0-0"},
            "attributes-type": "MatchAttributes",
            "attributes": {"activityName": "match-7"},
            "input-push-channel": channel,
        }
        [started] = aioapns_send(sandbox, [live_activity(sandbox, token, start)])
        assert (started.status, started.description) == ("200", None)
        local = sandbox.create_device("apns")
        subscribe(sandbox, local["id"], channel, "match-7")

        send = f"/4/broadcasts/apps/{sandbox.topic}"
        headers = {
            **auth,
            "apns-channel-id": channel,
            "apns-push-type": "LiveActivity",
            "apns-expiration": "0",
            "apns-priority": "10",
        }
        update = {"aps": {"timestamp": now + 1, "event": "update", "content-state": {"score": "1-0"}}}
        sent = client.post(send, headers=headers, content=json.dumps(update))
        assert sent.status_code == 200, sent.text
        assert UUID.match(sent.headers["apns-request-id"])
        for device in (by_push, local):
            [activity] = activities(sandbox, device["id"])
            assert (activity["channel"], activity["contentState"]) == (channel, {"score": "1-0"})
            assert sandbox.inbox(device["id"])[-1]["payload"] == json.dumps(update)

        # A channel that stores nothing takes expiration 0 only; 5120 bytes at most; no start.
        stored = client.post(send, headers={**headers, "apns-expiration": str(now + 3600)}, content=json.dumps(update))
        assert (stored.status_code, aps_reason(stored)) == (400, "BadExpirationDate")
        big = {"aps": update["aps"], "x": ""}
        big["x"] = "x" * (5121 - len(json.dumps(big)))
        assert len(json.dumps(big)) == 5121
        too_large = client.post(send, headers=headers, content=json.dumps(big))
        assert (too_large.status_code, aps_reason(too_large)) == (413, "PayloadTooLarge")
        bad_priority = client.post(send, headers={**headers, "apns-priority": "1"}, content=json.dumps(update))
        assert (bad_priority.status_code, aps_reason(bad_priority)) == (400, "BadPriority")
        as_start = client.post(send, headers=headers, content=json.dumps({"aps": start}))
        assert as_start.status_code == 400
