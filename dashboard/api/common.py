"""What the API's resources share: the JSON 404 of any other path, and a
team named in a query or a body (times as the API writes them: times.py)."""

import copy

from django.conf import settings
from django.urls import resolve
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.decorators import api_view, permission_classes
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import AllowAny

from clicks.calendar import time_zones, zone_named
from teams import access

from .fields import StrictCharField

NO_SUCH_TEAM = "No team with this id among yours."


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"])
@permission_classes([AllowAny])
def not_found(request, *args, **kwargs):
    raise NotFound()


@csrf_exempt  # the API's views check what they need themselves (DRF's session authentication)
def slash_optional(request, *args, **kwargs):
    """What no route of the API matched: with a trailing slash, the answer
    of the same path without it (the documented one); else a JSON 404."""
    path = request.path_info
    if path.endswith("/") and len(path) > 1:
        match = resolve(path[:-1])
        if match.func is not slash_optional:
            return match.func(request, *match.args, **match.kwargs)
    return not_found(request)


def readable_team(request, team_id: int | None) -> int | None:
    """A team id from a query parameter: a team the request may read
    (teams/access.py), or a 404 as for a missing one."""
    if team_id is not None and access.role_in(request.user, team_id) is None:
        raise NotFound(NO_SUCH_TEAM)
    return team_id


def team_from_body(request, data: dict) -> dict:
    """The `team` of a link's body as the services take it: a Team the
    request may read, or a 400 on the field. Whether the role allows the
    change there is the service's to check (a 403)."""
    if "team_id" not in data:
        return data
    data = dict(data)
    team = access.teams_of(request.user).filter(pk=data.pop("team_id")).first()
    if team is None:
        raise ValidationError({"team": [NO_SUCH_TEAM]})
    return {**data, "team": team}


class QueryParameters(serializers.Serializer):
    """Query parameters, which are strings: one given empty is a 400 unless
    the parameter may be blank, as its schema says (leave it out instead)."""

    def to_internal_value(self, data):
        empty = [
            name
            for name, value in data.items()
            if value == "" and name in self.fields and not getattr(self.fields[name], "allow_blank", False)
        ]
        if empty:
            raise serializers.ValidationError({name: ["Leave the parameter out rather than empty."] for name in empty})
        return super().to_internal_value(data)


class TeamQuerySerializer(QueryParameters):
    team = serializers.IntegerField(
        required=False, min_value=1, help_text="Only in this team (its id); a team not among yours is a 404."
    )


# A domain's host in a query: as /api/v1/domains lists it (IDN as punycode), any case.
HOST_PATTERN = r"^[A-Za-z0-9._-]+$"


class TimeRangeSerializer(QueryParameters):
    """`from` and `to` query parameters (Python keywords, hence get_fields).
    Times come out in UTC (USE_TZ), whatever offset they were given with."""

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField(required=False, help_text="From this time (inclusive).")
        fields["to"] = serializers.DateTimeField(required=False, help_text="Up to this time (exclusive).")
        return fields

    def validate(self, attrs):
        if attrs.get("from") and attrs.get("to") and attrs["from"] >= attrs["to"]:
            raise serializers.ValidationError({"to": "Must be after 'from'."})
        return attrs


@extend_schema_field({"type": "string", "enum": ["UTC", *sorted(time_zones() - {"UTC"})]})
class TimeZoneField(serializers.CharField):
    """An IANA time zone name; its value is the zone."""

    default_error_messages = {"invalid": "Not a time zone name: use an IANA name such as Europe/Berlin."}

    def to_internal_value(self, data):
        try:
            return zone_named(super().to_internal_value(data))
        except ValueError:
            self.fail("invalid")


class FieldsOnceMixin:
    """A ModelSerializer works its fields out of the model for every instance,
    though they depend only on the class: work them out once per class, and
    give each instance its own copy (fields are bound to their serializer).
    A field without fields of its own is copied shallowly: binding sets only
    attributes of the copy, and a deep copy (DRF builds the field again from
    its arguments) was a tenth of a link's creation."""

    def get_fields(self):
        cls = type(self)
        if "_fields_once" not in cls.__dict__:
            cls._fields_once = [(name, field, _has_fields(field)) for name, field in super().get_fields().items()]
        return {name: copy.deepcopy(field) if deep else copy.copy(field) for name, field, deep in cls._fields_once}


def _has_fields(field: serializers.Field) -> bool:
    return isinstance(field, serializers.BaseSerializer) or hasattr(field, "child") or hasattr(field, "fields")


TARGET_URL_SCHEMA = {
    "type": "string",
    "format": "uri",
    "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]",
    "maxLength": settings.LINK_URL_MAX_LENGTH,
}


@extend_schema_field(TARGET_URL_SCHEMA)
class TargetURLField(StrictCharField):
    """A link's target; links.validation.normalise_target has the rules."""
