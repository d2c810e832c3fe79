"""WNS with requests: client-credentials token from accesstoken.srf, then POST to the channel URI.
Expected answers are Microsoft's (the WNS response codes)."""

from __future__ import annotations

import secrets
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from support import headers_by_name, wns_access_token, wns_token_request

TOAST = '<toast launch="order=17"><visual><binding template="ToastGeneric"><text>Grüße ☕</text></binding></visual></toast>'


def wns_post(sandbox, channel: str, token: str, body: bytes, headers: dict[str, str]) -> requests.Response:
    return requests.post(
        channel,
        data=body,
        headers={"Authorization": f"Bearer {token}", **headers},
        verify=sandbox.ca,
        timeout=20,
    )


def wns_device(sandbox, *, percent_escape: bool = False) -> dict:
    """A WNS device whose channel URI does (or does not) contain a percent-escape. requests (through
    urllib3) upper-cases percent-escapes (%2b -> %2B) on every request, which
    test_wns_channel_uri_percent_escape_case covers; the other tests use channels without one so
    that they test one thing each."""
    for _ in range(200):
        device = sandbox.create_device("wns")
        if ("%" in device["handle"]) == percent_escape:
            return device
    pytest.fail(f"no WNS channel URI {'with' if percent_escape else 'without'} a percent-escape in 200 tries")


def toast(sandbox, channel: str, token: str) -> requests.Response:
    return wns_post(
        sandbox, channel, token, TOAST.encode(), {"Content-Type": "text/xml", "X-WNS-Type": "wns/toast"}
    )


def test_wns_classic_token(sandbox):
    response = wns_token_request(sandbox)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"] == "bearer" and body["access_token"]
    assert int(body["expires_in"]) > 0


def test_wns_toast_lands_in_inbox_byte_for_byte(sandbox):
    device = wns_device(sandbox)
    token = wns_access_token(sandbox)
    headers = {
        "Content-Type": "text/xml",
        "X-WNS-Type": "wns/toast",
        "X-WNS-RequestForStatus": "true",
        "X-WNS-TTL": "600",
    }
    response = wns_post(sandbox, device["handle"], token, TOAST.encode(), headers)
    assert response.status_code == 200, (response.status_code, dict(response.headers))
    assert response.headers["X-WNS-Status"] == "received"
    assert response.headers["X-WNS-DeviceConnectionStatus"] in {"connected", "disconnected", "tempdisconnected"}
    assert 0 < len(response.headers["X-WNS-Msg-ID"]) <= 16

    [entry] = sandbox.inbox(device["id"])
    assert entry["payload"].encode() == TOAST.encode()
    got = headers_by_name(entry)
    for name, value in headers.items():
        assert got.get(name.lower()) == value, name


def test_wns_raw_and_tile_land_in_inbox(sandbox):
    device = wns_device(sandbox)
    token = wns_access_token(sandbox)
    raw = b"42"
    tile = b'<tile><visual><binding template="TileMedium"><text>7</text></binding></visual></tile>'
    r1 = wns_post(
        sandbox,
        device["handle"],
        token,
        raw,
        {"Content-Type": "application/octet-stream", "X-WNS-Type": "wns/raw", "X-WNS-Cache-Policy": "no-cache"},
    )
    r2 = wns_post(
        sandbox, device["handle"], token, tile, {"Content-Type": "text/xml", "X-WNS-Type": "wns/tile", "X-WNS-Tag": "score"}
    )
    assert (r1.status_code, r2.status_code) == (200, 200)
    inbox = sandbox.inbox(device["id"])
    assert [e["payload"].encode() for e in inbox] == [raw, tile]
    assert headers_by_name(inbox[0])["x-wns-cache-policy"] == "no-cache"
    assert headers_by_name(inbox[1])["x-wns-tag"] == "score"


def test_wns_channel_uri_percent_escape_case(sandbox):
    """Channel URIs carry percent-escapes in their token (%2b, %2f). requests, like other clients
    that normalise URLs, sends them upper-case (%2B); RFC 3986 section 2.1 makes the two
    equivalent, so the channel must still be found."""
    device = wns_device(sandbox, percent_escape=True)
    response = requests.post(
        device["handle"],
        data=TOAST.encode(),
        headers={"Authorization": f"Bearer {wns_access_token(sandbox)}", "Content-Type": "text/xml", "X-WNS-Type": "wns/toast"},
        verify=sandbox.ca,
        timeout=20,
    )
    assert response.status_code == 200, (response.request.url, dict(response.headers))
    assert len(sandbox.inbox(device["id"])) == 1


