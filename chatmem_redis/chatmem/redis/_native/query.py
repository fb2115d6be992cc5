"""RediSearch query building: every caller value is escaped for its field type.

Pure functions, tested on their own. Escaping rules verified against RediSearch 2.10
(DIALECT 2): inside ``{...}`` a backslash before any ASCII punctuation or space makes it
literal; a backslash before a non-ASCII character breaks the match, so only ASCII is
escaped. Text is tokenised here the way the indexer tokenises (every ASCII character
other than letters, digits and ``_`` separates words), so no query syntax survives.
"""

from __future__ import annotations

import math
import re

from chatmem.core import InvalidArgumentError

_TAG_SAFE = re.compile(r"[A-Za-z0-9_]")
_WORD = re.compile(r"(?:[A-Za-z0-9_]|[^\x00-\x7f])+")


def escape_tag(value: str) -> str:
    """``value`` as one literal TAG value (use inside ``@field:{...}``)."""
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError("value", "a tag value must be a non-empty str")
    return "".join(c if ord(c) > 0x7F or _TAG_SAFE.match(c) else "\\" + c for c in value)


def tag_query(attribute: str, value: str) -> str:
    """``@attribute:{value}`` matching exactly ``value``."""
    return f"@{attribute}:{{{escape_tag(value)}}}"


def text_terms(text: str) -> list[str]:
    """The words of ``text`` as the indexer splits them; each is safe in a query."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a str, got {type(text).__name__}")
    return _WORD.findall(text)


def text_query(attribute: str, text: str) -> str | None:
    """``@attribute:(w1 w2 ...)`` (every word must occur); None when ``text`` has no word."""
    words = text_terms(text)
    # "_" is part of a word for the indexer, but the query parser rejects a word that is
    # only "_" (a syntax error); escaped, it matches the same token.
    escaped = [w.replace("_", "\\_") for w in words]
    return f"@{attribute}:({' '.join(escaped)})" if words else None


def format_number(value: object, argument: str = "value") -> str:
    """A finite int or float as RediSearch numeric syntax (bools and NaN rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(argument, f"must be an int or float, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgumentError(argument, "must be finite")
    return repr(float(value)) if isinstance(value, float) else str(value)


def numeric_range(attribute: str, low: object, high: object) -> str:
    """``@attribute:[low high]``, both ends inclusive."""
    return f"@{attribute}:[{format_number(low, 'low')} {format_number(high, 'high')}]"
