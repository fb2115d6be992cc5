"""The bad-input corpus: conversation ids, message fields, metadata, identifiers, queries.

Each case is a list of writes (id, messages) or a callable that must raise. Expectation:

- ``reject``: a typed ``InvalidArgumentError`` before any I/O (nothing written);
- ``roundtrip``: every write reads back exactly, each id is its own conversation;
- ``either``: one of the two (values a store may legitimately refuse, e.g. 2**64).

The test (``test_corpus.py``) checks a canary conversation after every case.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chatmem.core import (
    AssistantMessage,
    Media,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

INJECTIONS = {
    "sql": "x'); DROP TABLE chat_memory; --",
    "sql_comment": "a/*b*/' OR '1'='1",
    "like_wildcards": "%_%\\",
    "cql": "x' IF EXISTS; DROP KEYSPACE chatmem_test; --",
    "cypher": "x'}) MATCH (n) DETACH DELETE n //",
    "redisearch_tag": "high} | @x:{low",
    "redisearch_text": "@text:(x) | * -y ~z",
    "redis_tag_chars": "a,b|c{d}*?[e]",
    "mongo_dollar": "$where",
    "mongo_dotted": "a.b.$c",
    "json": '{"$ne": null}',
    "glob": "*",
}


@dataclass(frozen=True)
class Case:
    """One corpus case; ``build`` is called when the case runs (constructors may raise)."""

    name: str
    expect: str  # "reject" | "roundtrip" | "either"
    build: Callable[[], list[tuple[Any, Any]]]
    group: str = "ids"
    notes: dict[str, Any] = field(default_factory=dict)


def _one(cid: Any, text: str = "hello") -> Callable[[], list[tuple[Any, Any]]]:
    return lambda: [(cid, [UserMessage(text), AssistantMessage(f"re: {text}")])]


def _pair(a: str, b: str) -> Callable[[], list[tuple[Any, Any]]]:
    """Two ids that must be two conversations (each reads back only its own message)."""
    return lambda: [(a, [UserMessage(f"in {a!r}")]), (b, [UserMessage(f"in {b!r}")])]


def _msg(factory: Callable[[], Message | list[Any] | Any]) -> Callable[[], list[tuple[Any, Any]]]:
    def build() -> list[tuple[Any, Any]]:
        made = factory()
        return [("corpus-msg", made if isinstance(made, list) else [made])]

    return build


def _meta(value: Any, key: str = "v") -> Callable[[], list[tuple[Any, Any]]]:
    return _msg(lambda: UserMessage("meta", metadata={key: value}))


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"n": value}
    return value


NAIVE_NFC = unicodedata.normalize("NFC", "naïve")
NAIVE_NFD = unicodedata.normalize("NFD", "naïve")

ID_CASES = [
    Case("id_case_differs", "roundtrip", _pair("Conv", "conv")),
    Case("id_trailing_space", "roundtrip", _pair("x", "x ")),
    Case("id_leading_space", "roundtrip", _pair("y", " y")),
    Case("id_nfc_vs_nfd", "roundtrip", _pair(NAIVE_NFC, NAIVE_NFD)),
    Case("id_accent_vs_plain", "roundtrip", _pair(NAIVE_NFC, "naive")),
    Case("id_fullwidth_vs_ascii", "roundtrip", _pair("\uff21", "A")),
    Case("id_zero_width_joiner", "roundtrip", _pair("a\u200bb", "ab")),
    Case("id_255_chars", "roundtrip", _one("i" * 255)),
    Case("id_256_chars", "reject", _one("i" * 256)),
    Case("id_255_two_byte_chars", "roundtrip", _one("é" * 255)),
    Case("id_255_emoji", "roundtrip", _one("\U0001f642" * 255)),
    Case("id_tab", "roundtrip", _one("a\tb")),
    Case("id_newline", "roundtrip", _one("a\nb\r\n")),
    Case("id_control_chars", "roundtrip", _one("\x01\x1b[31m\x7f")),
    Case("id_whitespace_only", "roundtrip", _one("   ")),
    Case("id_nul", "reject", _one("a\x00b")),
    Case("id_lone_surrogate", "reject", _one("a\ud800")),
    Case("id_empty", "reject", _one("")),
    Case("id_none", "reject", _one(None)),
    Case("id_int", "reject", _one(42)),
    Case("id_mongo_ne_operator", "reject", _one({"$ne": None})),
    Case("id_mongo_gt_operator", "reject", _one({"$gt": ""})),
    Case("id_list", "reject", _one(["a"])),
    Case("id_bytes", "reject", _one(b"a")),
    Case("id_bool", "reject", _one(True)),
    Case("id_float", "reject", _one(1.5)),
    *[Case(f"id_injection_{k}", "roundtrip", _one(v)) for k, v in INJECTIONS.items()],
    Case("id_quotes_backticks", "roundtrip", _one("\"'`\\")),
    Case("id_key_prefix_lookalike", "roundtrip", _one("chat-memory:other")),
]

MESSAGE_CASES = [
    Case("text_empty", "roundtrip", _msg(lambda: UserMessage("")), "messages"),
    Case("text_100k", "roundtrip", _msg(lambda: UserMessage("x" * 100_000)), "messages"),
    Case("text_nul", "reject", _msg(lambda: UserMessage("a\x00b")), "messages"),
    Case("text_lone_surrogate", "reject", _msg(lambda: UserMessage("\udfff")), "messages"),
    Case("text_control_chars", "roundtrip", _msg(lambda: UserMessage("\x01\x02\x1f")), "messages"),
    *[
        Case(f"text_injection_{k}", "roundtrip", _msg(lambda v=v: UserMessage(v)), "messages")
        for k, v in INJECTIONS.items()
    ],
    Case("text_int", "reject", _msg(lambda: UserMessage(42)), "messages"),  # type: ignore[arg-type]
    Case("text_none_user", "reject", _msg(lambda: UserMessage(None)), "messages"),  # type: ignore[arg-type]
    Case(
        "assistant_tool_calls_only",
        "roundtrip",
        _msg(lambda: AssistantMessage(None, tool_calls=(ToolCall(id="1", name="f"),))),
        "messages",
    ),
    Case(
        "tool_arguments_not_json",
        "roundtrip",
        _msg(
            lambda: AssistantMessage("t", tool_calls=(ToolCall(id="1", name="f", arguments="{x"),))
        ),
        "messages",
    ),
    Case(
        "tool_response_injection",
        "roundtrip",
        _msg(
            lambda: ToolResponseMessage(
                (ToolResponse(id="'; --", name="$ne", response_data=INJECTIONS["cypher"]),)
            )
        ),
        "messages",
    ),
    Case(
        "media_all_bytes",
        "roundtrip",
        _msg(lambda: UserMessage("m", media=(Media(mime_type="a/b", data=bytes(range(256))),))),
        "messages",
    ),
    Case(
        "media_data_int",
        "reject",
        _msg(lambda: UserMessage("m", media=(Media(mime_type="a/b", data=7),))),  # type: ignore[arg-type]
        "messages",
    ),
    Case("messages_none", "reject", lambda: [("corpus-msg", None)], "messages"),
    Case("messages_none_element", "reject", lambda: [("corpus-msg", [None])], "messages"),
    Case("messages_dict", "reject", lambda: [("corpus-msg", [{"role": "user"}])], "messages"),
    Case("messages_str", "reject", lambda: [("corpus-msg", "hello")], "messages"),
]

METADATA_CASES = [
    Case("meta_int64_max", "roundtrip", _meta(2**63 - 1), "metadata"),
    Case("meta_int64_min", "roundtrip", _meta(-(2**63)), "metadata"),
    Case("meta_2_pow_53_plus_1", "roundtrip", _meta(2**53 + 1), "metadata"),
    Case("meta_2_pow_64", "either", _meta(2**64), "metadata"),
    Case("meta_below_int64", "either", _meta(-(2**63) - 1), "metadata"),
    Case("meta_2_pow_100", "either", _meta(2**100), "metadata"),
    Case("meta_negative_zero", "either", _meta(-0.0), "metadata"),
    Case("meta_1e16", "roundtrip", _meta(1e16), "metadata"),
    Case("meta_float_one_stays_float", "roundtrip", _meta(1.0), "metadata"),
    Case("meta_subnormal", "either", _meta(5e-324), "metadata"),
    Case("meta_nan", "reject", _meta(float("nan")), "metadata"),
    Case("meta_inf", "reject", _meta(float("inf")), "metadata"),
    Case("meta_nested_60", "roundtrip", _meta(_nested(60)), "metadata"),
    Case("meta_nested_100", "reject", _meta(_nested(100)), "metadata"),
    Case("meta_non_str_key", "reject", _meta({1: "a"}), "metadata"),
    Case("meta_set_value", "reject", _meta({1, 2}), "metadata"),
    Case("meta_bytes_value", "reject", _meta(b"x"), "metadata"),
    Case("meta_operator_keys", "either", _meta({"$ne": 1, "a.b": 2}), "metadata"),
    Case("meta_empty_key", "either", _meta("v", key=""), "metadata"),
    *[Case(f"meta_inject_{k}", "roundtrip", _meta(v), "metadata") for k, v in INJECTIONS.items()],
]  # fmt: skip

BAD_IDENTIFIERS = {
    "ident_semicolon_drop": "x; DROP TABLE y",
    "ident_backticks": "`t`",
    "ident_double_quotes": '"t"',
    "ident_single_quote": "t'--",
    "ident_unicode": "tablé",
    "ident_space": "t t",
    "ident_too_long": "t" * 300,
    "ident_empty": "",
    "ident_non_str": 42,
}

IDENTIFIER_OPTIONS = {
    "sqlite": ("table_name",),
    "postgres": ("table_name",),
    "mariadb": ("table_name",),
    "mssql": ("table_name",),
    "oracle": ("table_name",),
    "redis": ("key_prefix", "index_name"),
    "mongo": ("collection_name",),
    "cassandra": ("keyspace", "table_name"),
    "neo4j": ("session_label", "message_label", "metadata_label"),
}
"""Which construction options of each backend name store objects (validated before I/O)."""

CASES = ID_CASES + MESSAGE_CASES + METADATA_CASES
