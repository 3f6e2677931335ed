from django.urls import path, re_path

from . import views

app_name = "scim"

urlpatterns = [
    path("ServiceProviderConfig", views.service_provider_config, name="service-provider-config"),
    path("ResourceTypes", views.resource_types, name="resource-types"),
    re_path(r"^ResourceTypes/(?P<name>[^/]+)$", views.resource_types, name="resource-type"),
    path("Schemas", views.schemas, name="schemas"),
    re_path(r"^Schemas/(?P<name>[^/]+)$", views.schemas, name="schema"),
    path("Users", views.users, name="users"),
    path("Users/.search", views.users_search, name="users-search"),
    re_path(r"^Users/(?P<user_id>[^/]+)$", views.user, name="user"),
    path("Groups", views.groups, name="groups"),
    path("Groups/.search", views.groups_search, name="groups-search"),
    re_path(r"^Groups/(?P<group_id>[^/]+)$", views.group, name="group"),
    path(".search", views.root_search, name="search"),
    re_path(r"^(?P<rest>.*)$", views.not_found),
]
