"""The UTM parameters of a link's destination: set into its query (the link
form's builder, the API's utm_* fields) and read back from it."""

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

UTM_PARAMETERS = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")


def with_utm(url: str, values: dict[str, str], *, remove_empty: bool = False) -> str:
    """The URL with these utm_* parameters set (replacing any of the same
    name), the others and the fragment left as they are; with
    `remove_empty`, a parameter given empty is taken out. static/web/app.js
    does the same as people type."""
    given = {name: value for name, value in values.items() if value}
    dropped = {name for name, value in values.items() if not value} if remove_empty else set()
    if not given and not dropped:
        return url
    parts = urlsplit(url)
    query = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if name not in given and name not in dropped
    ]
    return urlunsplit(parts._replace(query=urlencode([*query, *given.items()])))


def utm_of(url: str) -> dict[str, str]:
    """Each UTM parameter's value in the URL's query ('' where it has none;
    the last, where it has several)."""
    found = dict.fromkeys(UTM_PARAMETERS, "")
    for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if name in found:
            found[name] = value
    return found
