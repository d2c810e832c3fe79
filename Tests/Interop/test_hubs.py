"""The gateway's Notification Hubs REST API (`/{hub}/…` over HTTPS) driven by Notification Hubs
client libraries from PyPI, unchanged, given only a connection string:

- notificationhubs-rest-python (Microsoft's sample client, published on PyPI): native, template,
  direct, scheduled and debug (test) sends; it derives https://host:port/ from the connection
  string's sb://host:port/, signs the hub URL and raises unless the answer is 201 Created.
- azure-notification-hub-unofficial (a port of the @azure/notification-hubs JavaScript SDK):
  installations (PUT, GET, JSON Patch, DELETE), registrations (list, get, delete), test sends
  and telemetry; it signs the namespace URL.

One `pushgate sandbox` writes the gateway configuration (with HTTPS from the sandbox's CA and
Notification Hubs' two default rules); one `pushgate serve` runs it. Neither library can be told
a CA file, so REQUESTS_CA_BUNDLE and SSL_CERT_FILE name the sandbox CA for the test session.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import socket
import subprocess
import time
import uuid
import xml.etree.ElementTree as ET
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from azure_notification_hub import NotificationHubsClient
from notificationhubs_rest_python.NotificationHub import AzureNotificationHub

from support import Sandbox, pushgate_binary, start_sandbox

NH = "{http://schemas.microsoft.com/netservices/2010/10/servicebus/connect}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class HubGateway:
    sandbox: Sandbox
    process: subprocess.Popen
    http: str
    full: str  # DefaultFullSharedAccessSignature's connection string
    listen: str  # DefaultListenSharedAccessSignature's

    def rest(self, connection: str | None = None, debug: int = 0) -> AzureNotificationHub:
        return AzureNotificationHub(connection or self.full, "default", debug)

    def js(self, connection: str | None = None) -> NotificationHubsClient:
        return NotificationHubsClient(connection or self.full, "default")


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> HubGateway:
    directory = tmp_path_factory.mktemp("hub")
    http_port, https_port = free_port(), free_port()
    sandbox = start_sandbox(directory, extra_args=["--gateway-port", str(http_port), "--gateway-tls-port", str(https_port)])
    binary = str(pushgate_binary())
    config = str(directory / "config.json")
    log = open(directory / "gateway.log", "wb")
    process = subprocess.Popen(
        [binary, "serve", "--config", config], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True, cwd=directory)
    http = f"http://127.0.0.1:{http_port}"
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, (directory / "gateway.log").read_text()
        try:
            if requests.get(f"{http}/healthz", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            pass
        assert time.monotonic() < deadline, (directory / "gateway.log").read_text()
        time.sleep(0.1)

    def connection(rule: str) -> str:
        return subprocess.run(
            [binary, "hubs", "connection-string", "default", "--rule", rule, "--config", config],
            check=True, capture_output=True, text=True).stdout.strip()

    saved = {name: os.environ.get(name) for name in ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")}
    os.environ["REQUESTS_CA_BUNDLE"] = sandbox.ca
    os.environ["SSL_CERT_FILE"] = sandbox.ca
    try:
        yield HubGateway(
            sandbox, process, http, connection("DefaultFullSharedAccessSignature"), connection("DefaultListenSharedAccessSignature"))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        process.terminate()
        process.wait(timeout=30)
        log.close()
        sandbox.stop()


def wait_for_inbox(sandbox: Sandbox, device_id: str, count: int, seconds: float = 20) -> list[dict]:
    deadline = time.monotonic() + seconds
    while True:
        inbox = sandbox.inbox(device_id)
        if len(inbox) >= count or time.monotonic() > deadline:
            return inbox
        time.sleep(0.1)


def install(hub: HubGateway, device: dict, tags: list[str], templates: dict | None = None) -> str:
    """Registers a sandbox device as an installation through the JavaScript SDK's port."""
    installation_id = str(uuid.uuid4())
    platform = {"apns": "apns", "wns": "wns", "gcm": "gcm"}[device["platform"]]
    body = {"installationId": installation_id, "platform": platform, "pushChannel": device["handle"], "tags": tags}
    if templates:
        body["templates"] = templates
    with hub.js() as client:
        assert client.create_or_update_installation(body) == {}
    return installation_id