@pytest.mark.parametrize("action", ["uninstall", "expire"])
def test_wns_gone_channel(sandbox, action):
    device = wns_device(sandbox)
    getattr(sandbox, action)(device["id"])
    response = toast(sandbox, device["handle"], wns_access_token(sandbox))
    assert response.status_code == 410
    assert sandbox.inbox(device["id"]) == []


def test_wns_unknown_channel(sandbox):
    device = wns_device(sandbox)  # only for the channel host
    base = device["handle"].split("?", 1)[0]
    unknown = f"{base}?token={quote(secrets.token_urlsafe(66), safe='')}"
    response = toast(sandbox, unknown, wns_access_token(sandbox))
    assert response.status_code == 404


def test_wns_payload_limit(sandbox):
    device = wns_device(sandbox)
    token = wns_access_token(sandbox)
    raw_headers = {"Content-Type": "application/octet-stream", "X-WNS-Type": "wns/raw"}
    at_limit = wns_post(sandbox, device["handle"], token, b"a" * 5000, raw_headers)
    over = wns_post(sandbox, device["handle"], token, b"a" * 5001, raw_headers)
    assert (at_limit.status_code, over.status_code) == (200, 413)
    assert len(sandbox.inbox(device["id"])) == 1


def test_wns_bad_client_secret(sandbox):
    response = wns_token_request(sandbox, secret="not-the-secret")
    assert response.status_code == 400
    assert "error" in response.json()


def test_wns_revoked_access_token(own_sandbox):
    sandbox = own_sandbox
    device = wns_device(sandbox)
    token = wns_access_token(sandbox)
    assert toast(sandbox, device["handle"], token).status_code == 200
    sandbox.revoke_tokens()
    assert toast(sandbox, device["handle"], token).status_code == 401
    assert toast(sandbox, device["handle"], wns_access_token(sandbox)).status_code == 200


def test_wns_entra_id_scope(sandbox):
    """Windows App SDK apps authenticate through Entra ID with scope https://wns.windows.com/.default;
    the token works for channel sends like a notify.windows.com one."""
    response = wns_token_request(sandbox, scope="https://wns.windows.com/.default")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"].lower() == "bearer" and body["access_token"]
    device = wns_device(sandbox)
    assert toast(sandbox, device["handle"], body["access_token"]).status_code == 200
    assert len(sandbox.inbox(device["id"])) == 1


def test_wns_entra_id_tenant_endpoint(sandbox):
    """Microsoft Entra ID's client-credentials flow at the tenant's v2.0 endpoint, as Windows App SDK
    apps' servers use it: the tenant's own application and secret, scope https://wns.windows.com/.default;
    another tenant, another secret or another scope are refused with Entra ID's AADSTS codes."""
    wns = sandbox.info["wns"]
    url = sandbox.info["endpoints"]["entraToken"]
    secret = Path(sandbox.info["files"]["entraClientSecret"]).read_text().strip()
    form = {"grant_type": "client_credentials", "client_id": wns["entraClientId"], "client_secret": secret,
            "scope": "https://wns.windows.com/.default"}
    response = requests.post(url, data=form, verify=sandbox.ca, timeout=20)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"] == "Bearer" and int(body["expires_in"]) > 0
    device = wns_device(sandbox)
    assert toast(sandbox, device["handle"], body["access_token"]).status_code == 200

    other_tenant = url.replace(wns["entraTenantId"], "00000000-0000-0000-0000-000000000000")
    assert "AADSTS90002" in requests.post(other_tenant, data=form, verify=sandbox.ca, timeout=20).text
    wrong_secret = requests.post(url, data={**form, "client_secret": "nope"}, verify=sandbox.ca, timeout=20)
    assert wrong_secret.status_code == 401 and "AADSTS7000215" in wrong_secret.text
    wrong_scope = requests.post(url, data={**form, "scope": "notify.windows.com"}, verify=sandbox.ca, timeout=20)
    assert wrong_scope.status_code == 400 and wrong_scope.json()["error"] == "invalid_scope"
