"""Text that cannot be kept, and characters that cannot be seen.

A Python string can hold what nothing downstream can: a lone surrogate
(half of a UTF-16 pair, which JSON's "\\ud800" escape decodes to) has no
UTF-8 bytes, so PostgreSQL, Redis and every response refuse it, and
PostgreSQL's text holds no NUL. `check_storable` refuses either with a
ValidationError, before the text reaches an encoder that would raise.

`invisible` is decided by Unicode property, not by a list: a format
character (general category Cf: zero-width spaces and joiners, bidi
controls, the byte order mark, tag characters), or one that IDNA's mapping
(UTS #46, the table the `idna` package ships) ignores, that is maps to
nothing: the Hangul fillers, the variation selectors, the combining
grapheme joiner, the Mongolian free variation selectors. Over assigned code
points the two cover Unicode's Default_Ignorable_Code_Point, which Python's
unicodedata does not expose; that is also what NFKC_Casefold removes.
"""

import re
import unicodedata
from typing import Any

import idna
from django.core.exceptions import ValidationError

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable(value: str) -> str | None:
    """The first NUL or lone surrogate of `value`, or None."""
    found = _UNSTORABLE.search(value)
    return found[0] if found else None


def unstorable_in(value: Any) -> str | None:
    """The first NUL or lone surrogate anywhere in a decoded JSON value, its keys included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if char := unstorable(item):
                return char
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def refusal(char: str) -> ValidationError:
    """The ValidationError for text holding `char`, one that unstorable found;
    its codes are Django's and DRF's for the same refusals."""
    if char == "\x00":
        return ValidationError("Null characters are not allowed.", code="null_characters_not_allowed")
    return ValidationError(
        "Surrogate characters are not allowed: %(char)s is half of a UTF-16 pair, not a character. Send text "
        "as UTF-8, or a character beyond U+FFFF as both halves of its pair.",
        code="surrogate_characters_not_allowed",
        params={"char": f"U+{ord(char):04X}"},
    )


def check_storable(value: Any) -> None:
    """Raises `refusal` for a string or decoded JSON value holding a NUL or a lone surrogate."""
    if char := unstorable_in(value):
        raise refusal(char)


def invisible(char: str) -> bool:
    if char.isascii():
        return False
    if unicodedata.category(char) == "Cf":
        return True
    try:
        return idna.uts46_remap(char, std3_rules=False) == ""
    except idna.IDNAError:  # disallowed in host names altogether: not ours to judge here
        return False


def first_invisible(value: str) -> str | None:
    if value.isascii():
        return None
    return next((char for char in value if invisible(char)), None)


def describe(char: str) -> str:
    """A character as a message names it: U+3164 (HANGUL FILLER)."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} ({name})" if name else f"U+{ord(char):04X}"


def shown(value: str) -> str:
    """`value` as a message can quote it: every character that cannot be
    stored or seen written as its Python escape (\\ud800, \\u3164), the
    rest as it is."""
    if value.isascii() and value.isprintable():
        return value
    return "".join(ascii(char)[1:-1] if invisible(char) or not char.isprintable() else char for char in value)