def alerts(inbox: list[dict]) -> list[str]:
    return [str(item.get("payload", item)) for item in inbox]


def test_connection_string_is_the_one_notification_hubs_prints(hub):
    assert hub.full.startswith("Endpoint=sb://127.0.0.1:")
    assert ";SharedAccessKeyName=DefaultFullSharedAccessSignature;SharedAccessKey=" in hub.full
    # notificationhubs-rest-python needs exactly three parts and an endpoint ending in '/'.
    assert len(hub.full.split(";")) == 3 and hub.full.split(";")[0].endswith("/")


def test_native_sends_to_a_tag_and_to_a_tag_expression(hub):
    sports = hub.sandbox.create_device("apns")
    news_en = hub.sandbox.create_device("apns")
    news_fr = hub.sandbox.create_device("apns")
    install(hub, sports, ["sports"])
    install(hub, news_en, ["news", "lang:en"])
    install(hub, news_fr, ["news", "lang:fr"])
    rest = hub.rest()
    status, _ = rest.send_apple_notification(False, {"aps": {"alert": "goal"}}, tags="sports")
    assert status == 201
    status, _ = rest.send_apple_notification(False, {"aps": {"alert": "headline"}}, tags="news && lang:en")
    assert status == 201
    assert "goal" in str(wait_for_inbox(hub.sandbox, sports["id"], 1))
    got = wait_for_inbox(hub.sandbox, news_en["id"], 1)
    assert len(got) == 1 and "headline" in str(got)
    time.sleep(1)
    assert hub.sandbox.inbox(news_fr["id"]) == []
    assert len(hub.sandbox.inbox(sports["id"])) == 1


def test_a_windows_toast_reaches_a_wns_installation(hub):
    device = hub.sandbox.create_device("wns")
    install(hub, device, ["desk"])
    toast = '<toast><visual><binding template="ToastText01"><text id="1">from python</text></binding></visual></toast>'
    status, headers = hub.rest().send_windows_notification(False, toast, tags="desk")
    assert status == 201 and headers["X-WNS-Type"] == "wns/toast"
    assert "from python" in str(wait_for_inbox(hub.sandbox, device["id"], 1))


def test_a_template_send_renders_each_installations_template(hub):
    device = hub.sandbox.create_device("apns")
    install(hub, device, ["tpl"], templates={"alert": {"body": '{"aps":{"alert":"{$(greeting) + \', \' + $(name)}"}}', "tags": ["t-alert"]}})
    status, _ = hub.rest().send_template_notification({"greeting": "Hello", "name": "Ada"}, tags="tpl")
    assert status == 201
    assert "Hello, Ada" in str(wait_for_inbox(hub.sandbox, device["id"], 1))
    # The template's own tag reaches it too.
    status, _ = hub.rest().send_template_notification({"greeting": "Hi", "name": "Bob"}, tags="t-alert")
    assert status == 201
    assert "Hi, Bob" in str(wait_for_inbox(hub.sandbox, device["id"], 2))


def test_a_direct_send_needs_no_registration(hub):
    device = hub.sandbox.create_device("apns")
    status, _ = hub.rest().send_apple_notification(True, {"aps": {"alert": "direct"}}, device_handle=device["handle"])
    assert status == 201
    assert "direct" in str(wait_for_inbox(hub.sandbox, device["id"], 1))


def test_a_scheduled_send_is_delivered_at_its_time(hub):
    device = hub.sandbox.create_device("apns")
    install(hub, device, ["later"])
    at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0) + dt.timedelta(seconds=3)
    # The client writes the time as "yyyy-MM-dd'T'HH:mm:ss", quotes included.
    status, headers = hub.rest().send_apple_notification(False, {"aps": {"alert": "scheduled"}}, tags="later", scheduled_time=at)
    assert status == 201 and "'T'" in headers["ServiceBusNotification-ScheduleTime"]
    time.sleep(1)
    assert hub.sandbox.inbox(device["id"]) == []
    assert "scheduled" in str(wait_for_inbox(hub.sandbox, device["id"], 1, seconds=30))


