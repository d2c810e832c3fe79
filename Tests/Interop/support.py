"""Helpers for the interoperability suite: starting `pushgate sandbox`, its control API, and thin
wrappers around the independent client libraries (aioapns, httpx/h2, google-auth, requests).

Nothing here knows what the sandbox answers; the tests assert what Apple, Google and Microsoft
document (Apple's APNs provider API, Firebase's FCM v1 and legacy HTTP references, Microsoft's
WNS response codes).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
import requests
from aioapns import APNs, NotificationRequest
from aioapns.connection import APNsDevelopmentClientProtocol

REPO_ROOT = Path(__file__).resolve().parents[2]
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"


def pushgate_binary() -> Path:
    path = Path(os.environ.get("PUSHGATE_BIN", ".build/release/pushgate"))
    return path if path.is_absolute() else REPO_ROOT / path


@dataclass
class Sandbox:
    """A running `pushgate sandbox`, as described by the sandbox.json it wrote."""

    directory: Path
    info: dict[str, Any]
    process: subprocess.Popen | None = None
    log: Path | None = None

    # --- what sandbox.json says ---------------------------------------------------------------
    @property
    def ca(self) -> str:
        return str(self.directory / "ca.pem")

    @property
    def control(self) -> str:
        return self.info["endpoints"]["control"]

    @property
    def apns_host_port(self) -> tuple[str, int]:
        parts = urlsplit(self.info["endpoints"]["apns"])
        return parts.hostname, parts.port

    @property
    def apns_url(self) -> str:
        return self.info["endpoints"]["apns"]

    @property
    def topic(self) -> str:
        return self.info["apns"]["topic"]

    @property
    def apns_key_id(self) -> str:
        return self.info["apns"]["keyId"]

    @property
    def apns_team_id(self) -> str:
        return self.info["apns"]["teamId"]

    @property
    def apns_key_pem(self) -> str:
        return Path(self.info["files"]["apnsKey"]).read_text()

    @property
    def service_account_file(self) -> str:
        return self.info["files"]["serviceAccount"]

    @property
    def fcm_project(self) -> str:
        return self.info["fcm"]["projectId"]

    @property
    def fcm_send_url(self) -> str:
        return f"{self.info['endpoints']['fcm']}/v1/projects/{self.fcm_project}/messages:send"

    @property
    def gcm_url(self) -> str:
        return self.info["endpoints"]["gcm"]

    @property
    def gcm_server_key(self) -> str:
        return Path(self.info["files"]["gcmServerKey"]).read_text().strip()

    @property
    def wns_token_url(self) -> str:
        return self.info["endpoints"]["wnsToken"]

    @property
    def wns_client_id(self) -> str:
        return self.info["wns"]["clientId"]

    @property
    def wns_client_secret(self) -> str:
        return Path(self.info["files"]["wnsClientSecret"]).read_text().strip()

    # --- control API ----------------------------------------------------------------------------
    def create_device(self, platform: str) -> dict[str, Any]:
        r = requests.post(f"{self.control}/devices", json={"platform": platform}, timeout=10)
        assert r.status_code == 201, r.text
        return r.json()

    def inbox(self, device_id: str) -> list[dict[str, Any]]:
        r = requests.get(f"{self.control}/devices/{device_id}/inbox", timeout=10)
        assert r.status_code == 200, r.text
        return r.json()

    def uninstall(self, device_id: str) -> None:
        self._action(device_id, "uninstall")

    def expire(self, device_id: str) -> None:
        self._action(device_id, "expire")

    def _action(self, device_id: str, action: str) -> None:
        r = requests.post(f"{self.control}/devices/{device_id}/{action}", timeout=10)
        assert r.status_code == 200, r.text

    def revoke_tokens(self) -> None:
        r = requests.post(f"{self.control}/tokens/revoke", timeout=10)
        assert r.status_code == 200, r.text

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def load_sandbox(directory: Path) -> Sandbox:
    """A sandbox some other process started, from the sandbox.json in its --dir."""
    return Sandbox(directory=directory, info=json.loads((directory / "sandbox.json").read_text()))


def start_sandbox(directory: Path, timeout: float = 30.0, extra_args: list[str] | None = None) -> Sandbox:
    """Starts `$PUSHGATE_BIN sandbox --dir <directory>` and returns once its control API answers."""
    binary = pushgate_binary()
    if not binary.exists():
        raise RuntimeError(f"no pushgate binary at {binary} (set PUSHGATE_BIN)")
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "sandbox.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(binary), "sandbox", "--dir", str(directory), *(extra_args or [])],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    summary = directory / "sandbox.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sandbox exited with {process.returncode}:\n{log.read_text()}")
        try:
            info = json.loads(summary.read_text())
            if requests.get(f"{info['endpoints']['control']}/health", timeout=2).status_code == 200:
                return Sandbox(directory=directory, info=info, process=process, log=log)
        except (OSError, ValueError, KeyError, requests.RequestException):
            pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"sandbox not ready after {timeout} s:\n{log.read_text()}")


# --- APNs ---------------------------------------------------------------------------------------


def apns_ssl_context(sandbox: Sandbox) -> ssl.SSLContext:
    """Trusts the sandbox CA and offers ALPN h2 (RFC 9113 section 3.2). aioapns's own default context
    offers no ALPN; see test_apns_aioapns_default_tls_context."""
    context = ssl.create_default_context(cafile=sandbox.ca)
    context.set_alpn_protocols(["h2"])
    return context


def point_at_sandbox(client: APNs, sandbox: Sandbox) -> None:
    """aioapns has no host/port option: its connection pool dials `protocol_class.APNS_SERVER` and
    `APNS_PORT` (class attributes; `use_sandbox=True` picks the development class). Swap in a
    subclass that names the sandbox instead."""
    host, port = sandbox.apns_host_port
    client.pool.protocol_class = type(
        "SandboxAPNsProtocol", (APNsDevelopmentClientProtocol,), {"APNS_SERVER": host, "APNS_PORT": port}
    )


def aioapns_send(
    sandbox: Sandbox,
    notifications: list[NotificationRequest],
    *,
    key: str | None = None,
    client_cert: str | None = None,
    topic: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> list[Any]:
    """Sends `notifications` in order over one aioapns client (token auth with the sandbox key, or
    `key`; or certificate auth with `client_cert`). Returns aioapns NotificationResults."""

    async def run() -> list[Any]:
        context = ssl_context or apns_ssl_context(sandbox)
        if client_cert:
            client = APNs(
                client_cert=client_cert, topic=topic, use_sandbox=True, ssl_context=context, max_connection_attempts=1
            )
        else:
            client = APNs(
                key=key or sandbox.apns_key_pem,
                key_id=sandbox.apns_key_id,
                team_id=sandbox.apns_team_id,
                topic=topic or sandbox.topic,
                use_sandbox=True,
                ssl_context=context,
                max_connection_attempts=1,
            )
        point_at_sandbox(client, sandbox)
        try:
            return [await asyncio.wait_for(client.send_notification(n), 20) for n in notifications]
        finally:
            client.pool.close()
            await asyncio.sleep(0)

    return asyncio.run(run())


def apns_json(message: dict[str, Any]) -> bytes:
    """The exact bytes aioapns puts on the wire for `message`."""
    return json.dumps(message, ensure_ascii=False).encode()


def apns_message_of_size(size: int) -> dict[str, Any]:
    """An APNs payload whose aioapns encoding is exactly `size` bytes."""
    base = len(apns_json({"aps": {"alert": ""}}))
    assert size >= base
    return {"aps": {"alert": "x" * (size - base)}}


def provider_token(sandbox: Sandbox, *, issued_at: int | None = None, key: str | None = None) -> str:
    """An APNs provider token (ES256 JWT) made with PyJWT, independently of aioapns."""
    return jwt.encode(
        {"iss": sandbox.apns_team_id, "iat": int(time.time()) if issued_at is None else issued_at},
        key or sandbox.apns_key_pem,
        algorithm="ES256",
        headers={"kid": sandbox.apns_key_id},
    )


def httpx_apns_client(sandbox: Sandbox, *, cert: str | None = None) -> httpx.Client:
    """A raw HTTP/2 client (httpx + h2) for requests aioapns cannot make (no authorization at all,
    a hand-made JWT)."""
    context = ssl.create_default_context(cafile=sandbox.ca)
    if cert:
        context.load_cert_chain(cert)
    return httpx.Client(http2=True, http1=False, verify=context, base_url=sandbox.apns_url, timeout=20)


def aps_reason(response: httpx.Response) -> str | None:
    try:
        return response.json().get("reason")
    except ValueError:
        return None


# --- FCM v1 -------------------------------------------------------------------------------------


def google_session(sandbox: Sandbox) -> requests.Session:
    """A requests session trusting the sandbox CA. trust_env is off because requests lets
    REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE from the environment override `session.verify`, and
    google-auth's transport passes no per-request `verify`."""
    session = requests.Session()
    session.trust_env = False
    session.verify = sandbox.ca
    return session


