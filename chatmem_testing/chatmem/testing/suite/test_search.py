"""Search, for backends claiming ``Capability.SEARCH``: ``find_by_type``,
``find_by_content`` and ``find_by_time_range`` return hits (conversation id, message,
creation time) oldest first, bounded by ``limit``, with user text matched literally."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    InvalidArgumentError,
    MessageType,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from chatmem.core.backend import BaseChatMemoryRepository, Capability

Repo = BaseChatMemoryRepository
T0 = datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc)
SEARCH = pytest.mark.capability(Capability.SEARCH)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def seeded(repo: BaseChatMemoryRepository) -> Any:
    """``repo`` holding two conversations whose ids differ only in case."""
    repo.save_all(
        "Conv-1",
        [
            SystemMessage("You are terse.", created_at=at(0)),
            UserMessage("What is the weather in Paris?", created_at=at(1)),
            AssistantMessage(
                None,
                tool_calls=(ToolCall(id="c1", name="weather", arguments='{"city":"Paris"}'),),
                created_at=at(2),
            ),
            ToolResponseMessage(
                (ToolResponse(id="c1", name="weather", response_data="sunny 21C"),),
                created_at=at(3),
            ),
            AssistantMessage("Sunny, 21 degrees.", created_at=at(4)),
        ],
    )
    repo.save_all(
        "conv-1",
        [UserMessage("Weather in Rome?", created_at=at(10)),
         AssistantMessage("Rainy.", created_at=at(11))],
    )  # fmt: skip
    return repo


def hits(found: list[Any]) -> list[tuple[str, str | None]]:
    return [(h.conversation_id, h.message.text) for h in found]


@SEARCH
def test_search_find_by_type(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    assert hits(searchable.find_by_type(MessageType.USER)) == [
        ("Conv-1", "What is the weather in Paris?"),
        ("conv-1", "Weather in Rome?"),
    ]
    assert hits(searchable.find_by_type("ASSISTANT", conversation_id="conv-1")) == [
        ("conv-1", "Rainy.")
    ]
    assert [h.message for h in searchable.find_by_type("TOOL")] == [
        ToolResponseMessage((ToolResponse(id="c1", name="weather", response_data="sunny 21C"),))
    ]


@SEARCH
def test_search_hits_carry_conversation_message_and_timestamp(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    [hit] = searchable.find_by_type("SYSTEM")
    assert hit.conversation_id == "Conv-1"
    assert hit.message == SystemMessage("You are terse.")
    assert hit.created_at == at(0) == hit.message.created_at
    assert hit.message.position == 0


@SEARCH
def test_search_find_by_content_matches_every_word(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    assert hits(searchable.find_by_content("weather")) == [
        ("Conv-1", "What is the weather in Paris?"),
        ("conv-1", "Weather in Rome?"),
    ]
    assert hits(searchable.find_by_content("weather, Paris!")) == [
        ("Conv-1", "What is the weather in Paris?")
    ]
    assert searchable.find_by_content("weather", conversation_id="CONV-1") == []


@SEARCH
def test_search_find_by_content_searches_tool_results(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    assert [h.message.message_type for h in searchable.find_by_content("sunny")] == [
        MessageType.TOOL,
        MessageType.ASSISTANT,
    ]


@SEARCH
def test_search_find_by_time_range_is_inclusive_and_optionally_per_conversation(
    search_repository: Repo,
) -> None:
    searchable = seeded(search_repository)
    assert len(searchable.find_by_time_range(at(1), at(3))) == 3
    assert len(searchable.find_by_time_range(at(1), None)) == 6
    assert len(searchable.find_by_time_range(None, at(0))) == 1
    assert hits(searchable.find_by_time_range(at(0), at(100), conversation_id="conv-1")) == [
        ("conv-1", "Weather in Rome?"),
        ("conv-1", "Rainy."),
    ]
    one_us = timedelta(microseconds=1)
    assert searchable.find_by_time_range(at(1) + one_us, at(2) - one_us) == []


@SEARCH
def test_search_find_by_time_range_validates_bounds(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    with pytest.raises(InvalidArgumentError):
        searchable.find_by_time_range(datetime(2025, 1, 1), None)  # naive
    with pytest.raises(InvalidArgumentError):
        searchable.find_by_time_range(at(5), at(1))


@SEARCH
def test_search_limits_must_be_positive_ints(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    calls: tuple[Callable[[Any], object], ...] = (
        lambda limit: searchable.find_by_type("USER", limit=limit),
        lambda limit: searchable.find_by_content("weather", limit=limit),
        lambda limit: searchable.find_by_time_range(None, None, limit=limit),
    )
    for limit in (0, -1, True, "3", 2.0, None):
        for call in calls:
            with pytest.raises(InvalidArgumentError, match="limit"):
                call(limit)


@SEARCH
def test_search_limit_bounds_the_hits_oldest_first(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    found = searchable.find_by_time_range(None, None, limit=2)
    assert [h.created_at for h in found] == [at(0), at(1)]


@SEARCH
def test_search_unknown_message_type_is_rejected(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    with pytest.raises(InvalidArgumentError, match="message_type"):
        searchable.find_by_type("user")


@SEARCH
def test_search_query_syntax_in_user_text_matches_nothing(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    for text in ("nothing) | (@message_type:{SYSTEM}", "zzz | *", "zzz -@content:zzz", "%", "*"):
        assert searchable.find_by_content(text) == [], text


@SEARCH
def test_search_conversation_filter_is_literal(search_repository: Repo) -> None:
    searchable = seeded(search_repository)
    assert searchable.find_by_type("USER", conversation_id="x} | @message_type:{USER") == []
    assert searchable.find_by_type("USER", conversation_id="*") == []
    assert searchable.find_by_type("USER", conversation_id="%") == []
