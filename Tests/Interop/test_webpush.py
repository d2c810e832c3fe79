"""Web Push with code nobody here wrote, in both directions.

- pywebpush (with py_vapid and http_ece) sends to the sandbox's Web Push service, which checks the
  VAPID token and decrypts with the subscription's private key; a forged signature, an expired
  token and a wrong audience are refused as Mozilla autopush refuses them (401, errno 109).
- The gateway sends to a push service written here in Python, which checks the VAPID token with
  PyJWT and decrypts the body with http_ece (RFC 8291's reference implementation) and the
  subscription's private key made with cryptography.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import http_ece
import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pywebpush import WebPushException, webpush

from support import pushgate_binary, start_sandbox


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def subscription(device: dict) -> dict:
    return json.loads(device["handle"])


def vapid_private_key(sandbox) -> str:
    return Path(sandbox.info["files"]["vapidPrivateKey"]).read_text().strip()


def sandbox_origin(sandbox) -> str:
    return sandbox.info["endpoints"]["webPush"]


@pytest.fixture
def trusted(sandbox, monkeypatch):
    """requests (inside pywebpush) trusts the sandbox's CA."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", sandbox.ca)
    return sandbox


def test_pywebpush_delivers_and_the_sandbox_decrypts_the_text(trusted):
    sandbox = trusted
    device = sandbox.create_device("browser")
    text = "Grüße ☕ from pywebpush"
    response = webpush(
        subscription_info=subscription(device), data=text, vapid_private_key=vapid_private_key(sandbox),
        vapid_claims={"sub": "mailto:interop@example.com"}, ttl=120)
    assert response.status_code == 201, response.text
    assert response.headers["Location"].startswith(sandbox_origin(sandbox))
    inbox = sandbox.inbox(device["id"])
    assert [item["payload"] for item in inbox] == [text]


def test_an_uninstalled_subscription_answers_410(trusted):
    sandbox = trusted
    device = sandbox.create_device("browser")
    sandbox.uninstall(device["id"])
    with pytest.raises(WebPushException) as raised:
        webpush(
            subscription_info=subscription(device), data="x", vapid_private_key=vapid_private_key(sandbox),
            vapid_claims={"sub": "mailto:interop@example.com"})
    assert raised.value.response.status_code == 410
    assert raised.value.response.json()["errno"] == 106


def raw_send(sandbox, device: dict, token: str, key: str) -> requests.Response:
    """A delivery with a correctly encrypted body and the given VAPID token and key."""
    sub = subscription(device)
    body = http_ece.encrypt(
        b"refused", private_key=ec.generate_private_key(ec.SECP256R1()), dh=unb64url(sub["keys"]["p256dh"]),
        auth_secret=unb64url(sub["keys"]["auth"]), version="aes128gcm")
    return requests.post(
        sub["endpoint"], data=body, verify=sandbox.ca, timeout=10,
        headers={"Authorization": f"vapid t={token}, k={key}", "TTL": "60", "Content-Encoding": "aes128gcm"})


def signing_key(sandbox) -> ec.EllipticCurvePrivateKey:
    return ec.derive_private_key(int.from_bytes(unb64url(vapid_private_key(sandbox)), "big"), ec.SECP256R1())


@pytest.mark.parametrize(
    "case",
    ["forged signature", "expired", "wrong audience", "too far ahead"],
)
def test_bad_vapid_tokens_are_refused_as_autopush_refuses_them(sandbox, case):
    device = sandbox.create_device("browser")
    public_key = sandbox.info["browser"]["vapidPublicKey"]
    now = int(time.time())
    claims = {"aud": sandbox_origin(sandbox), "exp": now + 3600, "sub": "mailto:interop@example.com"}
    key = signing_key(sandbox)
    expected = {"forged signature": "InvalidSignature", "expired": "ExpiredSignature",
                "wrong audience": "Invalid VAPID audience", "too far ahead": "expiration is too long"}[case]
    if case == "forged signature":
        key = ec.generate_private_key(ec.SECP256R1())
    elif case == "expired":
        claims["exp"] = now - 60
    elif case == "wrong audience":
        claims["aud"] = "https://push.example.com"
    else:
        claims["exp"] = now + 25 * 3600
    token = jwt.encode(claims, key, algorithm="ES256", headers={"typ": "JWT"})
    response = raw_send(sandbox, device, token, public_key)
    assert response.status_code == 401, response.text
    assert response.json()["errno"] == 109
    assert expected in response.json()["message"]
    assert sandbox.inbox(device["id"]) == []

    # The same request with a good token is delivered: only the token was wrong.
    good = jwt.encode({**claims, "aud": sandbox_origin(sandbox), "exp": now + 3600}, signing_key(sandbox), algorithm="ES256")
    assert raw_send(sandbox, device, good, public_key).status_code == 201
    assert [item["payload"] for item in sandbox.inbox(device["id"])] == ["refused"]


