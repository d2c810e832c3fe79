"""Huawei Push Kit (server API v1) driven by hpa, Huawei's Python push admin SDK as packaged on PyPI,
and by requests in Huawei's documented shapes where hpa hides the answer. Expected answers are
Huawei's (the push-sendapi reference, its result codes, the account server's OAuth errors).

hpa is pointed at the sandbox with its own `token_server` and `push_open_url` arguments. It hard-codes
`verify=False` for TLS, so it does not read the sandbox's CA; the requests calls here do. It raises
`ApiCallError` for any HTTP status but 200 without the body, so refusals are read with requests.
(python-huawei-push-admin 1.0.0 imports `src.push_admin` and fails to import once installed; pyhcm
fixes its URLs in its constructor and fetches a token for every send.)
"""

from __future__ import annotations

import json
import warnings
from urllib.parse import urlencode

import pytest
import requests

with warnings.catch_warnings():
    # hpa compares status codes with `is not 200`.
    warnings.simplefilter("ignore", SyntaxWarning)
    import hpa
    from hpa import messaging

# hpa never verifies the server's certificate.
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")


def app_id(sandbox) -> str:
    return sandbox.info["hms"]["appId"]


def app_secret(sandbox) -> str:
    with open(sandbox.info["files"]["hmsAppSecret"]) as file:
        return file.read().strip()


def send_url(sandbox) -> str:
    return f"{sandbox.info['endpoints']['hms']}/v1/{app_id(sandbox)}/messages:send"


def hpa_app(sandbox) -> str:
    """Registers the sandbox's app with hpa (its registry is per app id) and returns the id."""
    hpa.initialize_app(
        app_id(sandbox),
        app_secret(sandbox),
        token_server=sandbox.info["endpoints"]["hmsToken"],
        push_open_url=sandbox.info["endpoints"]["hms"],
    )
    return app_id(sandbox)


