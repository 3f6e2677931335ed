"""/api/v1/tokens: a person's API tokens (tokens.services)."""

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from tokens import services as token_services
from tokens.models import ApiToken

from .common import TeamQuerySerializer, readable_team, team_from_body
from .fields import StrictIntegerField, StrictJSONMixin
from .permissions import SignedInSession


class TokenSerializer(StrictJSONMixin, serializers.ModelSerializer):
    team = StrictIntegerField(
        source="team_id",
        required=False,
        min_value=1,
        help_text="The one team the token reaches (its id): one of yours; left out, your personal team.",
    )
    username = serializers.CharField(source="user.username", read_only=True, help_text="Whose token it is.")

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "scope",
            "team",
            "username",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
        ]
        read_only_fields = ["id", "prefix", "created_at", "last_used_at", "revoked_at"]


class TokenCreatedSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The secret. Shown only in this response.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


@extend_schema_view(
    list=extend_schema(
        summary="Your API tokens",
        description="Yours, and every token of the teams you administer.",
        parameters=[TeamQuerySerializer],
    ),
    retrieve=extend_schema(summary="One API token"),
)
class TokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = TokenSerializer
    permission_classes = [IsAuthenticated, SignedInSession]
    queryset = ApiToken.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows

    def get_queryset(self):
        """A revoked token is gone from the API; the dashboard's tokens page still lists it."""
        tokens = token_services.tokens_managed_by(self.request.user).filter(revoked_at__isnull=True)
        if self.action == "list":
            query = TeamQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            if "team" in query.validated_data:
                tokens = tokens.filter(team_id=readable_team(self.request, query.validated_data["team"]))
        return tokens.select_related("user").order_by("-created_at", "-id")

    @extend_schema(
        summary="Create a token",
        responses={201: TokenCreatedSerializer},
        description="The token is in this response only; it cannot be shown again. It reaches one team "
        "(`team`, one of yours; by default your personal team), with no more than your role there: a "
        "viewer's token is read-only.",
        examples=[
            OpenApiExample(
                "A read-only token for a dashboard",
                request_only=True,
                value={"name": "grafana", "scope": "read", "expires_at": "2027-01-01T00:00:00Z"},
            )
        ],
    )
    def create(self, request, *args, **kwargs):
        serializer = TokenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token, raw = token_services.token_create(
            user=request.user, **team_from_body(request, serializer.validated_data)
        )
        token.token = raw
        return Response(TokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Revoke a token",
        description="Yours, or, as an admin of its team, anyone's. The token stops working at once, and is gone "
        "from the API; the dashboard's tokens page lists it as revoked.",
    )
    def destroy(self, request, *args, **kwargs):
        token_services.token_revoke(token=self.get_object(), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