def test_a_debug_send_answers_the_notification_outcome_xml(hub):
    reached = hub.sandbox.create_device("apns")
    gone = hub.sandbox.create_device("apns")
    install(hub, reached, ["debug"])
    install(hub, gone, ["debug"])
    hub.sandbox.uninstall(gone["id"])
    out = io.StringIO()
    with redirect_stdout(out):
        status, _ = hub.rest(debug=1).send_apple_notification(False, {"aps": {"alert": "debug"}}, tags="debug")
    assert status == 201, out.getvalue()
    printed = out.getvalue()
    outcome = ET.fromstring(printed[printed.index("<NotificationOutcome"):printed.index("</NotificationOutcome>") + 22])
    assert outcome.tag == f"{NH}NotificationOutcome"
    assert outcome.find(f"{NH}Success").text == "1"
    assert outcome.find(f"{NH}Failure").text == "1"
    results = outcome.findall(f"{NH}Results/{NH}RegistrationResult")
    assert len(results) == 2
    assert {r.find(f"{NH}ApplicationPlatform").text for r in results} == {"apple"}
    assert sorted(r.find(f"{NH}Outcome").text for r in results) == ["ExpiredChannel", "Success"]
    assert "debug" in str(wait_for_inbox(hub.sandbox, reached["id"], 1))
    # The JavaScript SDK's test send (ServiceBusNotification-TestSend) answers the same XML.
    with hub.js() as client:
        answer = client.send_notification(
            {"platform": "apple", "body": '{"aps":{"alert":"js debug"}}', "contentType": "application/json;charset=utf-8"},
            tag_expression="debug", test_send=True)
    parsed = ET.fromstring(answer["_raw_xml"])
    assert parsed.find(f"{NH}Success").text == "1"


def test_installations_are_read_patched_listed_and_deleted(hub):
    device = hub.sandbox.create_device("apns")
    installation_id = install(hub, device, ["first"])
    with hub.js() as client:
        got = client.get_installation(installation_id)
        assert got["installationId"] == installation_id and got["pushChannel"] == device["handle"]
        assert got["tags"] == ["first"]
        client.update_installation(installation_id, [{"op": "add", "path": "/tags", "value": "second"}])
        assert sorted(client.get_installation(installation_id)["tags"]) == ["first", "second"]
        # Its registration shows in the Atom feed with its tags, and the entry parses.
        listed = client.list_registrations(top=100)
        mine = [r for r in listed if r.get("DeviceToken") == device["handle"]]
        assert len(mine) == 1, listed
        assert {"first", "second"} <= set(mine[0]["Tags"])
        entry = client.get_registration(mine[0]["RegistrationId"])
        assert entry["RegistrationId"] == mine[0]["RegistrationId"]
        assert entry["etag"] == f'W/"{entry["ETag"]}"' and entry["ETag"].isdigit()
    status, _ = hub.rest().send_apple_notification(False, {"aps": {"alert": "patched"}}, tags="second")
    assert status == 201
    assert "patched" in str(wait_for_inbox(hub.sandbox, device["id"], 1))
    with hub.js() as client:
        client.delete_installation(installation_id)
        with pytest.raises(Exception, match="404"):
            client.get_installation(installation_id)


def test_a_wrong_key_or_a_listen_key_is_refused(hub):
    key = hub.full.split("SharedAccessKey=")[1]
    forged = hub.full.replace(key, "A" * len(key))
    with pytest.raises(Exception, match="401"):
        hub.rest(forged).send_apple_notification(False, {"aps": {"alert": "x"}}, tags="x")
    # A device's Listen key registers but may not send.
    with pytest.raises(Exception, match="401"):
        hub.rest(hub.listen).send_apple_notification(False, {"aps": {"alert": "x"}}, tags="x")
    device = hub.sandbox.create_device("apns")
    with hub.js(hub.listen) as client:
        assert client.create_or_update_installation(
            {"installationId": "listen-" + device["id"], "platform": "apns", "pushChannel": device["handle"], "tags": ["own"]}) == {}
        # ... and may not claim a user's username: tag.
        with pytest.raises(Exception, match="403"):
            client.create_or_update_installation(
                {"installationId": "hijack", "platform": "apns", "pushChannel": device["handle"], "tags": ["username:alice"]})
