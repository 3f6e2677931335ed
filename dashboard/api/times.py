"""Times as the API writes them, and the webhooks' messages too: apart from
the API's views and serializers, so that what writes a time loads no more
than this (webhooks.events loads in every process of the project)."""

from contextlib import suppress
from datetime import UTC, timedelta


def iso(moment, zone=None) -> str:
    """A time as DRF's DateTimeField writes it (UTC as Z), in `zone` if it can
    be. RFC 3339 offsets are whole minutes: a local time whose offset is not
    (a zone's local mean time, before it took a standard one) is written in UTC."""
    with suppress(OverflowError):  # at the ends of the calendar, as it is
        moment = moment.astimezone(zone) if zone else moment
        if (offset := moment.utcoffset()) and offset % timedelta(minutes=1):
            moment = moment.astimezone(UTC)
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
