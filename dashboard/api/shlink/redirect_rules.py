"""/rest/v3/short-urls/{shortCode}/redirect-rules: Shlink's redirect rules
are a link's rules (links/rules.py, evaluated by the edge), condition by
condition:

| Shlink                          | Slingshot                               |
|---------------------------------|-----------------------------------------|
| device (android, ios, mobile,   | device                                  |
|   windows, macos, linux,        |                                         |
|   chromeos, desktop)            |                                         |
| language                        | language                                |
| geolocation-country-code        | country                                 |
| query-param (key, value)        | query with key and value                |
| any-value-query-param (key)     | query with key alone                    |
| ip-address                      | ip                                      |
| browser                         | browser                                 |
| before-date, after-date         | before, after                           |

A date is shown as Shlink shows it (2030-01-31T23:59:59+00:00), and kept
in UTC to the second. What the edge cannot evaluate (valueless query
parameters, cities) is refused as invalid-data naming the condition, never
kept to be ignored. A link's A/B split, which Shlink has not, is neither
shown nor changed here."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.response import Response

from links import services

from .base import ShlinkView
from .problems import invalid_data
from .short_urls import link_of

# Shlink's condition type of each of Slingshot's that takes a value.
TO_SHLINK = {
    "device": "device",
    "language": "language",
    "country": "geolocation-country-code",
    "ip": "ip-address",
    "browser": "browser",
    "before": "before-date",
    "after": "after-date",
}
FROM_SHLINK = {shlink: ours for ours, shlink in TO_SHLINK.items()}
UNSUPPORTED = {
    "valueless-query-param": "a query parameter without a value",
    "geolocation-city-name": "the visitor's city",
}
DATES = ("before", "after")


def _shown(condition: dict) -> str:
    """A condition's value as Shlink writes it: a moment with its offset."""
    value = condition["value"]
    return value.removesuffix("Z") + "+00:00" if condition["type"] in DATES else value


def shlink_rules(link) -> dict:
    rules = []
    for priority, rule in enumerate(link.rules, 1):
        conditions = []
        for condition in rule["conditions"]:
            if condition["type"] == "query":
                kind = "query-param" if condition.get("value") is not None else "any-value-query-param"
                conditions.append({"type": kind, "matchKey": condition["key"], "matchValue": condition.get("value")})
            else:
                conditions.append(
                    {"type": TO_SHLINK[condition["type"]], "matchKey": None, "matchValue": _shown(condition)}
                )
        rules.append({"longUrl": rule["url"], "priority": priority, "conditions": conditions})
    return {"defaultLongUrl": link.url, "redirectRules": rules}


def _condition(condition, path: str) -> dict:
    if not isinstance(condition, dict):
        raise invalid_data({"redirectRules": [f"{path}: must be an object."]})
    kind, key, value = condition.get("type"), condition.get("matchKey"), condition.get("matchValue")
    if kind in FROM_SHLINK:
        return {"type": FROM_SHLINK[kind], "value": value}
    if kind == "query-param":
        return {"type": "query", "key": key, "value": value}
    if kind == "any-value-query-param":
        return {"type": "query", "key": key}
    if kind in UNSUPPORTED:
        reason = f"Slingshot's edge cannot evaluate {UNSUPPORTED[kind]}."
    else:
        reason = f"Use {', '.join([*FROM_SHLINK, 'query-param', 'any-value-query-param'])}."
    raise invalid_data({"redirectRules": [f"{path}.type: {kind!r} is not a condition Slingshot has. {reason}"]})


def slingshot_rules(body: dict) -> list[dict]:
    """Shlink's rules as Slingshot's, for links.rules to check."""
    rules = body.get("redirectRules", [])
    if not isinstance(rules, list):
        raise invalid_data({"redirectRules": ["Send a list of rules."]})
    converted = []
    for i, rule in enumerate(rules):
        path = f"redirectRules[{i}]"
        if not isinstance(rule, dict) or not isinstance(rule.get("conditions"), list):
            raise invalid_data({"redirectRules": [f"{path}: must be an object with longUrl and conditions."]})
        conditions = [_condition(c, f"{path}.conditions[{j}]") for j, c in enumerate(rule["conditions"])]
        converted.append({"url": rule.get("longUrl"), "conditions": conditions})
    return converted


class RedirectRulesView(ShlinkView):
    def get(self, request, version, short_code):
        return Response(shlink_rules(link_of(request, short_code)))

    def post(self, request, version, short_code):
        link = link_of(request, short_code)
        try:
            services.link_update(link=link, actor=request.user, rules=slingshot_rules(self.body()))
        except DjangoValidationError as exc:
            messages = [message.replace("rules[", "redirectRules[", 1) for message in exc.messages]
            raise invalid_data({"redirectRules": messages}) from None
        return Response(shlink_rules(link))