def fcm_credentials(sandbox: Sandbox, session: requests.Session):
    """google-auth service-account credentials from the sandbox's service-account.json, refreshed
    against its token_uri (google-auth signs aud=https://oauth2.googleapis.com/token whatever the
    token_uri; Google documents that audience as constant)."""
    from google.auth.transport.requests import Request
    from google.oauth2 import service_account

    credentials = service_account.Credentials.from_service_account_file(
        sandbox.service_account_file, scopes=[FCM_SCOPE]
    )
    credentials.refresh(Request(session))
    return credentials


def fcm_post(sandbox: Sandbox, session: requests.Session, token: str, body: bytes) -> requests.Response:
    return session.post(
        sandbox.fcm_send_url,
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json; charset=UTF-8"},
        timeout=20,
    )


def rpc_error(response: requests.Response) -> dict[str, Any]:
    body = response.json()
    assert "error" in body, body
    return body["error"]


def detail(error: dict[str, Any], type_suffix: str) -> dict[str, Any] | None:
    for item in error.get("details", []):
        if item.get("@type", "").endswith(type_suffix):
            return item
    return None


# --- WNS ----------------------------------------------------------------------------------------


def wns_token_request(sandbox: Sandbox, *, scope: str = "notify.windows.com", secret: str | None = None):
    return requests.post(
        sandbox.wns_token_url,
        data={
            "grant_type": "client_credentials",
            "client_id": sandbox.wns_client_id,
            "client_secret": secret if secret is not None else sandbox.wns_client_secret,
            "scope": scope,
        },
        verify=sandbox.ca,
        timeout=20,
    )


def wns_access_token(sandbox: Sandbox, scope: str = "notify.windows.com") -> str:
    r = wns_token_request(sandbox, scope=scope)
    assert r.status_code == 200, f"{r.status_code} {r.text}"
    return r.json()["access_token"]


def headers_by_name(entry: dict[str, Any]) -> dict[str, str]:
    """Inbox headers, names lower-cased (HTTP header names are case-insensitive)."""
    return {h["name"].lower(): h["value"] for h in entry["headers"]}
