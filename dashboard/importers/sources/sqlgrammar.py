"""The SQL of a MySQL or MariaDB dump as importers/sources/sqldump.py reads
it: the patterns of its statements, names and values, matched where the
reading stands, their repetitions possessive (`*+`, `++`) so that no
character is read more than a bounded number of times; a value as it is;
the columns a CREATE TABLE defines."""

import re
from functools import cache

# The shapes of the dump's text. `_COMMENT`, `_STRING`, ... match only what
# is whole: whatever they cannot match yet is read again with more text.
# Strings are unrolled (a run of plain characters, then an escape and a run,
# ...), which Python's engine matches faster than an alternation.
_COMMENT = r"--(?=\s)[^\n]*+\n|\#[^\n]*+\n|/\*(?:[^*]++|\*(?!/))*+\*/"
_STRING = r"'[^'\\]*+(?:(?:\\.|'')[^'\\]*+)*+'"
_DOUBLE_QUOTED = r'"[^"\\]*+(?:(?:\\.|"")[^"\\]*+)*+"'
_BACKTICKED = r"`[^`]*+(?:``[^`]*+)*+`"
_NAME = rf"{_BACKTICKED}|\"[^\"]*+(?:\"\"[^\"]*+)*+\"|[\w$]++"

GAP = re.compile(rf"(?:\s++|{_COMMENT})*+")
# The rest of a statement up to its `;`: stops before a string or comment
# the window's end cuts, and before a `-` or `/` that could begin one.
_PLAIN = r"[^'\"`;/#-]*+"
REST = re.compile(
    rf"{_PLAIN}(?:(?:{_STRING}|{_DOUBLE_QUOTED}|{_BACKTICKED}|{_COMMENT}|/(?=[^*])|-(?=[^-]|-\S)){_PLAIN})*+", re.S
)
INSERT = re.compile(
    rf"(?:INSERT|REPLACE)\b(?:\s++(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE)\b)*+(?:\s++INTO\b)?\s*+({_NAME})\s*+"
    rf"(?:\(\s*+((?:(?:{_NAME})\s*+,\s*+)*+(?:{_NAME}))\s*+\)\s*+)?VALUES?\b",
    re.I,
)
INSERT_VERB = re.compile(r"(?:INSERT|REPLACE)\b", re.I)
CREATE = re.compile(
    rf"CREATE\s++(?:OR\s++REPLACE\s++)?(?:TEMPORARY\s++)?TABLE\s++(?:IF\s++NOT\s++EXISTS\s++)?({_NAME})\s*+\(", re.I
)
NAMES = re.compile(_NAME)
# A CREATE TABLE's body, token by token, each of which goes on to the end
# of the text when it is not closed (so that reading never starts over).
_DEFINITION_TOKEN = re.compile(
    r"('(?:[^'\\]++|\\.|'')*+(?:'|\\?\Z)|\"(?:[^\"\\]++|\\.|\"\")*+(?:\"|\\?\Z)|`(?:[^`]++|``)*+(?:`|\Z)"
    r"|--(?=\s)[^\n]*+|\#[^\n]*+|/\*(?:[^*]++|\*(?!/))*+(?:\*/|\Z))|(\s++)|([\w$]++)|(.)",
    re.S,
)
# What begins a CREATE TABLE's definition that is not a column's.
_NOT_COLUMNS = {"PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK", "PERIOD"}


def _value(*, whole: bool) -> str:
    """A value of a row, in a group: a string (its escapes left in), X'...',
    0x..., NULL or a number; a character set's introducer before it (MySQL
    8's _binary) is left out. Not `whole`: a string or X'...' the window's
    end cuts matches up to it."""
    end, hex_end = ("'", "'") if whole else (r"(?:'|\\?\Z)", r"(?:'|\Z)")
    return (
        r"(?:_[A-Za-z0-9]++\s*+)?"
        rf"('[^'\\]*+(?:(?:\\.|'')[^'\\]*+)*+{end}"
        rf"|[xX]'[0-9a-fA-F]*+{hex_end}"
        r"|0x[0-9a-fA-F]++"
        r"|NULL|[-+]?(?:[0-9]++(?:\.[0-9]*+)?|\.[0-9]++)(?:[eE][-+]?[0-9]++)?)"
    )


VALUE = re.compile(_value(whole=False), re.S)


@cache
def row_pattern(width: int) -> re.Pattern:
    """A whole row of `width` values (a group each) and the `,` or `;` after it (the last group)."""
    value = rf"\s*+{_value(whole=True)}\s*+"
    return re.compile(rf"\s*+\({','.join([value] * width)}\)\s*+([,;])", re.S)


_ESCAPE = re.compile(r"\\(.)|''", re.S)
# MySQL's escapes; \% and \_ keep their backslash, any other \c is c.
_ESCAPED = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}


def _unescape(match: re.Match) -> str:
    char = match[1]
    return "'" if char is None else _ESCAPED.get(char, char)


def _hex_text(digits: str) -> str:
    return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits).decode("utf-8", "replace")


def _converted(token: str) -> str | None:
    """A value as it is: a string unescaped, hex digits decoded as UTF-8
    text, NULL as None, a number as written."""
    if token[0] == "'":
        return _ESCAPE.sub(_unescape, token[1:-1])
    if token == "NULL":
        return None
    if token[0] in "xX":
        return _hex_text(token[2:-1])
    if token.startswith("0x"):
        return _hex_text(token[2:])
    return token


def values(tokens: tuple[str, ...]) -> list[str | None]:
    # Most values are strings without an escape, taken as they are.
    return [
        token[1:-1] if token[0] == "'" and "\\" not in token and token.find("''", 1, -1) < 0 else _converted(token)
        for token in tokens
    ]


def unquoted(name: str) -> str:
    if name[:1] == "`":
        return name[1:-1].replace("``", "`")
    if name[:1] == '"':
        return name[1:-1].replace('""', '"')
    return name


def columns(body: str) -> list[str]:
    """The columns a CREATE TABLE's body (after its opening parenthesis)
    defines, in order; its keys and constraints left out."""
    names, depth, first = [], 0, True
    for match in _DEFINITION_TOKEN.finditer(body):
        quoted, space, word, char = match.groups()
        if space is not None or (quoted is not None and quoted[0] in "-#/"):
            continue
        if first and depth == 0:
            if quoted is not None and quoted[0] in '`"':
                names.append(unquoted(quoted))
            elif word is not None and word.upper() not in _NOT_COLUMNS:
                names.append(word)
        first = False
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                break
            depth -= 1
        elif char == "," and depth == 0:
            first = True
    return names
