"""OpenAPI post-processing: every operation documents the errors it can answer."""

# Operations reports and the moderation queue, for staff and superusers only
# (api/permissions.py SeesOperations).
STAFF_PATHS = ("/api/v1/accounting", "/api/v1/orphan-visits", "/api/v1/reports")

ERROR_SCHEMA = {
    "type": "object",
    "description": "`detail` for request-wide errors, or a list of messages per field.",
    "additionalProperties": True,
    "example": {"detail": "Invalid, expired or revoked token."},
}

_MESSAGES = {
    "400": "Invalid input: a message per field.",
    "401": "No credentials, or an invalid, expired or revoked token.",
    "403": "Your role in the team does not allow it (a viewer writing, say), a read-only token tried to write, "
    "a token tried to manage tokens or make a team (that takes a signed-in session), "
    "or someone who is not staff asked for an operations report or the moderation queue.",
    "404": "No such object among yours.",
    "409": "The slug is taken, the person is a member already, the team would be left without an admin, or "
    "the team to delete is a personal team or still has links.",
    "413": "The body is over 2.5 MB.",
    "429": "Too many requests; see Retry-After.",
    "503": "The database does not answer just now (a restart, a failover); send the request again after "
    "Retry-After: a change is made whole or not at all.",
}


def _error(code: str) -> dict:
    return {
        "description": _MESSAGES[code],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def add_error_responses(result, generator, request, public):
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            codes = ["401", "429", "404", "503"]
            if method in ("post", "patch", "put", "delete") or path.startswith(
                ("/api/v1/tokens", "/api/v1/audit", *STAFF_PATHS)
            ):
                codes.append("403")
            if operation.get("parameters") or operation.get("requestBody"):
                codes.append("400")
            if operation.get("requestBody"):
                codes.append("413")
            if path.startswith("/api/v1/links") and method in ("post", "patch") and not path.endswith("/bulk"):
                codes.append("409")
            if "/members" in path and method in ("post", "patch", "delete"):
                codes.append("409")
            if path == "/api/v1/teams/{id}" and method == "delete":
                codes.append("409")
            responses = operation.setdefault("responses", {})
            for code in codes:
                responses.setdefault(code, _error(code))
            # The HTTP server's own answer, before the API sees the request.
            responses.setdefault(
                "414",
                {
                    "description": "The request line is longer than the server takes (4,094 "
                    "bytes): too many or too long query parameters."
                },
            )
    return result
