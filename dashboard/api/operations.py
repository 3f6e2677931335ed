"""/api/v1/orphan-visits and /api/v1/accounting: what operators read."""

from datetime import datetime, timedelta, timezone

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from clicks.accounting import accounts
from clicks.orphans import orphan_domain
from clicks.orphans import orphan_visits as orphan_visits_report
from clicks.report_queries import ReportTooLarge
from slingshot.contract import ORPHAN_KINDS
from slingshot.redis import RedisUnavailable, quick_call

from .common import QueryParameters
from .exceptions import Unavailable, as_api_error
from .permissions import SeesOperations


class OrphanQuerySerializer(QueryParameters):
    days = serializers.IntegerField(
        required=False, min_value=1, max_value=90, default=7, help_text="The last this many days, today included."
    )
    include_bots = serializers.BooleanField(required=False, default=True, help_text="Count visits by bots.")
    domain = serializers.CharField(
        required=False, help_text="Only the visits on the domain of this host (the default domain's host included)."
    )
    kind = serializers.ChoiceField(choices=ORPHAN_KINDS, required=False, help_text="Only the visits of this kind.")

    def validate_domain(self, value: str) -> str:
        """As orphan_visits names the domain: '' for the default one."""
        try:
            return orphan_domain(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


class AccountingQuerySerializer(QueryParameters):
    days = serializers.IntegerField(
        required=False, min_value=1, max_value=8, default=1, help_text="The last this many days (the edge keeps 8)."
    )


class OrphanCountSerializer(serializers.Serializer):
    visits = serializers.IntegerField()
    bots = serializers.IntegerField()


class OrphanPathSerializer(OrphanCountSerializer):
    domain = serializers.CharField(help_text="The host of the domain it was asked on; empty for the default domain.")
    path = serializers.CharField(help_text="The slug asked for, without the leading slash.")
    kind = serializers.ChoiceField(
        choices=ORPHAN_KINDS,
        help_text="What the edge found: no link (unknown), or a link disabled, scheduled (not valid yet), "
        "expired, past its visit limit (limit), or a view of its password page (password).",
    )


class OrphanReferrerSerializer(OrphanCountSerializer):
    referer_host = serializers.CharField(help_text="Empty for visits without a referrer.")


class OrphanVisitsSerializer(serializers.Serializer):
    visits = serializers.IntegerField()
    bots = serializers.IntegerField()
    by_path = OrphanPathSerializer(many=True)
    by_referrer = OrphanReferrerSerializer(many=True)
    include_bots = serializers.BooleanField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class HourAccountSerializer(serializers.Serializer):
    hour = serializers.DateTimeField(help_text="The UTC hour's start.")
    served_redirects = serializers.IntegerField()
    served_orphans = serializers.IntegerField()
    stored_clicks = serializers.IntegerField()
    stored_orphans = serializers.IntegerField()
    deleted_clicks = serializers.IntegerField(
        help_text="Clicks of the hour deleted since they were served: a link's visits deleted, or the link "
        "(with the clicks still on their way to the database then)."
    )
    deleted_orphans = serializers.IntegerField(help_text="Orphan visits of the hour deleted since.")
    purged_clicks = serializers.IntegerField(
        help_text="Clicks of the hour purged with their rollups past their team's retention "
        "(CLICK_RETENTION_ROLLUPS=purge): the hour was purged, which is no difference."
    )
    difference = serializers.IntegerField(
        allow_null=True,
        help_text="Served minus stored, deleted and purged; null when no edge counted anything in the hour.",
    )
    settled = serializers.BooleanField(help_text="Ended more than ACCOUNTING_GRACE_MINUTES ago.")
    counted = serializers.BooleanField(
        help_text="Some edge counted what it served in the hour: false before the edges counted "
        "(an older version) or past the 8 days the counts are kept."
    )
    partly_counted = serializers.BooleanField(
        help_text="The first hour counted, with more stored than served: the edges began counting within it."
    )
    lasting = serializers.BooleanField(
        help_text="Settled, counted, and a difference that means clicks went missing or were removed."
    )


class AccountingSerializer(serializers.Serializer):
    hours = HourAccountSerializer(many=True, help_text="Newest first.")
    lasting = serializers.IntegerField(help_text="Hours whose difference is lasting.")


@extend_schema(
    summary="Orphan visits",
    description="Visits to paths that are no link (a slug nobody created or one deleted, or a link disabled, "
    "scheduled, expired or past its limit, or a view of a link's password page) over the last `days` days, counted by domain and path and by referrer host, bots "
    "counted apart; `domain` reads one domain alone, `kind` one kind. For staff and superusers.",
    parameters=[OrphanQuerySerializer],
    responses={200: OrphanVisitsSerializer},
)
@api_view(["GET"])
@permission_classes([IsAuthenticated, SeesOperations])
def orphan_visits(request):
    query = OrphanQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    end = datetime.now(timezone.utc)
    start = end - timedelta(days=query.validated_data["days"])
    include_bots = query.validated_data["include_bots"]
    domain = query.validated_data.get("domain")
    try:
        found = orphan_visits_report(
            start=start, end=end, include_bots=include_bots, domain=domain, kind=query.validated_data.get("kind")
        )
    except ReportTooLarge as exc:
        raise as_api_error(exc) from None
    report = {**vars(found), "include_bots": include_bots, "start": start, "end": end}
    return Response(OrphanVisitsSerializer(report).data)


@extend_schema(
    summary="Every click accounted for",
    description="Per UTC hour, newest first: the redirects and orphan visits the edges served as clicks, "
    "the clicks and orphan visits stored, those deleted since (visits deleted, links deleted), and the "
    "difference (served minus stored and deleted), zero once the importer has caught up "
    "(docs/operations.md); none for an hour no edge counted in. For staff and superusers.",
    parameters=[AccountingQuerySerializer],
    responses={200: AccountingSerializer},
)
@api_view(["GET"])
@permission_classes([IsAuthenticated, SeesOperations])
def accounting(request):
    query = AccountingQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    now = datetime.now(timezone.utc)
    start = now - timedelta(days=query.validated_data["days"])
    try:
        hours = quick_call(lambda client: accounts(client=client, start=start, end=now, now=now), what="accounting")
    except RedisUnavailable as exc:
        raise Unavailable(str(exc)) from None
    report = {"hours": hours, "lasting": sum(1 for hour in hours if hour.lasting)}
    return Response(AccountingSerializer(report).data)