class PushService:
    """An HTTPS push service in Python: records each POST (headers and body) and answers 201."""

    def __init__(self, certificate: str, key: str):
        received: list[tuple[dict[str, str], bytes, str]] = []
        self.received = received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", "0"))
                received.append(({k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length), self.path))
                self.send_response(201)
                self.send_header("Location", "/m/1")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


@pytest.fixture
def gateway_and_service(tmp_path):
    """`pushgate serve` against a fresh sandbox, with a Python push service on this machine's
    allow-list (handles.webPushHosts) and trusted through the sandbox's CA."""
    port = free_port()
    sandbox = start_sandbox(tmp_path, extra_args=["--gateway-port", str(port), "--gateway-tls-port", str(free_port())])
    files = sandbox.info["files"]
    service = PushService(files["gatewayCertificate"], files["gatewayKey"])
    config_path = tmp_path / "config.json"
    config = json.loads(config_path.read_text())
    config["apps"]["default"]["handles"]["webPushHosts"].append(f"127.0.0.1:{service.port}")
    config_path.write_text(json.dumps(config))
    log = open(tmp_path / "gateway.log", "wb")
    process = subprocess.Popen(
        [str(pushgate_binary()), "serve", "--config", str(config_path)], stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True, cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, (tmp_path / "gateway.log").read_text()
        try:
            if requests.get(f"{base}/healthz", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            pass
        assert time.monotonic() < deadline, (tmp_path / "gateway.log").read_text()
        time.sleep(0.1)
    try:
        yield base, service, sandbox
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
        service.stop()
        sandbox.stop()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_gateways_encryption_is_read_by_http_ece_and_its_vapid_token_by_pyjwt(gateway_and_service):
    base, service, sandbox = gateway_and_service
    browser_key = ec.generate_private_key(ec.SECP256R1())
    public = browser_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    auth = os.urandom(16)
    endpoint = f"https://127.0.0.1:{service.port}/push/{b64url(os.urandom(24))}"
    sub = {"endpoint": endpoint, "keys": {"p256dh": b64url(public), "auth": b64url(auth)}, "expirationTime": None}

    alice = ("alice", "alice")
    reserved = requests.post(f"{base}/api/register", params={"handle": endpoint}, auth=alice, timeout=10)
    assert reserved.status_code == 200, reserved.text
    registered = requests.put(
        f"{base}/api/register/{reserved.json()}", json={"Platform": "browser", "Handle": sub, "Tags": []}, auth=alice, timeout=10)
    assert registered.status_code == 200, registered.text

    message = "Grüße ☕ through the gateway"
    sent = requests.post(
        f"{base}/api/notifications", params={"pns": "browser", "to_tag": "alice"}, json=message, auth=("bob", "bob"), timeout=30)
    assert sent.status_code == 200, sent.text
    assert sent.json()["success"] == 1, sent.text

    assert len(service.received) == 1
    headers, body, path = service.received[0]
    assert endpoint.endswith(path)
    assert headers["content-encoding"] == "aes128gcm"
    assert int(headers["ttl"]) > 0
    assert len(body) <= 4096

    # RFC 8291: the reference decrypter reads it with the subscription's private key.
    plain = http_ece.decrypt(body, private_key=browser_key, auth_secret=auth, version="aes128gcm")
    payload = json.loads(plain)
    assert payload["web_push"] == 8030
    assert payload["notification"]["title"] == "From bob"
    assert payload["notification"]["body"] == message

    # RFC 8292: vapid t=<JWT>, k=<key>; the JWT verifies with k, for this origin, at most 24 h.
    scheme, _, parameters = headers["authorization"].partition(" ")
    assert scheme == "vapid"
    fields = dict(part.strip().split("=", 1) for part in parameters.split(","))
    point = unb64url(fields["k"])
    assert b64url(point) == sandbox.info["browser"]["vapidPublicKey"]
    verifying = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    claims = jwt.decode(fields["t"], verifying, algorithms=["ES256"], audience=f"https://127.0.0.1:{service.port}")
    assert time.time() < claims["exp"] <= time.time() + 24 * 3600
    assert claims["sub"].startswith("mailto:")
