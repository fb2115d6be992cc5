"""The repository contract that every backend must pass."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from chatmem.core import (
    AssistantMessage,
    ChatMemoryRepository,
    InvalidArgumentError,
    Message,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
    async_repository_from_url,
    repository_from_url,
)
from chatmem.core.backend import BaseChatMemoryRepository

from ..capabilities import KNOWN_CAPABILITIES
from ..corpus import FIXED_TS, ID_CORPUS, full_corpus, turn
from ..harness import Harness, ServerInfo
from ..twins import sync_of

Repo = BaseChatMemoryRepository


def texts(messages: list[Message]) -> list[str | None]:
    return [m.text for m in messages]


def test_repository_satisfies_protocol(repository: Repo) -> None:
    assert isinstance(repository, ChatMemoryRepository)


def test_store_is_still_empty(repository: Repo) -> None:
    assert repository.find_conversation_ids() == []


def test_unknown_id_reads_empty_list(repository: Repo) -> None:
    assert repository.find_by_conversation_id("never-saved") == []
    assert repository.find_last("never-saved", 5) == []


def test_save_and_read_back_every_kind_and_field(repository: Repo) -> None:
    corpus = full_corpus()
    repository.save_all("c1", corpus)
    back = repository.find_by_conversation_id("c1")
    assert back == corpus
    for original, read in zip(corpus, back, strict=True):
        assert type(read) is type(original)
        assert dict(read.metadata) == dict(original.metadata)
        assert read.media == original.media
        for key, value in original.metadata.items():
            assert type(read.metadata[key]) is type(value), key


def test_metadata_numbers_keep_their_type(repository: Repo) -> None:
    repository.save_all("n", [UserMessage("x", metadata={"i": 1, "f": 1.0, "b": False})])
    md = repository.find_by_conversation_id("n")[0].metadata
    assert (type(md["i"]), type(md["f"]), type(md["b"])) == (int, float, bool)


def test_bytes_media_round_trip_exactly(repository: Repo) -> None:
    from ..corpus import PNG

    repository.save_all("m", full_corpus())
    media = repository.find_by_conversation_id("m")[1].media
    assert media[0].data == PNG and isinstance(media[0].data, bytes)
    assert media[1].data == "https://example.com/a.jpg"


def test_assistant_text_none_and_empty_are_distinct(repository: Repo) -> None:
    repository.save_all("t", [AssistantMessage(None), AssistantMessage("")])
    back = repository.find_by_conversation_id("t")
    assert back[0].text is None and back[1].text == ""


def test_tool_response_message_has_empty_text(repository: Repo) -> None:
    repository.save_all("t", full_corpus())
    tool = repository.find_by_conversation_id("t")[3]
    assert isinstance(tool, ToolResponseMessage) and tool.text == "" and len(tool.responses) == 2


def test_save_all_replaces_history(repository: Repo) -> None:
    repository.save_all("r", turn(1) + turn(2) + turn(3))
    repository.save_all("r", turn(9))
    assert texts(repository.find_by_conversation_id("r")) == ["u9", "a9"]


def test_order_is_exactly_as_given_for_many_messages_in_one_call(repository: Repo) -> None:
    kinds = [UserMessage, AssistantMessage, SystemMessage]
    msgs = [kinds[i % 3](f"m{i:03d}") for i in range(60)]
    repository.save_all("o", msgs)
    assert repository.find_by_conversation_id("o") == msgs


def test_positions_increase_and_timestamps_are_utc(repository: Repo) -> None:
    before = datetime.now(timezone.utc) - timedelta(seconds=5)
    repository.save_all("p", turn(1) + turn(2))
    back = repository.find_by_conversation_id("p")
    positions = [m.position for m in back]
    assert all(isinstance(p, int) for p in positions)
    assert positions == sorted(p for p in positions if p is not None) and len(
        set(positions)
    ) == len(positions)
    for m in back:
        assert m.created_at is not None and m.created_at.utcoffset() == timedelta(0)
        assert before <= m.created_at <= datetime.now(timezone.utc) + timedelta(seconds=5)


def test_resaved_message_keeps_its_creation_time(repository: Repo) -> None:
    repository.save_all("ts", [UserMessage("old", created_at=FIXED_TS)])
    first = repository.find_by_conversation_id("ts")
    assert first[0].created_at == FIXED_TS
    repository.save_all("ts", [*first, UserMessage("new")])
    again = repository.find_by_conversation_id("ts")
    assert again[0].created_at == FIXED_TS
    assert again[1].created_at is not None and again[1].created_at > FIXED_TS


def test_delete_removes_and_unlists(repository: Repo) -> None:
    repository.save_all("d", turn(1))
    repository.save_all("keep", turn(2))
    repository.delete_by_conversation_id("d")
    assert repository.find_by_conversation_id("d") == []
    assert repository.find_conversation_ids() == ["keep"]


def test_delete_unknown_id_is_a_noop(repository: Repo) -> None:
    repository.delete_by_conversation_id("nobody")
    assert repository.find_conversation_ids() == []


def test_save_empty_list_deletes(repository: Repo) -> None:
    repository.save_all("e", turn(1))
    repository.save_all("e", [])
    assert repository.find_by_conversation_id("e") == []
    assert "e" not in repository.find_conversation_ids()


def test_listing_has_each_conversation_once(repository: Repo) -> None:
    for cid in ("x", "y", "z"):
        for i in range(3):
            repository.save_all(cid, turn(i))
    repository.append("x", turn(7))
    ids = repository.find_conversation_ids()
    assert sorted(ids) == ["x", "y", "z"] and len(ids) == 3


def test_listing_pages_cover_every_id_once(repository: Repo) -> None:
    wanted = {f"conv-{i:03d}" for i in range(23)}
    for cid in wanted:
        repository.save_all(cid, [UserMessage(cid)])
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = repository.find_conversation_ids_page(limit=5, after=after)
        assert len(page.ids) <= 5
        seen.extend(page.ids)
        pages += 1
        if page.next_after is None:
            break
        after = page.next_after
        assert pages < 50
    assert sorted(seen) == sorted(wanted) and pages >= 5
    assert set(repository.iter_conversation_ids(page_size=7)) == wanted


@pytest.mark.parametrize("bad", [0, -1, True, "5", None])
def test_page_limit_must_be_positive_int(repository: Repo, bad: object) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        repository.find_conversation_ids_page(limit=bad)  # type: ignore[arg-type]
    assert info.value.argument == "limit"


def test_conversations_are_isolated(repository: Repo) -> None:
    repository.save_all("one", turn(1))
    repository.save_all("two", turn(2))
    repository.save_all("one", turn(3))
    repository.delete_by_conversation_id("one")
    assert texts(repository.find_by_conversation_id("two")) == ["u2", "a2"]


def test_id_corpus_ids_are_distinct_exact_conversations(repository: Repo) -> None:
    for i, cid in enumerate(ID_CORPUS):
        repository.save_all(cid, [UserMessage(f"msg-{i}")])
    for i, cid in enumerate(ID_CORPUS):
        assert texts(repository.find_by_conversation_id(cid)) == [f"msg-{i}"], cid
    assert sorted(repository.find_conversation_ids()) == sorted(ID_CORPUS)
    repository.delete_by_conversation_id("A")
    assert texts(repository.find_by_conversation_id("a")) == [f"msg-{ID_CORPUS.index('a')}"]
    assert repository.find_by_conversation_id("A") == []


def test_id_too_long_is_rejected_before_io(repository: Repo) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        repository.save_all("x" * 256, turn(1))
    assert info.value.argument == "conversation_id"
    assert repository.find_conversation_ids() == []


BAD_IDS: list[object] = [None, "", 42, {"$ne": None}, ["a"], b"bytes", "nul\x00id", "\ud800"]


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_bad_ids_are_rejected_everywhere_before_io(repository: Repo, bad: object) -> None:
    repository.save_all("victim", turn(1))
    calls: list[Callable[[], object]] = [
        lambda: repository.save_all(bad, turn(2)),  # type: ignore[arg-type]
        lambda: repository.find_by_conversation_id(bad),  # type: ignore[arg-type]
        lambda: repository.delete_by_conversation_id(bad),  # type: ignore[arg-type]
        lambda: repository.append(bad, turn(2)),  # type: ignore[arg-type]
        lambda: repository.find_last(bad, 3),  # type: ignore[arg-type]
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert info.value.argument == "conversation_id"
    assert repository.find_conversation_ids() == ["victim"]
    assert texts(repository.find_by_conversation_id("victim")) == ["u1", "a1"]


def test_int_id_does_not_share_a_conversation_with_its_string(repository: Repo) -> None:
    repository.save_all("42", turn(1))
    with pytest.raises(InvalidArgumentError):
        repository.find_by_conversation_id(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad, argument",
    [
        (None, "messages"),
        ([UserMessage("ok"), None], "messages[1]"),
        ([UserMessage("ok"), "text"], "messages[1]"),
        ("just a string", "messages"),
        ([{"role": "user", "content": "hi"}], "messages[0]"),
    ],
)
def test_bad_message_lists_are_rejected_and_nothing_is_written(
    repository: Repo, bad: object, argument: str
) -> None:
    repository.save_all("c", turn(1))
    with pytest.raises(InvalidArgumentError) as info:
        repository.save_all("c", bad)  # type: ignore[arg-type]
    assert info.value.argument == argument
    with pytest.raises(InvalidArgumentError):
        repository.append("c", bad)  # type: ignore[arg-type]
    assert texts(repository.find_by_conversation_id("c")) == ["u1", "a1"]


def test_repository_does_not_mutate_callers_messages(repository: Repo) -> None:
    msgs = full_corpus()
    snapshot = [(m, m.created_at, m.position) for m in msgs]
    as_tuple = tuple(msgs)
    repository.save_all("c", msgs)
    repository.append("c", msgs)
    assert tuple(msgs) == as_tuple
    assert [(m, m.created_at, m.position) for m in msgs] == snapshot


def test_read_back_metadata_has_no_bookkeeping_keys(repository: Repo) -> None:
    repository.save_all("c", [UserMessage("x"), AssistantMessage("y", metadata={"k": 1})])
    back = repository.find_by_conversation_id("c")
    assert dict(back[0].metadata) == {} and dict(back[1].metadata) == {"k": 1}


def test_append_adds_after_existing_messages(repository: Repo) -> None:
    repository.save_all("c", turn(1))
    repository.append("c", turn(2))
    repository.append("c", UserMessage("u3"))
    assert texts(repository.find_by_conversation_id("c")) == ["u1", "a1", "u2", "a2", "u3"]


def test_find_last_returns_the_newest_in_order(repository: Repo) -> None:
    msgs = [m for i in range(30) for m in turn(i)]
    repository.save_all("c", msgs)
    assert texts(repository.find_last("c", 3)) == ["a28", "u29", "a29"]
    assert len(repository.find_last("c", 1000)) == 60
    with pytest.raises(InvalidArgumentError):
        repository.find_last("c", 0)


def test_equal_messages_are_kept_as_separate_entries(repository: Repo) -> None:
    same = UserMessage("again")
    repository.save_all("c", [same, same, same])
    assert len(repository.find_by_conversation_id("c")) == 3


def _filtered(config: pytest.Config) -> bool:
    return bool(config.getoption("keyword") or config.getoption("markexpr"))


def test_claimed_capabilities_run_the_shared_capability_tests(
    repository: Repo, request: pytest.FixtureRequest
) -> None:
    claimed = type(repository).capabilities
    unknown = set(claimed) - KNOWN_CAPABILITIES
    assert not unknown, f"{type(repository).__name__} claims unknown capabilities {unknown}"
    if _filtered(request.config):
        pytest.skip("the run was filtered with -k/-m: the collected tests are not the suite")
    collected = {
        marker.args[0]
        for item in request.session.items
        for marker in item.iter_markers("capability")
    }
    missing = set(claimed) - collected
    assert not missing, (
        f"{type(repository).__name__} claims {sorted(missing)} but the shared capability "
        "tests for it were not collected: add `from chatmem.testing.suite import *`"
    )


def test_the_whole_shared_suite_is_collected_unchanged(
    request: pytest.FixtureRequest, shared_suite_tests: dict[str, Any]
) -> None:
    if _filtered(request.config):
        pytest.skip("the run was filtered with -k/-m: the collected tests are not the suite")
    collected = {getattr(item, "obj", None) for item in request.session.items}
    missing = sorted(name for name, fn in shared_suite_tests.items() if fn not in collected)
    assert not missing, f"shared tests deleted or overridden in this run: {missing}"


def test_typed_config_reaches_repository_from_url(
    harness: Harness, server: ServerInfo, repository: Repo, twin: str
) -> None:
    """``repository_from_url(url, <Store>Config(...))``: the typed options reach the store
    (same config, same data) in both twins."""
    sync = sync_of(repository)
    spec = harness.connect_spec(server, sync)
    config = getattr(sync, "config", None)
    if spec is None or config is None:
        pytest.skip(f"{harness.name}: no URL to open (in-process store) or no config object")
    url, _ = spec
    repository.save_all("typed", [UserMessage("through the config")])
    if twin == "async":

        async def reopen() -> tuple[object, list[str | None]]:
            again = await async_repository_from_url(url, config)
            try:
                got = await again.find_by_conversation_id("typed")
                return getattr(again, "config", None), [m.text for m in got]
            finally:
                await again.close()  # type: ignore[attr-defined]

        seen_config, seen = asyncio.run(reopen())
    else:
        again = repository_from_url(url, config)
        try:
            seen_config = getattr(again, "config", None)
            seen = [m.text for m in again.find_by_conversation_id("typed")]
        finally:
            again.close()  # type: ignore[attr-defined]
    assert seen_config == config
    assert seen == ["through the config"]


def test_pop_last_of_an_empty_conversation_is_none(repository: Repo) -> None:
    assert repository.pop_last("nothing") is None
    assert repository.find_conversation_ids() == []


def test_pop_last_removes_only_the_newest(repository: Repo) -> None:
    repository.save_all("c", [SystemMessage("s"), *turn(1), *turn(2)])
    repository.save_all("other", turn(7))
    popped = repository.pop_last("c")
    assert popped is not None and popped.text == "a2" and isinstance(popped, AssistantMessage)
    assert popped.position is not None
    assert texts(repository.find_by_conversation_id("c")) == ["s", "u1", "a1", "u2"]
    assert texts(repository.find_by_conversation_id("other")) == ["u7", "a7"]
    repository.append("c", SystemMessage("s2"))  # a newest system message is popped too
    last = repository.pop_last("c")
    assert last is not None and last.text == "s2"
    rest: list[Message] = []
    while (m := repository.pop_last("c")) is not None:
        rest.append(m)
    assert texts(rest) == ["u2", "a1", "u1", "s"]
    assert repository.find_by_conversation_id("c") == []
    assert "other" in repository.find_conversation_ids()


def test_popping_every_message_unlists_the_conversation(repository: Repo) -> None:
    """Listing names conversations with at least one message: popping the last one is as a
    delete, and the next add starts the conversation again."""
    repository.save_all("c", turn(1))
    repository.save_all("other", turn(2))
    while repository.pop_last("c") is not None:
        pass
    assert repository.find_conversation_ids() == ["other"]
    repository.append("c", UserMessage("again"))
    assert sorted(repository.find_conversation_ids()) == ["c", "other"]
    assert texts(repository.find_by_conversation_id("c")) == ["again"]


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_pop_last_rejects_bad_ids_before_io(repository: Repo, bad: object) -> None:
    repository.save_all("victim", turn(1))
    with pytest.raises(InvalidArgumentError) as info:
        repository.pop_last(bad)  # type: ignore[arg-type]
    assert info.value.argument == "conversation_id"
    assert texts(repository.find_by_conversation_id("victim")) == ["u1", "a1"]
