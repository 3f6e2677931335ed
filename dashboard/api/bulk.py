"""/api/v1/links/bulk: up to API_BULK_MAX links in one request, each made
or refused on its own (links.services.link_bulk_create)."""

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from links import services
from links.fields import LinkFields
from links.limits import admit_creation

from .common import team_from_body
from .exceptions import encodable
from .link_serializers import LinkCreateSerializer, LinkSerializer, new_link_data


class BulkCreateSerializer(serializers.Serializer):
    links = serializers.ListField(
        child=serializers.DictField(),
        min_length=1,
        max_length=settings.API_BULK_MAX,
        help_text=f"Up to {settings.API_BULK_MAX} links, each as for creating one.",
    )


class BulkItemResultSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    status = serializers.IntegerField(help_text="201 created, 400 invalid, 409 slug taken.")
    link = LinkSerializer(required=False)
    errors = serializers.DictField(required=False)


class BulkResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    failed = serializers.IntegerField()
    results = BulkItemResultSerializer(many=True)


BULK_STATUS = {
    services.Outcome.CREATED: 201,
    services.Outcome.INVALID: 400,
    services.Outcome.SLUG_TAKEN: 409,
    services.Outcome.FORBIDDEN: 403,
}


class LinkBulkMixin:
    """The bulk action of LinkViewSet (api/links.py)."""

    @extend_schema(
        summary="Create up to 1,000 links",
        request=BulkCreateSerializer,
        responses={200: BulkResultSerializer},
        description="Each link is created on its own: one invalid item does not stop the others. "
        "Each result says 201, 400 (with a message per field), 403 (your role in its team does not let you "
        "create links) or 409 (slug taken).",
        examples=[
            OpenApiExample(
                "Two links",
                value={"links": [{"url": "https://example.com/a"}, {"url": "https://example.com/b", "slug": "b"}]},
                request_only=True,
            )
        ],
    )
    @action(detail=False, methods=["post"])
    def bulk(self, request):
        body = BulkCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        links = body.validated_data["links"]
        results: list[dict] = [{"index": index} for index in range(len(links))]
        items, indexes = [], []
        for index, data in enumerate(links):
            item = LinkCreateSerializer(data=data)
            try:
                item.is_valid(raise_exception=True)
                values = team_from_body(request, item.validated_data)
                team = values.pop("team", None)
                items.append((LinkFields(**values), team))
                indexes.append(index)
            except ValidationError as exc:
                results[index].update(status=400, errors=encodable(exc.detail))
        per_team: dict = {}
        for _, team in items:
            per_team.setdefault(team.pk if team else None, [team, 0])[1] += 1
        for team, count in per_team.values():
            admit_creation(owner=request.user, team=team, token=request.auth, count=count)
        for index, result in zip(indexes, services.link_bulk_create(owner=request.user, items=items), strict=True):
            if result.link:
                results[index].update(status=201, link=new_link_data(result.link))
            else:
                results[index].update(status=BULK_STATUS[result.outcome], errors=result.errors)
        created = sum(result["status"] == 201 for result in results)
        return Response({"created": created, "failed": len(results) - created, "results": results})
