"""Sign-in through the company's OpenID Connect provider (accounts/sso.py):
off unless OIDC_ISSUER names one."""

from django.core.exceptions import ImproperlyConfigured

from .environment import env

# The provider's issuer: its discovery document is OIDC_ISSUER/.well-known/openid-configuration.
OIDC_ISSUER = env.str("OIDC_ISSUER", default="").rstrip("/")
# The client registered for Slingshot at the provider; its redirect URI is
# https://<the dashboard>/sign-in/sso/done.
OIDC_CLIENT_ID = env.str("OIDC_CLIENT_ID", default="")
OIDC_CLIENT_SECRET = env.str("OIDC_CLIENT_SECRET", default="")
# What the sign-in page's button names: "Sign in with <OIDC_NAME>".
OIDC_NAME = env.str("OIDC_NAME", default="single sign-on")
OIDC_SCOPES = env.str("OIDC_SCOPES", default="openid email profile")
# The claim that lists a person's groups (docs/operations.md).
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", default="groups")
# Roles from the provider's groups, kept as code: `group=Team name:role`,
# comma-separated (e.g. `eng=Engineering:editor,mkt=Marketing:viewer`). The
# teams are made if missing; these apply beside the mappings a team's admins
# make on its People page (teams/groups.py).
OIDC_GROUP_ROLES_TEXT = env.str("OIDC_GROUP_ROLES", default="")
# false: password sign-in (the sign-in page, the admin's, the YOURLS API's
# username and password) is refused to everyone but the superusers named in
# LOCAL_SIGNIN_SUPERUSERS (comma-separated user names), the break-glass way
# in while the provider is away (accounts/backends.py).
LOCAL_SIGNIN = env.bool("LOCAL_SIGNIN", default=True)
LOCAL_SIGNIN_SUPERUSERS = frozenset(
    filter(None, (name.strip() for name in env.str("LOCAL_SIGNIN_SUPERUSERS", default="").split(",")))
)
# How long a request waits for the provider (discovery, the token, userinfo).
OIDC_TIMEOUT_SECONDS = env.float("OIDC_TIMEOUT_SECONDS", default=5.0)
# Ways to and back from the provider an address may take (web/sso_views.py):
# each way back makes the dashboard call the provider.
OIDC_THROTTLE_RATE = env.str("OIDC_THROTTLE_RATE", default="30/min")
# An http:// issuer: for a provider on loopback in tests, never in production.
OIDC_ALLOW_HTTP = env.bool("OIDC_ALLOW_HTTP", default=False)
# How often a session of single sign-on asks the provider, without a page
# of its own (prompt=none), whether its person may still come (web/sso_views.py);
# 0: never after the sign-in.
OIDC_RECHECK_MINUTES = env.int("OIDC_RECHECK_MINUTES", default=15)

if OIDC_ISSUER and not (OIDC_CLIENT_ID and OIDC_CLIENT_SECRET):
    raise ImproperlyConfigured("OIDC_ISSUER is set: set OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too")
if not LOCAL_SIGNIN and not OIDC_ISSUER:
    raise ImproperlyConfigured("LOCAL_SIGNIN=false leaves only single sign-on: set OIDC_ISSUER")
if OIDC_ISSUER and not OIDC_ISSUER.startswith("https://") and not OIDC_ALLOW_HTTP:
    raise ImproperlyConfigured(f"OIDC_ISSUER must be https:// (it is {OIDC_ISSUER})")


def _group_roles(text: str) -> list[tuple[str, str, str]]:
    """OIDC_GROUP_ROLES as (group, team name, role) triples."""
    out = []
    for part in filter(None, (part.strip() for part in text.split(","))):
        group, equals, rest = part.partition("=")
        team, colon, role = rest.rpartition(":")
        if not (equals and colon and group.strip() and team.strip()) or role.strip() not in (
            "viewer",
            "editor",
            "admin",
        ):
            raise ImproperlyConfigured(
                f"OIDC_GROUP_ROLES: {part!r} is not group=Team name:role (role: viewer, editor or admin)"
            )
        out.append((group.strip(), team.strip(), role.strip()))
    return out


OIDC_GROUP_ROLES = _group_roles(OIDC_GROUP_ROLES_TEXT)
