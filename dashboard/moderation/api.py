"""/api/v1/reports: the staff's moderation queue (docs/api.md,
docs/operations.md). Staff and superusers only (SeesOperations), in a
signed-in session or with their token; each action is a POST on the report and each has
its opposite."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from api.exceptions import as_api_error
from api.fields import StrictCharField
from api.permissions import SeesOperations

from . import selectors, services
from .models import Report, Status


class ReportSerializer(serializers.ModelSerializer):
    link = serializers.SerializerMethodField(help_text="The link reported, as it is now; null once deleted.")
    handled_by = serializers.CharField(source="handled_by.username", default=None, read_only=True)

    class Meta:
        model = Report
        fields = [
            "id",
            "short_url",
            "host",
            "slug",
            "reason",
            "details",
            "email",
            "created_at",
            "status",
            "outcome",
            "handled_by",
            "handled_at",
            "link",
        ]
        read_only_fields = fields

    def get_link(self, report: Report) -> dict | None:
        return selectors.link_facts(report.link) if report.link_id else None


class WordsSerializer(serializers.Serializer):
    words = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text="What the 451 page says (plain text)."
    )


class ReasonSerializer(serializers.Serializer):
    reason = StrictCharField(max_length=500, required=False, allow_blank=True, help_text="Kept with the action.")


class BanSerializer(ReasonSerializer):
    domain = StrictCharField(
        max_length=253, required=False, help_text="The domain to ban; the reported link's destination's by default."
    )


class SuspendSerializer(ReasonSerializer):
    subject = serializers.ChoiceField(choices=["owner", "team"], help_text="The link's owner (a person) or its team.")


def _data(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@extend_schema_view(
    list=extend_schema(summary="Reports, newest first (?status=open|dismissed|acted)"),
    retrieve=extend_schema(summary="One report"),
)
class ReportViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = ReportSerializer
    permission_classes = [SeesOperations]

    def get_queryset(self):
        status = self.request.query_params.get("status")
        if status is not None and status not in Status.values:
            raise ValidationError({"status": [f"One of {', '.join(Status.values)}."]})
        return selectors.reports(status=status)

    def _done(self, report: Report) -> Response:
        report.refresh_from_db()
        return Response(ReportSerializer(report).data)

    def _link(self, report: Report):
        if report.link is None:
            raise ValidationError({"link": ["The reported link is gone."]})
        return report.link

    @extend_schema(summary="Stop the reported link (451)", request=WordsSerializer, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"])
    def disable(self, request, pk=None):
        report = self.get_object()
        services.link_block(
            link=self._link(report),
            actor=request.user,
            words=_data(WordsSerializer, request).get("words", ""),
            report=report,
        )
        return self._done(report)

    @extend_schema(summary="Let the reported link go on", request=None, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"])
    def enable(self, request, pk=None):
        report = self.get_object()
        services.link_unblock(link=self._link(report), actor=request.user)
        return self._done(report)

    @extend_schema(summary="Dismiss the report", request=None, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"])
    def dismiss(self, request, pk=None):
        return self._done(services.report_dismiss(report=self.get_object(), actor=request.user))

    @extend_schema(summary="Open the report again", request=None, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"])
    def reopen(self, request, pk=None):
        return self._done(services.report_reopen(report=self.get_object(), actor=request.user))

    @extend_schema(summary="Ban the destination's domain", request=BanSerializer, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"], url_path="ban-domain")
    def ban_domain(self, request, pk=None):
        report, data = self.get_object(), _data(BanSerializer, request)
        domain = data.get("domain") or self._link(report).url
        try:
            services.domain_ban(domain=domain, actor=request.user, reason=data.get("reason", ""), report=report)
        except DjangoValidationError as exc:
            raise as_api_error(DjangoValidationError({"domain": exc.messages})) from None
        return self._done(report)

    @extend_schema(summary="Lift a domain's ban", request=BanSerializer, responses={200: ReportSerializer})
    @action(detail=True, methods=["post"], url_path="unban-domain")
    def unban_domain(self, request, pk=None):
        report, data = self.get_object(), _data(BanSerializer, request)
        try:
            services.domain_unban(domain=data.get("domain") or self._link(report).url, actor=request.user)
        except DjangoValidationError as exc:
            raise as_api_error(DjangoValidationError({"domain": exc.messages})) from None
        return self._done(report)

    @extend_schema(
        summary="Suspend the link's owner or team", request=SuspendSerializer, responses={200: ReportSerializer}
    )
    @action(detail=True, methods=["post"])
    def suspend(self, request, pk=None):
        report, data = self.get_object(), _data(SuspendSerializer, request)
        link = self._link(report)
        try:
            if data["subject"] == "team":
                services.team_suspend(team=link.team, actor=request.user, reason=data.get("reason", ""), report=report)
            elif link.owner is None:
                raise ValidationError({"subject": ["The link has no owner any more."]})
            else:
                services.user_suspend(user=link.owner, actor=request.user, reason=data.get("reason", ""), report=report)
        except DjangoValidationError as exc:
            raise as_api_error(DjangoValidationError({"subject": exc.messages})) from None
        return self._done(report)

    @extend_schema(
        summary="Lift the owner's or team's suspension", request=SuspendSerializer, responses={200: ReportSerializer}
    )
    @action(detail=True, methods=["post"])
    def unsuspend(self, request, pk=None):
        report, data = self.get_object(), _data(SuspendSerializer, request)
        link = self._link(report)
        if data["subject"] == "team":
            services.team_unsuspend(team=link.team, actor=request.user)
        elif link.owner is not None:
            services.user_unsuspend(user=link.owner, actor=request.user)
        return self._done(report)
