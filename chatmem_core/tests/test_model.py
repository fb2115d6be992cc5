"""Messages, the JSON codec, validation rules and the error tree (no store needed)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from chatmem.core import (
    AssistantMessage,
    BackendError,
    ChatMemoryError,
    InvalidArgumentError,
    InvalidIdentifierError,
    Media,
    MissingDependencyError,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
    repository_from_url,
)
from chatmem.core._validation import (
    cql_identifier,
    cypher_label,
    index_name,
    redis_key_prefix,
    sql_identifier,
)
from chatmem.core.backend import decode_json, encode_json, from_micros, to_micros
from chatmem.testing.corpus import full_corpus


def test_codec_round_trips_every_kind_and_field() -> None:
    for m in full_corpus():
        assert decode_json(encode_json(m)) == m
        d = message_to_dict(m)
        assert json.loads(json.dumps(d)) == d
        assert message_from_dict(d) == m


def test_trusted_decoding_equals_validated_decoding() -> None:
    ts = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for m in full_corpus():
        d = json.loads(encode_json(m))
        fast = message_from_dict(d, created_at=ts, position=1, trusted=True)
        slow = message_from_dict(json.loads(encode_json(m)), created_at=ts, position=1)
        assert fast == slow == m and type(fast) is type(m)
        assert (fast.created_at, fast.position) == (ts, 1) and fast.text == m.text


def test_codec_attaches_store_fields_without_changing_equality() -> None:
    ts = datetime(2024, 1, 1, tzinfo=timezone.utc)
    m = decode_json(encode_json(UserMessage("x")), created_at=ts, position=7)
    assert (m.created_at, m.position) == (ts, 7) and m == UserMessage("x")


def test_codec_rejects_unknown_format_versions() -> None:
    with pytest.raises(ChatMemoryError):
        message_from_dict({"v": 99, "type": "USER", "text": "x"})


def test_messages_are_immutable_and_equal_by_content() -> None:
    a = UserMessage("x", metadata={"k": [1]})
    with pytest.raises(AttributeError):
        a.text = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.metadata["k"] = 2  # type: ignore[index]
    assert a == UserMessage("x", metadata={"k": [1]}, position=3)
    assert a != AssistantMessage("x", metadata={"k": [1]})


def test_metadata_is_copied_from_the_caller() -> None:
    md = {"k": [1]}
    m = UserMessage("x", metadata=md)
    md["k"].append(2)
    assert m.metadata["k"] == [1]


@pytest.mark.parametrize(
    "metadata",
    [{1: "x"}, {"k": float("nan")}, {"k": object()}, {"k": b"bytes"}, {"k": {2: 3}}, "str"],
    ids=["int-key", "nan", "object", "bytes", "nested-int-key", "not-a-mapping"],
)
def test_non_json_metadata_is_rejected(metadata: object) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        UserMessage("x", metadata=metadata)  # type: ignore[arg-type]
    assert info.value.argument == "metadata"


@pytest.mark.parametrize(
    "text", ["nul\x00inside", "lone \ud800 surrogate"], ids=["nul", "surrogate"]
)
def test_text_no_store_can_hold_is_rejected_up_front(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        UserMessage(text)
    assert info.value.argument == "text"


def test_part_validation_names_the_field() -> None:
    with pytest.raises(InvalidArgumentError, match=r"tool_call\.name"):
        ToolCall(id="1", name=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"media\.data"):
        Media(mime_type="image/png", data=123)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="tool_calls"):
        AssistantMessage("x", tool_calls=["not a call"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="responses"):
        ToolResponseMessage(["nope"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError, match="created_at"):
        UserMessage("x", created_at=datetime(2024, 1, 1))
    with pytest.raises(InvalidArgumentError, match="text"):
        SystemMessage(None)  # type: ignore[arg-type]


def test_created_at_is_normalised_to_utc() -> None:
    local = datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    assert UserMessage("x", created_at=local).created_at == datetime(
        2024, 1, 1, 10, tzinfo=timezone.utc
    )


def test_micros_are_exact() -> None:
    ts = datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=timezone.utc)
    assert from_micros(to_micros(ts)) == ts
    assert to_micros(datetime(1970, 1, 1, tzinfo=timezone.utc)) == 0


@pytest.mark.parametrize(
    "check, good, bad",
    [
        (
            sql_identifier,
            ["ai_chat_memory", "_t", "T1"],
            ["1t", "a-b", "a b", "a;drop", "x" * 64, ""],
        ),
        (cql_identifier, ["chat_memory", "K1"], ["_k", "1k", "k-1", "x" * 49, 'a"b']),
        (
            cypher_label,
            ["Session", "_Msg", "M1"],
            ["1Session", "Session Label", "Session-Label", "A`B", "A(B", ""],
        ),
        (redis_key_prefix, ["chat-memory:", "a.b_c"], ["", "a b", "a*", "a{b}", "x" * 65]),
        (index_name, ["chat-memory-idx"], ["", "a b", "a:b", "a*"]),
    ],
)
def test_identifier_rules(check, good: list[str], bad: list[object]) -> None:  # type: ignore[no-untyped-def]
    for g in good:
        assert check(g) == g
    for b in bad:
        with pytest.raises(InvalidIdentifierError):
            check(b)


def test_error_tree() -> None:
    assert issubclass(InvalidArgumentError, ValueError)
    assert issubclass(InvalidIdentifierError, InvalidArgumentError)
    assert issubclass(MissingDependencyError, ImportError)
    assert issubclass(BackendError, ChatMemoryError)
    err = MissingDependencyError("redis", "redis")
    assert str(err) == 'chatmem needs the "redis" package: pip install "chatmem[redis]"'


def test_unknown_url_scheme_lists_the_known_ones() -> None:
    with pytest.raises(InvalidArgumentError, match=r"known schemes: .*postgresql.*sqlite"):
        repository_from_url("ftp://nowhere")
    with pytest.raises(InvalidArgumentError):
        repository_from_url("not a url")


def test_memory_url_gives_an_in_memory_repository() -> None:
    repo = repository_from_url("memory://")
    repo.save_all("x", [UserMessage("hi")])
    assert repo.find_by_conversation_id("x") == [UserMessage("hi")]


def test_nested_metadata_is_deeply_read_only_yet_equal_to_plain_json() -> None:
    import copy
    import pickle

    m = UserMessage("x", metadata={"l": [1, {"d": [2]}], "m": {"k": "v"}})
    for mutate in (
        lambda: m.metadata["l"].append(3),
        lambda: m.metadata["l"][1]["d"].append(3),
        lambda: m.metadata["m"].update(k="w"),
        lambda: m.metadata["m"].__setitem__("k", "w"),
    ):
        with pytest.raises(TypeError):
            mutate()
    assert m.metadata == {"l": [1, {"d": [2]}], "m": {"k": "v"}}
    assert json.loads(json.dumps(dict(m.metadata))) == {"l": [1, {"d": [2]}], "m": {"k": "v"}}
    assert pickle.loads(pickle.dumps(m)) == m and copy.deepcopy(m) == m
    decoded = message_from_dict(message_to_dict(m), trusted=True)
    with pytest.raises(TypeError):
        decoded.metadata["l"].append(3)
