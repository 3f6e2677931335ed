from django.conf import settings
from django.db import models


class Preferences(models.Model):
    """A person's settings for the dashboard's pages; its table is in sql/preferences.sql."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="preferences"
    )
    # An IANA name; empty until the person chooses one or their browser tells it (web/middleware.py).
    time_zone = models.CharField(max_length=64, blank=True)

    def __str__(self) -> str:
        return f"{self.user}: {self.time_zone or 'no time zone yet'}"
