"""What the rest of Slingshot reads of SCIM's people and groups: plain
queries, without the protocol's models (scim2-models), which only a SCIM
request loads (urls.py)."""

from django.contrib.auth import get_user_model

from .models import ScimGroup


def groups_of(user) -> list[str]:
    return list(
        ScimGroup.objects.filter(memberships__user=user).order_by("display_name").values_list("display_name", flat=True)
    )


def provisioned_user_for(*, subject: str, username: str):
    """The person SCIM provisioned whom the same provider now signs in for
    the first time: its externalId is their `sub`, else its userName is their
    preferred_username (both the provider's word, never an e-mail)."""
    live = get_user_model().objects.filter(
        scim__isnull=False, scim__deleted_at__isnull=True, sso_identities__isnull=True
    )
    found = live.filter(scim__external_id=subject).exclude(scim__external_id="").first()
    if found is None and username:
        found = live.filter(username__iexact=username).first()
    return found
