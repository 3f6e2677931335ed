from importlib import import_module

from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

app_name = "scim"


def _view(name: str):
    """views.`name`, with views.py imported at the first SCIM request: the
    protocol's models (scim2-models, pydantic) were a fifth of every Django
    process's start, and only SCIM uses them."""

    @csrf_exempt
    def view(request, *args, **kwargs):
        return getattr(import_module("scim.views"), name)(request, *args, **kwargs)

    view.__name__ = view.__qualname__ = name
    return view


urlpatterns = [
    path("ServiceProviderConfig", _view("service_provider_config"), name="service-provider-config"),
    path("ResourceTypes", _view("resource_types"), name="resource-types"),
    re_path(r"^ResourceTypes/(?P<name>[^/]+)$", _view("resource_types"), name="resource-type"),
    path("Schemas", _view("schemas"), name="schemas"),
    re_path(r"^Schemas/(?P<name>[^/]+)$", _view("schemas"), name="schema"),
    path("Users", _view("users"), name="users"),
    path("Users/.search", _view("users_search"), name="users-search"),
    re_path(r"^Users/(?P<user_id>[^/]+)$", _view("user"), name="user"),
    path("Groups", _view("groups"), name="groups"),
    path("Groups/.search", _view("groups_search"), name="groups-search"),
    re_path(r"^Groups/(?P<group_id>[^/]+)$", _view("group"), name="group"),
    path(".search", _view("root_search"), name="search"),
    re_path(r"^(?P<rest>.*)$", _view("not_found")),
]
