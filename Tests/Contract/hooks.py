"""schemathesis hooks of scripts/schemathesis.sh (loaded through SCHEMATHESIS_HOOKS).

- An XML deserializer, so that response_schema_conformance also checks the hub API's XML answers
  (`<Error>`, `NotificationOutcome`, `NotificationDetails`, Atom entries and feeds) against the
  document's schemas: elements become objects by local name (namespaces dropped), the elements
  the schemas describe as arrays become arrays, and the fields they describe as numbers become
  numbers. Attributes are left out: the schemas describe none.
- A `multipart/mixed` serializer writing a `$batch` body as the Notification Hubs SDKs do: a
  `notification` part and a `devices` part holding a JSON array (schemathesis' own writes form
  fields, one part per array item).
- Header values kept valid HTTP: a control character (but HTAB) in a header value is replaced
  by `?` before the request is sent. The HTTP/1.1 parser refuses such a request itself (RFC 9110
  5.5: a bare 400, the connection closed) before any route sees it, so it says nothing about the
  API; schemathesis' negative mode still draws them now and then despite
  `generation.exclude-header-characters`.
- Two checks of what a schema cannot say:
  `error_status_matches`: an error body names the answer's own status (`Error.status`, the hub's
  `<Error><Code>`);
  `dry_run_answers_dry_run`: `dryRun=true` on `POST /api/notifications` answers 200 with a
  `DryRun` (`"dryRun": true`), never a send's result.
"""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, urlsplit

import schemathesis
from schemathesis.transport.requests import REQUESTS_TRANSPORT

# Containers whose children are items of an array in the schemas (`xml.wrapped`): these, and every
# platform's `…OutcomeCounts` (empty for a platform no target was of); and the one repeated element
# of a feed.
ARRAYS = {"Results", "Diagnostics", "WnsHeaders"}
REPEATED = {"entry"}
INTEGERS = {"Code", "Success", "Failure", "Count", "StatusCode", "Attempts"}
NUMBERS = {"LatencyMs"}


def local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def convert(element: ET.Element):
    name = local(element.tag)
    children = list(element)
    if name in ARRAYS or name.endswith("OutcomeCounts"):
        return [convert(child) for child in children]
    if not children:
        text = element.text or ""
        if name in INTEGERS:
            try:
                return int(text)
            except ValueError:
                return text  # left for the schema to refuse
        if name in NUMBERS:
            try:
                return float(text)
            except ValueError:
                return text
        return text
    value: dict = {}
    for child in children:
        key = local(child.tag)
        converted = convert(child)
        if key in REPEATED:
            value.setdefault(key, []).append(converted)
        elif key in value:
            raise ValueError(f"<{name}> holds <{key}> more than once")
        else:
            value[key] = converted
    return value


@schemathesis.deserializer("application/xml", "application/atom+xml", "text/xml")
def deserialize_xml(ctx: schemathesis.DeserializationContext, response: schemathesis.Response):
    if not response.content:
        return None
    root = ET.fromstring(response.content)
    # The document's root element is the schema itself (its `xml.name`), as an XML body is.
    return convert(root)


@schemathesis.check
def error_status_matches(ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case):
    if response.status_code < 400 or not response.content:
        return None
    content_type = (response.headers.get("content-type") or [""])[0].lower()
    if "json" in content_type:
        try:
            body = json.loads(response.content)
        except ValueError:
            return None
        if isinstance(body, dict) and "status" in body and "error" in body and body["status"] != response.status_code:
            raise AssertionError(f"the error body says status {body['status']}, the answer is {response.status_code}")
    elif "xml" in content_type:
        try:
            root = ET.fromstring(response.content)
        except ET.ParseError:
            return None
        if local(root.tag) == "Error":
            code = root.findtext("Code")
            if code != str(response.status_code):
                raise AssertionError(f"<Error><Code> is {code}, the answer is {response.status_code}")
    return None


@schemathesis.check
def dry_run_answers_dry_run(ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case):
    # The request as sent: the coverage phase also sends other methods to an operation's path.
    if response.request.method.upper() != "POST" or case.operation.path != "/api/notifications":
        return None
    query = case.query or {}
    value = query.get("dryRun")
    if value is None:
        # The case's query may have been serialized already; read the request's.
        value = (parse_qs(urlsplit(response.request.url).query).get("dryRun") or [None])[0]
    if str(value).lower() not in ("true", "1"):
        return None
    if response.status_code == 200:
        body = json.loads(response.content)
        if not (isinstance(body, dict) and body.get("dryRun") is True):
            raise AssertionError("dryRun=true answered 200 without a DryRun body: the send was made")
    elif response.status_code in (202, 404, 503):
        raise AssertionError(f"dryRun=true answered {response.status_code}, as a send does: nothing may be sent or stored")
    return None


# On the requests transport itself: the public `schemathesis.serializer` returns a body only, and a
# multipart body needs its Content-Type (with the boundary) beside it.
@REQUESTS_TRANSPORT.serializer("multipart/mixed")
def serialize_batch(ctx: schemathesis.SerializationContext, value):
    # Derived from the value, so that a seed sends the same bytes again.
    boundary = "contract-" + hashlib.sha256(repr(value).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    if isinstance(value, dict):
        notification = value.get("notification", "")
        devices = value.get("devices", [])
        parts = [
            ("notification", "application/json", notification if isinstance(notification, str) else json.dumps(notification)),
            ("devices", "application/json", json.dumps(devices)),
        ]
    else:
        # A negative case that is no object: one part of whatever it is.
        parts = [("notification", "application/octet-stream", value if isinstance(value, str) else json.dumps(value))]
    body = "".join(
        f"--{boundary}\r\nContent-Type: {content_type}\r\nContent-Disposition: inline; name=\"{name}\"\r\n\r\n{text}\r\n"
        for name, content_type, text in parts
    )
    body += f"--{boundary}--\r\n"
    return {"data": body.encode("utf-8", "surrogatepass"), "headers": {"Content-Type": f"multipart/mixed; boundary = \"{boundary}\""}}


INVALID_IN_HEADERS = {chr(code) for code in [*range(0, 9), *range(10, 32), 127]}


@schemathesis.hook
def before_call(context, case: schemathesis.Case, kwargs) -> None:
    headers = case.headers or {}
    for name, value in list(headers.items()):
        if isinstance(value, str) and any(character in INVALID_IN_HEADERS for character in value):
            headers[name] = "".join("?" if character in INVALID_IN_HEADERS else character for character in value)
