"""What yourls-api.php answers, as YOURLS 1.10 writes it (its
yourls_api_output): an answer is an ordered mapping, PHP's array, written
in the asked `format`:

- `json`: PHP's json_encode, compact, non-ASCII and '/' escaped;
- `jsonp`: the same inside `callback(...)`; a callback other than
  [A-Za-z0-9_$.] (or one spelling a \\uXXXX escape) is a 400;
- `xml`: the answer under <root>, a key an element;
- `simple`, and any other format: the answer's `simple` text alone.

`simple` never appears in the other formats. The HTTP status is the
answer's `statusCode`, else its `errorCode`, else 200."""

import json
import re
from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse

SIMPLE = "simple"
CONTENT_TYPES = {
    "jsonp": "application/javascript",
    "json": "application/json",
    "xml": "application/xml",
}
_CALLBACK = re.compile(r"[a-zA-Z0-9_$.]+")
_UNICODE_ESCAPE = re.compile(r"\\?u[0-9a-fA-F]{4}")
# What the XML writer YOURLS uses (spatie/array-to-xml) drops from text.
_XML_DROPPED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def php_json(value: Any) -> str:
    # '/' occurs only inside strings, so escaping it in the whole text is
    # escaping it in each string.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("/", "\\/")


def _php_text(value: Any) -> str:
    if value is None or value is False:
        return ""
    if value is True:
        return "1"
    return str(value)


def _xml_text(value: Any) -> str:
    text = _XML_DROPPED.sub("", _php_text(value))
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def _xml_element(name: str, value: Any, parts: list[str]) -> None:
    if isinstance(value, Mapping):
        if not value:
            parts.append(f"<{name}/>")
            return
        parts.append(f"<{name}>")
        for key, item in value.items():
            _xml_element(key, item, parts)
        parts.append(f"</{name}>")
        return
    text = _xml_text(value)
    parts.append(f"<{name}>{text}</{name}>" if text else f"<{name}/>")


def php_xml(answer: Mapping[str, Any]) -> str:
    parts = ['<?xml version="1.0" encoding="UTF-8"?>\n']
    _xml_element("root", answer, parts)
    parts.append("\n")
    return "".join(parts)


def valid_callback(callback: str) -> bool:
    return not _UNICODE_ESCAPE.search(callback) and bool(_CALLBACK.fullmatch(callback))


def status_of(answer: Mapping[str, Any]) -> int:
    code = answer.get("statusCode")
    if code is None:
        code = answer.get("errorCode")
    return int(code) if code not in (None, "") else 200


def respond(format_: str, answer: Mapping[str, Any], *, headers: Mapping[str, str] | None = None) -> HttpResponse:
    answer = dict(answer)
    simple = answer.pop(SIMPLE, None)
    status = status_of(answer)
    if format_ == "jsonp":
        callback = answer.get("callback")
        if callback is not None and not valid_callback(callback):
            status = 400
            body = php_json({"errorCode": "400", "error": "Invalid callback parameter"})
        else:
            body = f"{callback or ''}({php_json(answer)})"
    elif format_ == "json":
        body = php_json(answer)
    elif format_ == "xml":
        body = php_xml(answer)
    else:
        format_, body = SIMPLE, _php_text(simple)
    content_type = CONTENT_TYPES.get(format_, "text/plain")
    response = HttpResponse(body, status=status, content_type=f"{content_type}; charset=utf-8")
    for name, value in (headers or {}).items():
        response[name] = value
    return response
