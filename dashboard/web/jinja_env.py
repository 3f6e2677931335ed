"""The Jinja2 environment (settings.TEMPLATES, `using="jinja2"`) of the
links list's rows, the one partial rendered often enough (50 rows a page,
about 25 values each) for the template engine's speed to matter
(docs/dashboard.md). Autoescaping is on, as in every Django template, and an
undefined name is an error rather than an empty string."""

import re

from django.utils import timezone
from jinja2 import Environment, StrictUndefined
from markupsafe import Markup, escape

# After these a long URL may wrap: its slashes, dots and query marks.
_BREAKS = re.compile(r"(?<=[/.?&=#])")


def breakable(url: str) -> Markup:
    """The URL, escaped, with a line break allowed after its slashes, dots
    and query marks (<wbr>), so that it wraps there rather than in a word."""
    return Markup("<wbr>").join(escape(part) for part in _BREAKS.split(url))


def environment(**options) -> Environment:
    env = Environment(**{**options, "undefined": StrictUndefined})
    # Times in the person's zone (web.middleware), as Django's templates show them.
    env.filters["localtime"] = timezone.localtime
    env.filters["breakable"] = breakable
    return env
