"""/api/v1/campaigns: the clicks of a team's links (or every link the
request reads) by the UTM campaign and source of the target that served
them (clicks/campaigns.py), over a range."""

from datetime import UTC, datetime, timedelta

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.response import Response

from clicks.campaigns import campaign_clicks, whole_hours
from links.selectors import links_visible_to

from .common import QueryParameters, readable_team
from .times import iso

DEFAULT_DAYS = 30
LONGEST = timedelta(days=731)


class CampaignQuerySerializer(QueryParameters):
    team = serializers.IntegerField(
        required=False, min_value=1, help_text="Only this team's links (its id); a team not among yours is a 404."
    )
    start = serializers.DateTimeField(required=False, help_text="From (ISO 8601); default 30 days before `to`.")
    end = serializers.DateTimeField(required=False, help_text="Until (ISO 8601), not included; default now.")
    include_bots = serializers.BooleanField(required=False, default=False)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"], fields["to"] = fields.pop("start"), fields.pop("end")
        return fields

    def validate(self, data):
        end = data.get("to") or datetime.now(UTC)
        start = data.get("from") or end - timedelta(days=DEFAULT_DAYS)
        if start >= end:
            raise serializers.ValidationError({"from": ["Must be before `to`."]})
        if end - start > LONGEST:
            raise serializers.ValidationError({"from": ["The range may be two years at most."]})
        return {**data, "from": start, "to": end}


class CampaignRowSerializer(serializers.Serializer):
    utm_campaign = serializers.CharField(help_text="The target's utm_campaign; empty: none.")
    utm_source = serializers.CharField(help_text="The target's utm_source; empty: none.")
    links = serializers.IntegerField(help_text="The links with clicks under it.")
    clicks = serializers.IntegerField()


class CampaignsSerializer(serializers.Serializer):
    team = serializers.IntegerField(allow_null=True)
    include_bots = serializers.BooleanField()
    clicks = serializers.IntegerField()
    rows = CampaignRowSerializer(many=True, help_text="Most clicks first.")

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.DateTimeField()
        fields["to"] = serializers.DateTimeField()
        return fields


@extend_schema(
    summary="Clicks by UTM campaign and source",
    parameters=[CampaignQuerySerializer],
    responses={200: CampaignsSerializer},
    description="The clicks of the links you read (or of one team's) in whole UTC hours from `from` to `to`, "
    "by the utm_campaign and utm_source of the target that served each: a rule's or split destination's "
    "target for the clicks it served, else the link's own url, as each reads now. Bots are left out unless "
    "`include_bots=true`.",
)
@api_view(["GET"])
def campaigns(request):
    query = CampaignQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    params = query.validated_data
    team = readable_team(request, params.get("team"))
    start, end = whole_hours(params["from"], params["to"])
    links = links_visible_to(request.user, team=team)
    rows = campaign_clicks(links, start=start, end=end, include_bots=params["include_bots"])
    return Response(
        {
            "team": team,
            "from": iso(start),
            "to": iso(end),
            "include_bots": params["include_bots"],
            "clicks": sum(row.clicks for row in rows),
            "rows": [
                {"utm_campaign": row.campaign, "utm_source": row.source, "links": row.links, "clicks": row.clicks}
                for row in rows
            ],
        }
    )
