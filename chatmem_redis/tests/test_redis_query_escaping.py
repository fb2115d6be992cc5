"""RediSearch escaping helpers: pure tests, plus a round trip of every ASCII punctuation
character through a real index (an escaped value must match itself and nothing else)."""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import pytest

from chatmem.core import InvalidArgumentError, UserMessage
from chatmem.redis import (
    MetadataField,
    escape_tag,
    format_number,
    tag_query,
    text_query,
    text_terms,
)

pytestmark = pytest.mark.backend("redis")


def test_escape_tag_escapes_every_ascii_punctuation_and_space() -> None:
    for c in string.punctuation.replace("_", "") + " \t":
        assert escape_tag(f"a{c}b") == f"a\\{c}b"


def test_escape_tag_keeps_letters_digits_underscore_and_non_ascii() -> None:
    assert escape_tag("Ab_09") == "Ab_09"
    assert escape_tag("naïve😀") == "naïve😀"  # a backslash before non-ASCII breaks matching


def test_escape_tag_rejects_empty_and_non_str() -> None:
    with pytest.raises(InvalidArgumentError):
        escape_tag("")
    with pytest.raises(InvalidArgumentError):
        escape_tag(3)  # type: ignore[arg-type]


def test_tag_query_cannot_be_closed_early() -> None:
    q = tag_query("metadata_priority", "high} | @metadata_priority:{low")
    assert q == r"@metadata_priority:{high\}\ \|\ \@metadata_priority\:\{low}"


def test_text_terms_split_like_the_indexer() -> None:
    assert text_terms("hello, world!") == ["hello", "world"]
    assert text_terms("and/or a|b c\\d e?f") == ["and", "or", "a", "b", "c", "d", "e", "f"]
    assert text_terms("snake_case naïve 😀") == ["snake_case", "naïve", "😀"]
    assert text_terms(") | @message_type:{SYSTEM} (") == ["message_type", "SYSTEM"]
    assert text_terms("!!! ...") == []


def test_text_query_has_no_syntax_from_the_caller() -> None:
    assert text_query("content", "x) | (@a:{b") == "@content:(x a b)"
    assert text_query("content", "-*%~") is None
    assert text_query("content", "%_%") == "@content:(\\_)"  # a lone "_" is a syntax error


@pytest.mark.parametrize("value", [True, float("nan"), float("inf"), "1", None, [1]])
def test_format_number_rejects_non_numbers(value: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        format_number(value)


def test_format_number_formats_ints_and_floats() -> None:
    assert format_number(3) == "3"
    assert format_number(-2.5) == "-2.5"
    assert format_number(1e-7) == "1e-07"
    assert format_number(10**20) == str(10**20)


def test_every_escaped_tag_matches_itself_only_on_a_real_index(
    make_repository: Callable[..., Any],
) -> None:
    repo = make_repository(metadata_fields=[MetadataField.tag("k")])
    values = [f"a{c}b" for c in string.punctuation + " "] + ["a", "A", "a ", " a", "naïve"]
    repo.save_all("tags", [UserMessage(v, metadata={"k": v}) for v in values])
    for v in values:
        hits = repo.find_by_metadata("k", v)
        assert [h.message.text for h in hits] == [v], v
