"""/api/v1/webhooks: a team's webhooks and their delivery log (docs/api.md,
docs/webhooks.md). Routed by webhooks/urls.py ahead of api/'s routes; the
services decide who may (teams.access.manages_webhooks)."""

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.common import TeamQuerySerializer, readable_team
from api.fields import StrictBooleanField, StrictCharField, StrictIntegerField
from teams import access
from teams.models import Team
from teams.services import default_team

from . import event_types as types
from . import selectors, services
from .models import Attempt, Webhook

NO_SUCH_TEAM = "No team with this id among those whose webhooks you manage."


class WebhookSerializer(serializers.ModelSerializer):
    team = serializers.IntegerField(source="team_id", read_only=True, help_text="The team whose events it gets.")
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=types.SUBSCRIBABLE), help_text="The events it is sent."
    )

    class Meta:
        model = Webhook
        fields = [
            "id",
            "team",
            "url",
            "description",
            "events",
            "enabled",
            "disabled_reason",
            "failing_since",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.CharField(read_only=True, help_text="The signing secret (whsec_...). Shown only here.")

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class WebhookInputSerializer(serializers.Serializer):
    url = StrictCharField(max_length=services.URL_MAX, help_text="https:// address that receives the events.")
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=types.SUBSCRIBABLE), allow_empty=False, max_length=20
    )
    description = StrictCharField(max_length=services.DESCRIPTION_MAX, required=False, allow_blank=True)
    team = StrictIntegerField(
        required=False, min_value=1, help_text="The team (its id); left out: the token's, or your personal team."
    )

    def validate(self, attrs):
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in sorted(unknown)})
        return attrs


class WebhookUpdateSerializer(WebhookInputSerializer):
    url = StrictCharField(max_length=services.URL_MAX, required=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=types.SUBSCRIBABLE), allow_empty=False, max_length=20, required=False
    )
    enabled = StrictBooleanField(required=False)
    team = None


class SecretSerializer(serializers.Serializer):
    secret = serializers.CharField(
        help_text="The new signing secret, shown only here; the old one signs beside it for 24 hours."
    )


class DeliverySerializer(serializers.ModelSerializer):
    event_type = serializers.CharField(source="message.event_type")
    message_id = serializers.CharField(source="message.msg_id", help_text="The webhook-id header of each attempt.")
    attempt = serializers.IntegerField(source="number")
    state = serializers.CharField(source="message.state", help_text="The message's: pending, delivered or failed.")

    class Meta:
        model = Attempt
        fields = [
            "id",
            "event_type",
            "message_id",
            "attempt",
            "at",
            "status_code",
            "duration_ms",
            "response",
            "error",
            "next_attempt_at",
            "state",
        ]


@extend_schema_view(
    list=extend_schema(
        summary="Webhooks", description="Of the teams you administer.", parameters=[TeamQuerySerializer]
    ),
    retrieve=extend_schema(summary="One webhook"),
    destroy=extend_schema(summary="Delete a webhook, its messages and its delivery log"),
)
class WebhookViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = WebhookSerializer
    permission_classes = [IsAuthenticated]
    queryset = Webhook.objects.none()

    def get_queryset(self):
        webhooks = selectors.webhooks_managed_by(self.request.user)
        if self.action == "list":
            query = TeamQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            if "team" in query.validated_data:
                webhooks = webhooks.filter(team_id=readable_team(self.request, query.validated_data["team"]))
        return webhooks.order_by("-created_at", "-id")

    def _team(self, team_id: int | None) -> Team:
        if team_id is None:
            return default_team(self.request.user)
        team = access.teams_of(self.request.user).filter(pk=team_id).first()
        if team is None:
            raise serializers.ValidationError({"team": [NO_SUCH_TEAM]})
        return team

    @extend_schema(
        summary="Create a webhook", request=WebhookInputSerializer, responses={201: WebhookCreatedSerializer}
    )
    def create(self, request):
        data = WebhookInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        team = self._team(fields.pop("team", None))
        webhook, secret = services.webhook_create(actor=request.user, team=team, **fields)
        webhook.secret = secret
        return Response(WebhookCreatedSerializer(webhook).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="Change a webhook", request=WebhookUpdateSerializer, responses={200: WebhookSerializer})
    def partial_update(self, request, pk=None):
        webhook = self.get_object()
        data = WebhookUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        webhook = services.webhook_update(actor=request.user, webhook=webhook, **data.validated_data)
        return Response(WebhookSerializer(webhook).data)

    def destroy(self, request, pk=None):
        services.webhook_delete(actor=request.user, webhook=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(summary="Rotate the signing secret", request=None, responses={200: SecretSerializer})
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, pk=None):
        secret = services.webhook_rotate_secret(actor=request.user, webhook=self.get_object())
        return Response({"secret": secret})

    @extend_schema(summary="Send a webhook.test event", request=None, responses={202: DeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request, pk=None):
        message = services.webhook_send_test(actor=request.user, webhook=self.get_object())
        return Response(
            {"message_id": message.msg_id, "event_type": message.event_type}, status=status.HTTP_202_ACCEPTED
        )

    @extend_schema(
        summary="The delivery log: one row per attempt, newest first", responses={200: DeliverySerializer(many=True)}
    )
    @action(detail=True, methods=["get"])
    def deliveries(self, request, pk=None):
        page = self.paginate_queryset(selectors.deliveries_of(self.get_object()))
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)

    @extend_schema(summary="Send an attempt's message again", request=None, responses={202: None})
    @action(detail=True, methods=["post"], url_path=r"deliveries/(?P<attempt_id>[0-9]+)/redeliver")
    def redeliver(self, request, pk=None, attempt_id=None):
        webhook = self.get_object()
        attempt = Attempt.objects.filter(webhook=webhook, pk=attempt_id).select_related("message__webhook").first()
        if attempt is None:
            raise NotFound("No delivery with this id of this webhook.")
        message = services.message_redeliver(actor=request.user, message=attempt.message)
        return Response(
            {"message_id": message.msg_id, "event_type": message.event_type}, status=status.HTTP_202_ACCEPTED
        )
