"""Redis-specific advanced queries (metadata fields, raw queries, RediSearch escaping);
the generic search behaviour is the shared suite's search capability tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    InvalidArgumentError,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.redis import AdvancedRedisChatMemoryRepository, MetadataField

pytestmark = pytest.mark.backend("redis")

T0 = datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
FIELDS = [
    MetadataField.tag("priority"),
    MetadataField.numeric("score"),
    MetadataField.text("note"),
]


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def repo(make_repository: Callable[..., Any]) -> Any:
    repo = make_repository(metadata_fields=FIELDS)
    repo.save_all(
        "Conv-1",
        [
            SystemMessage("You are terse.", created_at=at(0)),
            UserMessage(
                "What is the weather in Paris?",
                metadata={"priority": "high", "score": 3, "note": "first question"},
                created_at=at(1),
            ),
            AssistantMessage(
                None,
                tool_calls=[ToolCall(id="c1", name="weather", arguments='{"city":"Paris"}')],
                created_at=at(2),
            ),
            ToolResponseMessage(
                [ToolResponse(id="c1", name="weather", response_data="sunny 21C")],
                created_at=at(3),
            ),
            AssistantMessage("Sunny, 21 degrees.", metadata={"score": 4.5}, created_at=at(4)),
        ],
    )
    repo.save_all(
        "conv-1",  # differs only in case: a different conversation
        [
            UserMessage("Weather in Rome?", metadata={"priority": "low", "score": 3},
                        created_at=at(10)),
            AssistantMessage("Rainy.", metadata={"priority": "High"}, created_at=at(11)),
        ],
    )  # fmt: skip
    return repo


def texts(hits: list[Any]) -> list[tuple[str, str | None]]:
    return [(h.conversation_id, h.message.text) for h in hits]


def test_repository_implements_the_advanced_protocol(repo: Any) -> None:
    assert isinstance(repo, AdvancedRedisChatMemoryRepository)


def test_find_by_metadata_tag_is_exact_and_case_sensitive(repo: Any) -> None:
    assert texts(repo.find_by_metadata("priority", "high")) == [
        ("Conv-1", "What is the weather in Paris?")
    ]
    assert texts(repo.find_by_metadata("priority", "High")) == [("conv-1", "Rainy.")]
    assert repo.find_by_metadata("priority", "hig") == []


def test_find_by_metadata_numeric_uses_numbers(repo: Any) -> None:
    assert texts(repo.find_by_metadata("score", 3)) == [
        ("Conv-1", "What is the weather in Paris?"),
        ("conv-1", "Weather in Rome?"),
    ]
    assert texts(repo.find_by_metadata("score", 4.5)) == [("Conv-1", "Sunny, 21 degrees.")]
    assert repo.find_by_metadata("score", 3.01) == []


def test_find_by_metadata_text(repo: Any) -> None:
    assert texts(repo.find_by_metadata("note", "question")) == [
        ("Conv-1", "What is the weather in Paris?")
    ]


def test_find_by_metadata_validates_key_and_value_type(repo: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="not an indexed metadata field"):
        repo.find_by_metadata("unknown", "x")
    with pytest.raises(InvalidArgumentError):
        repo.find_by_metadata("score", "3")
    with pytest.raises(InvalidArgumentError):
        repo.find_by_metadata("score", True)
    with pytest.raises(InvalidArgumentError):
        repo.find_by_metadata("priority", {"$ne": None})


@pytest.mark.parametrize(
    "value",
    [
        "high} | @metadata_priority:{low",
        "high}|@metadata_priority:{low",
        "*",
        "high | low",
        "high\\} | @metadata_priority:\\{low",
    ],
)
def test_tag_injection_matches_nothing(repo: Any, value: str) -> None:
    assert repo.find_by_metadata("priority", value) == []


@pytest.mark.parametrize(
    "text",
    [
        "nothing) | (@message_type:{SYSTEM}",
        "zzz | *",
        "zzz -@content:zzz",
        "@conversation_key:{*}",
    ],
)
def test_content_injection_matches_nothing(repo: Any, text: str) -> None:
    assert repo.find_by_content(text) == []


def test_execute_query_runs_a_raw_query_on_this_index(repo: Any) -> None:
    hits = repo.execute_query("@message_type:{USER} @metadata_score:[3 3]")
    assert texts(hits) == [
        ("Conv-1", "What is the weather in Paris?"),
        ("conv-1", "Weather in Rome?"),
    ]
    assert len(repo.execute_query("*", limit=100)) == 7
    with pytest.raises(InvalidArgumentError):
        repo.execute_query("  ")


@pytest.mark.parametrize("limit", [0, -1, True, "3", 2.0, None])
def test_limits_must_be_positive_ints(repo: Any, limit: Any) -> None:
    for call in (
        lambda: repo.find_by_type("USER", limit=limit),
        lambda: repo.find_by_content("weather", limit=limit),
        lambda: repo.find_by_time_range(None, None, limit=limit),
        lambda: repo.find_by_metadata("score", 3, limit=limit),
        lambda: repo.execute_query("*", limit=limit),
    ):
        with pytest.raises(InvalidArgumentError, match="limit"):
            call()


def test_values_of_the_wrong_type_stay_in_history_and_out_of_the_index(
    make_repository: Callable[..., Any],
) -> None:
    repo = make_repository(metadata_fields=FIELDS)
    odd = [
        UserMessage("a", metadata={"score": "high", "priority": 7, "note": 1.5}),
        UserMessage("b", metadata={"score": True, "priority": True, "note": None}),
        UserMessage("c", metadata={"score": 10**30, "priority": ["x"], "note": {"k": "v"}}),
        UserMessage("d", metadata={"score": 2.0, "priority": "", "note": ""}),
    ]
    repo.save_all("odd", odd)
    assert repo.find_by_conversation_id("odd") == odd
    got = repo.find_by_conversation_id("odd")
    assert type(got[2].metadata["score"]) is int and got[2].metadata["score"] == 10**30
    assert type(got[3].metadata["score"]) is float
    assert texts(repo.find_by_metadata("priority", 7)) == [("odd", "a")]
    assert texts(repo.find_by_metadata("priority", True)) == [("odd", "b")]
    assert texts(repo.find_by_metadata("score", 10**30)) == [("odd", "c")]
    assert texts(repo.find_by_metadata("score", 2)) == [("odd", "d")]
    assert len(repo.execute_query("*")) == 4  # every document indexed, none failed
