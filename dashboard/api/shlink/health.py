"""/rest/health (and /rest/v3/health): whether the dashboard reaches its
database, and the Shlink version whose API this is (SHLINK_VERSION, which
the edge answers too on every short domain: edge/slingshot/shlink.lua).
No key: Shlink's web client asks before it has one in use."""

from django.db import DatabaseError, connection
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from .base import ShlinkView
from .problems import Problem

# The Shlink version Slingshot's API is: Shlink's web client turns its
# features on by version, and these are the ones whose API Slingshot
# serves (4.5: desktop devices and query conditions of any value; 4.6:
# excluded tags, visits by domain; 5.0: date conditions; 5.1: browser
# conditions).
SHLINK_VERSION = "5.1.0"
HEALTH_JSON = "application/health+json"


class HealthView(ShlinkView):
    permission_classes = [AllowAny]

    def get(self, request, version=None):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            passing = True
        except DatabaseError:
            passing = False
        return Response(
            {"status": "pass" if passing else "fail", "version": SHLINK_VERSION},
            status=200 if passing else 503,
            content_type=HEALTH_JSON,
        )


class MercureInfoView(ShlinkView):
    def get(self, request, version):
        raise Problem(
            501,
            "mercure-not-configured",
            "Mercure integration not configured",
            "This Shlink instance is not integrated with a mercure hub.",
        )
