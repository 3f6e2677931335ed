"""What web/templates/web/_form_errors.html lists of a form's errors."""

import re

from django import template

register = template.Library()

# Where links/rules.py says a rule or a split is wrong, such as
# rules[1].conditions[0].value: the rows of the link form, as people count them.
_RULE_PATH = re.compile(r"^(rules|split)\[(\d+)\](?:\.conditions\[(\d+)\])?(?:\.(\w+))?: ")
_PARTS = {"url": "its URL", "value": "its value", "key": "its parameter", "weight": "its weight", "type": "its type"}


def _readable(message: str) -> str:
    match = _RULE_PATH.match(message)
    if not match:
        return message
    kind, row, condition, part = match.groups()
    where = [f"{'Rule' if kind == 'rules' else 'Target'} {int(row) + 1}"]
    if condition is not None:
        where.append(f"condition {int(condition) + 1}")
    if part in _PARTS:
        where.append(_PARTS[part])
    return f"{', '.join(where)}: {message[match.end() :]}"


@register.filter
def field_errors(form) -> list[tuple]:
    """Each error of a field, with its field, in the order the fields are
    shown; the form's own errors (non_field_errors) are not among them."""
    return [(field, _readable(str(error))) for field in form for error in field.errors]
