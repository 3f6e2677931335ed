"""The Jinja2 environment (settings.TEMPLATES, `using="jinja2"`) of the one
partial that Django's template language rendered too slowly: the rows of the
links list, about 25 values each, 50 rows a page. Django's engine took longer
over them than the page's queries took (docs/benchmarks.md, "Dashboard").
Autoescaping is on, as in every Django template, and an undefined name is an
error rather than an empty string."""

from django.utils import timezone
from jinja2 import Environment, StrictUndefined


def environment(**options) -> Environment:
    env = Environment(**{**options, "undefined": StrictUndefined})
    # Times in the person's zone (web.middleware), as Django's templates show them.
    env.filters["localtime"] = timezone.localtime
    return env
