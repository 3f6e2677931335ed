"""`/scim/v2/`: SCIM 2.0 (RFC 7643, 7644) for the company's identity
provider, behind a bearer token of `manage.py create_scim_token`, throttled
per token as the API is. Answers `application/scim+json`; every refusal is
a SCIM Error with its status (services.py holds what a request does)."""

import functools
import json
import re

from django.db import transaction
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from scim2_models import (
    Context,
    Error,
    Group,
    InvalidFilterException,
    InvalidSyntaxException,
    ListResponse,
    NotFoundException,
    ResponseParameters,
    SCIMException,
    SearchRequest,
    UnauthorizedException,
    User,
)

from slingshot.throttle import admit

from . import resources, services
from .models import ScimGroup
from .tokens import token_authenticate

CONTENT_TYPE = "application/scim+json"
# SQL for the one filter providers send before they make anyone: userName eq "...".
_USERNAME_EQ = re.compile(r'^\s*userName\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)


def _answer(data, status: int = 200, **headers) -> HttpResponse:
    response = HttpResponse(json.dumps(data), status=status, content_type=CONTENT_TYPE)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _error(exc: SCIMException) -> HttpResponse:
    error = exc.to_error()
    return _answer(error.model_dump(scim_ctx=Context.DEFAULT), status=error.status or 400)


def _base(request) -> str:
    return request.build_absolute_uri("/scim/v2").rstrip("/")


def scim_view(methods: tuple[str, ...]):
    """Bearer token, throttle, JSON body and SCIM errors around a view."""

    def wrap(view):
        @csrf_exempt
        @functools.wraps(view)
        def wrapped(request, *args, **kwargs):
            if request.method not in methods:
                error = Error(status=405, detail=f"{request.method} is not allowed here.")
                return _answer(error.model_dump(scim_ctx=Context.DEFAULT), status=405, Allow=", ".join(methods))
            scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
            token = token_authenticate(raw.strip()) if scheme.lower() == "bearer" else None
            if token is None:
                response = _error(UnauthorizedException(detail="A SCIM bearer token is needed (create_scim_token)."))
                response["WWW-Authenticate"] = 'Bearer realm="scim"'
                return response
            admitted, retry_after = admit(f"scim-{token.pk}")
            if not admitted:
                error = Error(status=429, detail="Too many requests: slow down.")
                return _answer(
                    error.model_dump(scim_ctx=Context.DEFAULT), status=429, Retry_After=str(int(retry_after) + 1)
                )
            body = None
            if request.method in ("POST", "PUT", "PATCH"):
                try:
                    body = json.loads(request.body or b"null")
                except (ValueError, UnicodeDecodeError):
                    return _error(InvalidSyntaxException(detail="The body is not JSON."))
                if not isinstance(body, dict):
                    return _error(InvalidSyntaxException(detail="The body is not a JSON object."))
            try:
                return view(request, body, *args, **kwargs)
            except SCIMException as exc:
                return _error(exc)

        return wrapped

    return wrap


def _parameters(request, body=None) -> ResponseParameters:
    source = body if body is not None else request.GET
    try:
        return ResponseParameters.model_validate(
            {key: source.get(key) for key in ("attributes", "excludedAttributes") if source.get(key)}
        )
    except ValueError:
        raise InvalidSyntaxException(
            detail="attributes or excludedAttributes is not a list of attribute paths."
        ) from None


def _dump(resource, parameters: ResponseParameters, context: Context = Context.RESOURCE_QUERY_RESPONSE) -> dict:
    return resource.model_dump(scim_ctx=context, response_parameters=parameters)


def _one(resource, parameters, status: int = 200, context: Context = Context.RESOURCE_QUERY_RESPONSE) -> HttpResponse:
    return _answer(_dump(resource, parameters, context), status=status, Location=str(resource.meta.location))


@scim_view(("GET",))
def service_provider_config(request, body):
    return _answer(
        resources.service_provider_config(_base(request)).model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    )


def _discovery_list(items) -> HttpResponse:
    listed = ListResponse[type(items[0])](
        total_results=len(items), start_index=1, items_per_page=len(items), resources=items
    )
    return _answer(listed.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


def _discovered(items, name: str | None, what: str) -> HttpResponse:
    """A discovery endpoint's list, or its one item called `name`."""
    if name is None:
        return _discovery_list(items)
    found = next((item for item in items if item.id == name), None)
    if found is None:
        raise NotFoundException(detail=f"No {what} {name}.")
    return _answer(found.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@scim_view(("GET",))
def resource_types(request, body, name: str | None = None):
    return _discovered(resources.resource_types(_base(request)), name, "resource type")


@scim_view(("GET",))
def schemas(request, body, name: str | None = None):
    return _discovered(resources.schemas(_base(request)), name, "schema")


def _search(request, body, model, candidates, resource_of):
    """A list of `model`, filtered, paged, with the attributes asked for."""
    source = body if body is not None else request.GET
    try:
        search = SearchRequest[model].model_validate(
            {
                key: source.get(key)
                for key in ("filter", "startIndex", "count", "attributes", "excludedAttributes")
                if source.get(key) not in (None, "")
            }
        )
    except ValueError as exc:
        text = str(exc)
        if "filter" in text:
            raise InvalidFilterException(detail="The filter cannot be read.") from None
        raise InvalidSyntaxException(detail="The search's parameters cannot be read.") from None
    base = _base(request)
    start = max(1, search.start_index or 1)
    count = resources.MAX_RESULTS if search.count is None else max(0, min(search.count, resources.MAX_RESULTS))
    wanted = candidates
    raw_filter = source.get("filter") or ""
    if model is User and (matched := _USERNAME_EQ.match(raw_filter)):
        wanted, raw_filter = wanted.filter(username__iexact=json.loads(f'"{matched[1]}"')), ""
    if not raw_filter:
        # Paged in the database: a provider that imports everyone reads page after page.
        total = len(wanted) if isinstance(wanted, list) else wanted.count()
        page = [resource_of(item, base) for item in wanted[start - 1 : start - 1 + count]]
    else:
        # Any other filter is matched here, on every candidate (scim2-models' own matching).
        found = [item for item in (resource_of(item, base) for item in wanted) if search.filter.match(item)]
        total, page = len(found), found[start - 1 : start - 1 + count]
    listed = ListResponse[model](total_results=total, start_index=start, items_per_page=len(page), resources=page)
    return _answer(listed.model_dump(scim_ctx=Context.SEARCH_RESPONSE, response_parameters=search))


@scim_view(("GET", "POST"))
def users(request, body):
    if request.method == "GET":
        return _search(request, None, User, services.scim_users(), resources.user_resource)
    parameters = _parameters(request)
    user = services.user_create(body)
    return _one(resources.user_resource(user, _base(request)), parameters, 201, Context.RESOURCE_CREATION_RESPONSE)


@scim_view(("POST",))
def users_search(request, body):
    return _search(request, body, User, services.scim_users(), resources.user_resource)


@scim_view(("GET", "PUT", "PATCH", "DELETE"))
def user(request, body, user_id: str):
    person = services.user_of(user_id)
    base = _base(request)
    parameters = _parameters(request)
    if request.method == "GET":
        return _one(resources.user_resource(person, base), parameters)
    if request.method == "DELETE":
        services.user_delete(person)
        return HttpResponse(status=204)
    if request.method == "PUT":
        person = services.user_replace(person, body)
        context = Context.RESOURCE_REPLACEMENT_RESPONSE
    else:
        person = services.user_patch(person, body, resources.user_resource(person, base))
        context = Context.RESOURCE_PATCH_RESPONSE
    person = services.user_of(str(person.pk))
    return _one(resources.user_resource(person, base), parameters, 200, context)


@scim_view(("POST",))
def root_search(request, body):
    """POST /.search: Users and Groups alike (RFC 7644 §3.4.3)."""
    return _search(request, body, User | Group, _everyone(), _resource_of_any)


class _Everyone(list):
    def filter(self, **kwargs):  # the userName shortcut applies to Users alone
        return self


def _everyone():
    return _Everyone([*services.scim_users(), *ScimGroup.objects.order_by("display_name")])


def _resource_of_any(item, base: str):
    if isinstance(item, ScimGroup):
        return resources.group_resource(item, base)
    return resources.user_resource(item, base)


@csrf_exempt
def not_found(request, rest: str = ""):
    """Any other address under /scim/v2/: a SCIM 404, not a page."""
    return _error(NotFoundException(detail=f"No endpoint /scim/v2/{rest}."))


@scim_view(("GET", "POST"))
def groups(request, body):
    if request.method == "GET":
        return _search(request, None, Group, ScimGroup.objects.order_by("display_name"), resources.group_resource)
    parameters = _parameters(request)
    group = services.group_create(body)
    return _one(resources.group_resource(group, _base(request)), parameters, 201, Context.RESOURCE_CREATION_RESPONSE)


@scim_view(("POST",))
def groups_search(request, body):
    return _search(request, body, Group, ScimGroup.objects.order_by("display_name"), resources.group_resource)


@scim_view(("GET", "PUT", "PATCH", "DELETE"))
def group(request, body, group_id: str):
    found = services.group_of(group_id)
    base = _base(request)
    parameters = _parameters(request)
    if request.method == "GET":
        return _one(resources.group_resource(found, base), parameters)
    if request.method == "DELETE":
        services.group_delete(found)
        return HttpResponse(status=204)
    with transaction.atomic():
        if request.method == "PUT":
            found = services.group_replace(found, body)
            context = Context.RESOURCE_REPLACEMENT_RESPONSE
        else:
            found = services.group_patch(found, body, resources.group_resource(found, base))
            context = Context.RESOURCE_PATCH_RESPONSE
    return _one(resources.group_resource(services.group_of(str(found.pk)), base), parameters, 200, context)
