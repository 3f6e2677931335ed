"""Slingshot's people and groups as SCIM resources (scim2-models), and what
the service announces on its discovery endpoints (RFC 7644 §4)."""

from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    ETag,
    Filter,
    Group,
    Patch,
    ResourceType,
    ServiceProviderConfig,
    Sort,
    User,
)

from .models import ScimGroup, ScimMembership

# The most resources a list answers at once (and the filter's maxResults).
MAX_RESULTS = 200


def _stamp(when) -> str:
    return when.isoformat().replace("+00:00", "Z")


def user_resource(user, base: str) -> User:
    """The person as the provider sees them: what it last wrote, with what
    Slingshot owns (id, userName and active as they are now, groups, meta)."""
    scim = getattr(user, "scim", None)
    data = dict(scim.resource) if scim is not None else {}
    if scim is None:
        data["name"] = {k: v for k, v in (("givenName", user.first_name), ("familyName", user.last_name)) if v}
        if user.email:
            data["emails"] = [{"value": user.email, "primary": True}]
    data.update(schemas=[str(User.__schema__)], id=str(user.pk), userName=user.username)
    # As written, unless Slingshot deactivated them (a removed `active` stays away).
    if scim is None or "active" in data or not user.is_active:
        data["active"] = user.is_active
    if scim is not None and scim.external_id:
        data["externalId"] = scim.external_id
    groups = ScimMembership.objects.filter(user=user).select_related("group").order_by("group__display_name")
    if groups:
        data["groups"] = [
            {"value": str(m.group_id), "display": m.group.display_name, "$ref": f"{base}/Groups/{m.group_id}"}
            for m in groups
        ]
    created = scim.created_at if scim is not None else user.date_joined
    modified = scim.updated_at if scim is not None else user.date_joined
    data["meta"] = {
        "resourceType": "User",
        "created": _stamp(created),
        "lastModified": _stamp(modified),
        "location": f"{base}/Users/{user.pk}",
    }
    return User.model_validate(data, scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def group_resource(group: ScimGroup, base: str) -> Group:
    data = dict(group.resource)
    given = {str(member.get("value")): member for member in data.pop("members", None) or []}
    members = ScimMembership.objects.filter(group=group).select_related("user").order_by("user_id")
    data.update(
        schemas=[str(Group.__schema__)],
        id=str(group.pk),
        displayName=group.display_name,
        members=[
            {
                "value": str(m.user_id),
                "display": given.get(str(m.user_id), {}).get("display") or m.user.username,
                "type": "User",
                "$ref": f"{base}/Users/{m.user_id}",
            }
            for m in members
        ]
        or None,
        meta={
            "resourceType": "Group",
            "created": _stamp(group.created_at),
            "lastModified": _stamp(group.updated_at),
            "location": f"{base}/Groups/{group.pk}",
        },
    )
    if group.external_id:
        data["externalId"] = group.external_id
    if data["members"] is None:
        del data["members"]
    return Group.model_validate(data, scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def service_provider_config(base: str) -> ServiceProviderConfig:
    return ServiceProviderConfig(
        documentation_uri=None,
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=MAX_RESULTS),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        authentication_schemes=[
            AuthenticationScheme(
                type="oauthbearertoken",
                name="Bearer token",
                description="A token made by `manage.py create_scim_token`, as `Authorization: Bearer <token>`.",
                primary=True,
            )
        ],
        meta={"resourceType": "ServiceProviderConfig", "location": f"{base}/ServiceProviderConfig"},
    )


def resource_types(base: str) -> list[ResourceType]:
    out = []
    for model in (User, Group):
        kind = ResourceType.from_resource(model)
        kind.meta = {"resourceType": "ResourceType", "location": f"{base}/ResourceTypes/{kind.id}"}
        out.append(kind)
    return out


def schemas(base: str) -> list:
    out = []
    for model in (User, Group):
        schema = model.to_schema()
        schema.meta = {"resourceType": "Schema", "location": f"{base}/Schemas/{schema.id}"}
        out.append(schema)
    return out
