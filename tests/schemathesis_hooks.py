"""schemathesis hooks of tests/test_api_fuzz.py: text its generators never make.

Hypothesis draws strings that UTF-8 can encode, so a lone surrogate (the
"\\ud800" of a JSON body, which Python's parser decodes to one) never comes,
and a character IDNA maps to nothing (a Hangul filler, a variation
selector) comes by rare luck only. `flatmap_body` puts one of them, or a
NUL, into a string or a key of a request's body, where hypothesis chooses.

Such a body is text the schema does not describe: the API may refuse it
with a 400 (`filter_failure` lets positive_data_acceptance accept that of
these bodies alone), never with a 5xx (not_a_server_error), and never by
keeping the text without the character (`nothing_typed_is_dropped`)."""

import schemathesis
from hypothesis import strategies as st

SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff"]
# What IDNA maps to nothing: Hangul fillers, variation selectors, the
# combining grapheme joiner, a Mongolian free variation selector, a zero-width space.
INVISIBLE = ["\u3164", "\u115f", "\u1160", "\uffa0", "\ufe0f", "\U000e0100", "\u034f", "\u180b", "\u200b"]
PUT_IN = [*SURROGATES, *INVISIBLE, "\x00"]


def _places(value, path=()):
    """Each string of a JSON value, as the path to it and whether it is a key."""
    if isinstance(value, str):
        yield path, False
    elif isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key), True
            yield from _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _places(item, (*path, index))


def _put_in(value, place, char: str, at: int):
    """A copy of `value` with `char` in the string at `place`, `at` characters
    in (-1: first in the host, for a URL)."""
    path, is_key = place
    if not path:
        at = value.find("://") + 3 if at < 0 and "://" in value else at % (len(value) + 1)
        return value[:at] + char + value[at:]
    step, *rest = path
    if isinstance(value, list):
        return [_put_in(item, (rest, is_key), char, at) if index == step else item for index, item in enumerate(value)]
    if is_key and not rest:
        return {(_put_in(key, ((), False), char, at) if key == step else key): item for key, item in value.items()}
    return {key: _put_in(item, (rest, is_key), char, at) if key == step else item for key, item in value.items()}


@schemathesis.hook
def flatmap_body(context, body):
    places = list(_places(body))
    if not places:
        return st.just(body)
    at = st.integers(-1, 64)  # -1: a URL's host, where IDNA would drop an invisible character
    changed = st.builds(_put_in, st.just(body), st.sampled_from(places), st.sampled_from(PUT_IN), at)
    return st.one_of(st.just(body), changed)


def _holds_put_in(value) -> bool:
    return any(isinstance(text, str) and any(char in text for char in PUT_IN) for text in _texts(value))


def _texts(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


@schemathesis.hook
def filter_failure(context, failure, case, response):
    """A body the hooks changed may be refused (with a 400) though the rest of it is valid."""
    refused = type(failure).__name__ == "RejectedPositiveData" and response.status_code == 400
    return not (refused and _holds_put_in(case.body))


def _pairs(sent, answered):
    """Each string sent, with the one answered at the same place."""
    if isinstance(sent, dict) and isinstance(answered, dict):
        for key, value in sent.items():
            if key in answered:
                yield from _pairs(value, answered[key])
    elif isinstance(sent, list) and isinstance(answered, list):
        for pair in zip(sent, answered, strict=False):
            yield from _pairs(*pair)
    elif isinstance(sent, str) and isinstance(answered, str):
        yield sent, answered


@schemathesis.check
def nothing_typed_is_dropped(ctx, response, case):
    """A value sent with an invisible character is kept with it (percent-encoded
    in a URL's path) or refused; never kept as if it had not been typed."""
    if not 200 <= response.status_code < 300 or not isinstance(case.body, dict):
        return None
    answered = response.json()
    if case.operation.path.endswith("/bulk") and isinstance(answered, dict):
        answered = {"links": [result.get("link") for result in answered.get("results", [])]}
    for sent, kept in _pairs(case.body, answered):
        without = "".join(char for char in sent if char not in INVISIBLE)
        if without != sent and kept != sent and kept.casefold() == without.casefold():
            raise AssertionError(f"{sent!r} was kept as {kept!r}: a character dropped, not refused")
    return None
