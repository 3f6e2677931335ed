"""/api/v1/teams and their members (teams.services)."""

from django.db import transaction
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from clicks.enrichment import IP_PRIVACY_CHOICES
from teams import selectors as team_selectors
from teams import services as team_services
from teams.models import RETENTION_DAYS_MAX, Membership, Role, Team
from teams.services import VISIT_SETTINGS

from .common import NO_SUCH_TEAM
from .fields import StrictCharField, StrictChoiceField, StrictJSONMixin
from .permissions import SignedInSession


class TeamSerializer(StrictJSONMixin, serializers.ModelSerializer):
    personal = serializers.SerializerMethodField(help_text="Whether it is someone's personal team.")
    role = serializers.ChoiceField(choices=Role.choices, read_only=True, help_text="Your role in it.")
    ip_storage_in_effect = serializers.ChoiceField(
        choices=IP_PRIVACY_CHOICES,
        read_only=True,
        help_text="What is kept of its visitors' addresses: `ip_storage`, or where that is empty the service's "
        "CLICK_IP_PRIVACY.",
    )

    class Meta:
        model = Team
        fields = [
            "id",
            "name",
            "personal",
            "role",
            "created_at",
            "visit_retention_days",
            "ip_storage",
            "ip_storage_in_effect",
        ]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {
            "name": {"min_length": 1},
            "visit_retention_days": {
                "help_text": f"Its raw clicks older than this many days (1 to {RETENTION_DAYS_MAX}) are deleted, "
                "counted from the UTC midnight (at least 8 with CLICK_STORE=clickhouse); null keeps them. Whether their rollups (reports by hour and day) "
                "go with them is the service's choice (CLICK_RETENTION_ROLLUPS)."
            },
            "ip_storage": {
                "help_text": "What the importer keeps of a visitor's address with each click of its links from "
                "now on: `anonymise` (IPv4 /24, IPv6 /48), `full`, `none`, or empty for the service's "
                "CLICK_IP_PRIVACY."
            },
        }

    def get_personal(self, team: Team) -> bool:
        return team.personal_for_id is not None


class MemberSerializer(StrictJSONMixin, serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]
        read_only_fields = ["created_at"]


class MemberCreateSerializer(StrictJSONMixin, serializers.Serializer):
    username = StrictCharField(max_length=150, help_text="The user name of an active person.")
    role = StrictChoiceField(choices=Role.choices)


class MemberUpdateSerializer(StrictJSONMixin, serializers.Serializer):
    role = StrictChoiceField(choices=Role.choices)


class SessionToCreate(SignedInSession):
    message = "Teams are created from a signed-in session, not with a token (a token reaches its own team only)."


@extend_schema_view(
    list=extend_schema(
        summary="Your teams", description="The teams you are a member of (a token's: its team), with your role."
    ),
    retrieve=extend_schema(summary="One team"),
    create=extend_schema(summary="Create a team", description="You become its admin. From a signed-in session."),
    partial_update=extend_schema(
        summary="Rename a team, or change how it keeps its visits",
        description="An admin's to do, a personal team's included. `name` as when creating a team; "
        "`visit_retention_days` and `ip_storage` as the team's page sets them. Each change is in the audit log; "
        "a value out of bounds is a 400 that changes nothing.",
    ),
    destroy=extend_schema(
        summary="Delete a team",
        description="An admin's to do. Its memberships, API tokens (refused at once) and CSV imports go with "
        "it, and so does its audit log. A personal team, and a team that still has links, are not deleted (409): "
        "move or delete its links first.",
    ),
)
class TeamViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    serializer_class = TeamSerializer
    queryset = Team.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows
    pagination_class = None  # a person's teams are few

    def get_permissions(self):
        if self.action == "create":
            return [IsAuthenticated(), SessionToCreate()]
        return super().get_permissions()

    def get_queryset(self):
        user = self.request.user
        if self.action == "list":
            return team_selectors.teams_belonging_to(user)
        return team_selectors.teams_for(user)

    def create(self, request, *args, **kwargs):
        serializer = TeamSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        team = team_services.team_create(actor=request.user, name=serializer.validated_data["name"])
        return Response(
            TeamSerializer(team_selectors.team_for(request.user, team.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    def partial_update(self, request, *args, **kwargs):
        team = self.get_object()
        body = TeamSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        visit_settings = {name: value for name, value in body.validated_data.items() if name in VISIT_SETTINGS}
        with transaction.atomic():
            if visit_settings:
                team_services.team_visit_settings(actor=request.user, team=team, **visit_settings)
            if "name" in body.validated_data or not visit_settings:
                # Without a name nothing changes, but the role is checked all the same.
                team_services.team_rename(
                    actor=request.user, team=team, name=body.validated_data.get("name", team.name)
                )
        return Response(TeamSerializer(team_selectors.team_for(request.user, team.pk)).data)

    def destroy(self, request, *args, **kwargs):
        team_services.team_delete(actor=request.user, team=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


USERNAME_PATTERN = r"[\w.@+-]{1,150}"


@extend_schema_view(
    list=extend_schema(summary="The members of a team", description="For any member of the team."),
    retrieve=extend_schema(summary="One member of a team"),
    create=extend_schema(
        summary="Add a member",
        request=MemberCreateSerializer,
        responses={201: MemberSerializer},
        description="An admin's to do. `username` names an active person.",
    ),
    partial_update=extend_schema(
        summary="Change a member's role",
        request=MemberUpdateSerializer,
        responses={200: MemberSerializer},
        description="An admin's to do. A team keeps at least one admin, and a personal team its person.",
    ),
    destroy=extend_schema(
        summary="Remove a member",
        description="An admin's to do, or the member's own (leaving). Their tokens for the team are revoked.",
    ),
)
class MemberViewSet(viewsets.ModelViewSet):
    serializer_class = MemberSerializer
    queryset = Membership.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows
    lookup_field = "username"
    lookup_value_regex = USERNAME_PATTERN
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def team(self) -> Team:
        try:
            return team_selectors.team_for(self.request.user, self.kwargs["team_id"])
        except Team.DoesNotExist:
            raise NotFound(NO_SUCH_TEAM) from None

    def get_queryset(self):
        return team_selectors.team_members(self.team())

    def get_object(self):
        try:
            return team_selectors.member_of(self.team(), self.kwargs["username"])
        except Membership.DoesNotExist:
            raise NotFound("No such member of this team.") from None

    def create(self, request, *args, **kwargs):
        body = MemberCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = team_services.member_add(actor=request.user, team=self.team(), **body.validated_data)
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        membership = self.get_object()
        body = MemberUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = team_services.member_change(actor=request.user, membership=membership, **body.validated_data)
        return Response(MemberSerializer(membership).data)

    def perform_destroy(self, instance):
        team_services.member_remove(actor=self.request.user, membership=instance)
