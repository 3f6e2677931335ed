"""/api/v1/utm-templates: a team's UTM templates (links/utm_templates.py).
Everyone in the team reads them; editors make, change and delete them."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from links import utm_templates
from links.models import UtmTemplate
from links.utm import UTM_PARAMETERS
from teams import access
from teams.services import default_team

from .common import TeamQuerySerializer, readable_team, team_from_body
from .exceptions import as_api_error
from .fields import StrictCharField, StrictIntegerField, StrictJSONMixin


class UtmTemplateSerializer(StrictJSONMixin, serializers.ModelSerializer):
    team = StrictIntegerField(
        source="team_id",
        required=False,
        help_text="The team whose template it is (its id): one of yours; left out, your default team.",
    )
    name = StrictCharField(max_length=100, help_text="Unique in the team.")

    class Meta:
        model = UtmTemplate
        fields = ["id", "team", "name", *UTM_PARAMETERS, "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]
        extra_kwargs = {name: {"max_length": 200, "allow_blank": True} for name in UTM_PARAMETERS}


class UtmTemplateUpdateSerializer(UtmTemplateSerializer):
    class Meta(UtmTemplateSerializer.Meta):
        read_only_fields = ["id", "team", "created_at", "updated_at"]


@extend_schema_view(
    list=extend_schema(summary="A team's UTM templates", parameters=[TeamQuerySerializer]),
    retrieve=extend_schema(summary="A UTM template"),
    # A name the team's other template has is a 409 (api/exceptions.py, CONFLICTS).
    create=extend_schema(summary="Make a UTM template (editors)", responses={201: UtmTemplateSerializer, 409: None}),
    partial_update=extend_schema(
        summary="Change a UTM template (editors)",
        request=UtmTemplateUpdateSerializer,
        responses={200: UtmTemplateSerializer, 409: None},
    ),
    destroy=extend_schema(summary="Delete a UTM template (editors)"),
)
class UtmTemplateViewSet(viewsets.ModelViewSet):
    serializer_class = UtmTemplateSerializer
    queryset = UtmTemplate.objects.none()  # the model, for drf-spectacular; get_queryset gives the rows
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    pagination_class = None  # a team keeps a few, listed whole

    def get_queryset(self):
        teams = access.teams_of(self.request.user).values_list("pk", flat=True)
        templates = utm_templates.templates_of(teams)
        if self.action == "list":
            query = TeamQuerySerializer(data=self.request.query_params)
            query.is_valid(raise_exception=True)
            if (team := readable_team(self.request, query.validated_data.get("team"))) is not None:
                templates = templates.filter(team_id=team)
        return templates

    def get_object(self):
        template = self.get_queryset().filter(pk=self.kwargs["pk"]).first() if self.kwargs["pk"].isdigit() else None
        if template is None:
            raise NotFound()
        return template

    def create(self, request, *args, **kwargs):
        serializer = UtmTemplateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        values = team_from_body(request, serializer.validated_data)
        team = values.pop("team", None) or default_team(request.user)
        try:
            template = utm_templates.utm_template_create(actor=request.user, team_id=team.pk, **values)
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return Response(UtmTemplateSerializer(template).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, *args, **kwargs):
        template = self.get_object()
        serializer = UtmTemplateUpdateSerializer(template, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        try:
            utm_templates.utm_template_update(actor=request.user, template=template, **serializer.validated_data)
        except DjangoValidationError as exc:
            raise as_api_error(exc) from None
        return Response(UtmTemplateSerializer(template).data)

    def perform_destroy(self, instance):
        utm_templates.utm_template_delete(actor=self.request.user, template=instance)