def token_request(sandbox, client_id: str, secret: str) -> requests.Response:
    return requests.post(
        sandbox.info["endpoints"]["hmsToken"],
        data=urlencode({"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        verify=sandbox.ca,
        timeout=10,
    )


def access_token(sandbox) -> str:
    response = token_request(sandbox, app_id(sandbox), app_secret(sandbox))
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


def post_send(sandbox, token: str, message: dict, validate_only: bool = False) -> requests.Response:
    return requests.post(
        send_url(sandbox),
        data=json.dumps({"validate_only": validate_only, "message": message}),
        headers={"Content-Type": "application/json;charset=utf-8", "Authorization": f"Bearer {token}"},
        verify=sandbox.ca,
        timeout=30,
    )


def notification_to(tokens: list[str]) -> messaging.Message:
    return messaging.Message(
        notification=messaging.Notification(title="Grüße", body="From bob"),
        android=messaging.AndroidConfig(urgency="NORMAL", ttl="86400s", collapse_key=-1),
        token=tokens,
    )


def test_hms_hpa_sends_a_notification_to_a_device(sandbox):
    app = hpa_app(sandbox)
    device = sandbox.create_device("hms")
    response = messaging.send_message(notification_to([device["handle"]]), app_id=app)
    assert response.code == "80000000", response.reason
    assert response.requestId

    [entry] = sandbox.inbox(device["id"])
    assert entry["messageID"] == response.requestId
    delivered = json.loads(entry["payload"])
    # The message as hpa serialised it, less its token list.
    assert "token" not in delivered
    assert delivered["notification"] == {"title": "Grüße", "body": "From bob"}
    assert delivered["android"]["urgency"] == "NORMAL" and delivered["android"]["ttl"] == "86400s"


def test_hms_hpa_data_message_keeps_data_a_string(sandbox):
    app = hpa_app(sandbox)
    device = sandbox.create_device("hms")
    data = json.dumps({"orderId": "17"})
    response = messaging.send_message(messaging.Message(data=data, token=[device["handle"]]), app_id=app)
    assert response.code == "80000000", response.reason
    [entry] = sandbox.inbox(device["id"])
    assert json.loads(entry["payload"])["data"] == data


def test_hms_hpa_partial_batch_names_the_illegal_token(sandbox):
    app = hpa_app(sandbox)
    first, gone, third = (sandbox.create_device("hms") for _ in range(3))
    sandbox.uninstall(gone["id"])
    response = messaging.send_message(notification_to([first["handle"], gone["handle"], third["handle"]]), app_id=app)
    assert response.code == "80100000", response.reason
    result = json.loads(response.reason)
    assert result["success"] == 2 and result["failure"] == 1
    assert result["illegal_tokens"] == [gone["handle"]]
    assert len(sandbox.inbox(first["id"])) == 1 and len(sandbox.inbox(third["id"])) == 1
    assert sandbox.inbox(gone["id"]) == []


def test_hms_hpa_validate_only_delivers_nothing(sandbox):
    app = hpa_app(sandbox)
    device = sandbox.create_device("hms")
    response = messaging.send_message(notification_to([device["handle"]]), validate_only=True, app_id=app)
    assert response.code == "80000000", response.reason
    assert sandbox.inbox(device["id"]) == []


@pytest.mark.parametrize(
    ("client_id", "secret", "sub_error"),
    [("own", "wrong-secret", 12304), ("not-an-app-id", "own", 20002), ("999999999999", "own", 20003)],
)
def test_hms_oauth_errors(sandbox, client_id, secret, sub_error):
    client_id = app_id(sandbox) if client_id == "own" else client_id
    secret = app_secret(sandbox) if secret == "own" else secret
    response = token_request(sandbox, client_id, secret)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == 1101 and body["sub_error"] == sub_error, body
    assert body["error_description"]


def test_hms_hpa_wrong_secret_raises(sandbox):
    """hpa reads no OAuth error body: a refused secret is an ApiCallError naming the status."""
    app = hpa._app.App(
        app_id(sandbox),
        "wrong-secret",
        token_server=sandbox.info["endpoints"]["hmsToken"],
        push_open_url=sandbox.info["endpoints"]["hms"],
    )
    with pytest.raises(hpa._app.ApiCallError, match="400"):
        app.send(notification_to(["IQAAAACy-anything"]), False)


def test_hms_all_tokens_invalid(sandbox):
    gone = sandbox.create_device("hms")
    sandbox.expire(gone["id"])
    response = post_send(sandbox, access_token(sandbox), {"token": [gone["handle"], "IQAAAACy-never-issued"], "data": "x"})
    body = response.json()
    assert body["code"] == "80300007", body
    assert body["requestId"]


def test_hms_more_than_a_thousand_tokens(sandbox):
    tokens = [f"IQAAAACy{i:0120d}" for i in range(1001)]
    body = post_send(sandbox, access_token(sandbox), {"token": tokens, "data": "x"}).json()
    assert body["code"] == "80300010", body


def test_hms_message_too_large(sandbox):
    device = sandbox.create_device("hms")
    body = post_send(sandbox, access_token(sandbox), {"token": [device["handle"]], "data": "x" * 4100}).json()
    assert body["code"] == "80300008", body
    assert sandbox.inbox(device["id"]) == []


def test_hms_revoked_access_token_is_expired(own_sandbox):
    sandbox = own_sandbox
    device = sandbox.create_device("hms")
    token = access_token(sandbox)
    assert post_send(sandbox, token, {"token": [device["handle"]], "data": "x"}).json()["code"] == "80000000"
    sandbox.revoke_tokens()
    response = post_send(sandbox, token, {"token": [device["handle"]], "data": "x"})
    assert response.status_code == 401
    assert response.json()["code"] == "80200003", response.text
    missing = requests.post(send_url(sandbox), data="{}", verify=sandbox.ca, timeout=10)
    assert missing.json()["code"] == "80200001", missing.text


def test_hms_injected_internal_error_then_success(sandbox):
    device = sandbox.create_device("hms")
    fault = {
        "service": "hms",
        "handle": device["handle"],
        "count": 2,
        "action": {"respond": {"status": 500, "reason": "81000001"}},
    }
    assert requests.post(f"{sandbox.control}/faults", json=fault, timeout=10).status_code == 201
    response = post_send(sandbox, access_token(sandbox), {"token": [device["handle"]], "data": "x"})
    assert response.status_code == 500
    assert response.json()["code"] == "81000001", response.text
    # hpa raises on the 500; its retry (a new call) goes through.
    app = hpa_app(sandbox)
    with pytest.raises(messaging.ApiCallError, match="500"):
        messaging.send_message(notification_to([device["handle"]]), app_id=app)
    assert sandbox.inbox(device["id"]) == []
    assert messaging.send_message(notification_to([device["handle"]]), app_id=app).code == "80000000"
    assert len(sandbox.inbox(device["id"])) == 1
