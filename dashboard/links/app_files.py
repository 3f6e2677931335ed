"""The app-link files a domain serves at /.well-known/ (the edge's
domainfiles.lua): Apple's apple-app-site-association, which lets an iOS
app open the domain's links, and Android's Digital Asset Links
assetlinks.json, which does the same for an Android app. Each is kept as
JSON and checked against its documented shape, so that what the edge
serves is what the platforms read."""

import json
import re

from django.core.exceptions import ValidationError

# The names the edge serves them under, after /.well-known/.
AASA, ASSETLINKS = "apple-app-site-association", "assetlinks.json"
# Apple reads at most 128 KB of the file; Google's limit is larger.
MAX_BYTES = 128 * 1024

# Errors say "shape", not "invalid": a form's JSON field would put its own
# "Enter a valid JSON." in place of an "invalid" from the model.
_AASA_SECTIONS = {"applinks", "webcredentials", "appclips", "activitycontinuation"}
_APP_ID = re.compile(r"^[A-Z0-9]{10}\.[A-Za-z0-9.\-*]+$")  # a team id, then a bundle id
_PACKAGE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")
_FINGERPRINT = re.compile(r"^([0-9A-F]{2}:){31}[0-9A-F]{2}$")


def _sized(value) -> None:
    if len(json.dumps(value, separators=(",", ":")).encode()) > MAX_BYTES:
        raise ValidationError(f"At most {MAX_BYTES // 1024} KB of JSON.", code="too_large")


def _strings(value, what: str) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValidationError(f"{what} is a list of strings.", code="shape")


def _app_ids(value, what: str) -> None:
    _strings(value, what)
    for app_id in value:
        if not _APP_ID.match(app_id):
            raise ValidationError(f"{app_id!r} in {what} is not an app id (TEAMID.bundle.id).", code="shape")


def _applinks(section) -> None:
    if not isinstance(section, dict):
        raise ValidationError('"applinks" is an object.', code="shape")
    if "apps" in section and section["apps"] != []:
        raise ValidationError('"applinks.apps" is an empty list where it is given.', code="shape")
    details = section.get("details", [])
    if not isinstance(details, list):
        raise ValidationError('"applinks.details" is a list.', code="shape")
    for detail in details:
        if not isinstance(detail, dict) or not ({"appID", "appIDs"} & set(detail)):
            raise ValidationError('Each of "applinks.details" is an object with "appIDs" (or "appID").', code="shape")
        if "appID" in detail:
            _app_ids([detail["appID"]], '"appID"')
        if "appIDs" in detail:
            _app_ids(detail["appIDs"], '"appIDs"')
        if "paths" in detail:
            _strings(detail["paths"], '"paths"')
        components = detail.get("components", [])
        if not isinstance(components, list) or not all(isinstance(item, dict) for item in components):
            raise ValidationError('"components" is a list of objects.', code="shape")


def validate_apple_app_site_association(value) -> None:
    """Apple's documented shape: an object of the sections applinks,
    webcredentials, appclips (and the older activitycontinuation)."""
    if value is None:
        return
    if not isinstance(value, dict) or not value or set(value) - _AASA_SECTIONS:
        raise ValidationError("An object of applinks, webcredentials, appclips or activitycontinuation.", code="shape")
    if "applinks" in value:
        _applinks(value["applinks"])
    for name in ("webcredentials", "appclips", "activitycontinuation"):
        if name in value:
            section = value[name]
            if not isinstance(section, dict) or "apps" not in section:
                raise ValidationError(f'"{name}" is an object with "apps".', code="shape")
            _app_ids(section["apps"], f'"{name}.apps"')
    _sized(value)


def _target(target) -> None:
    if not isinstance(target, dict):
        raise ValidationError('A statement\'s "target" is an object.', code="shape")
    namespace = target.get("namespace")
    if namespace == "android_app":
        if not isinstance(target.get("package_name"), str) or not _PACKAGE.match(target["package_name"]):
            raise ValidationError('An android_app target has a "package_name" (com.example.app).', code="shape")
        fingerprints = target.get("sha256_cert_fingerprints")
        _strings(fingerprints, '"sha256_cert_fingerprints"')
        for fingerprint in fingerprints:
            if not _FINGERPRINT.match(fingerprint):
                raise ValidationError(
                    f"{fingerprint!r} is not a SHA-256 fingerprint (32 upper-case hex pairs, colon-separated).",
                    code="shape",
                )
    elif namespace == "web":
        if not isinstance(target.get("site"), str) or not re.match(r"^https?://[^/]+$", target["site"]):
            raise ValidationError('A web target has a "site" (https://example.com).', code="shape")
    else:
        raise ValidationError('A target\'s "namespace" is "android_app" or "web".', code="shape")


def validate_assetlinks(value) -> None:
    """Digital Asset Links' documented shape: a list of statements, each
    with "relation" (a list of strings) and "target"."""
    if value is None:
        return
    if not isinstance(value, list) or not value:
        raise ValidationError("A list of statements.", code="shape")
    for statement in value:
        if not isinstance(statement, dict) or set(statement) - {"relation", "target"}:
            raise ValidationError('Each statement is an object of "relation" and "target".', code="shape")
        _strings(statement.get("relation"), '"relation"')
        _target(statement.get("target"))
    _sized(value)


def served(value) -> str | None:
    """The file as the edge serves it, or None for none."""
    return None if value is None else json.dumps(value, separators=(",", ":"))
