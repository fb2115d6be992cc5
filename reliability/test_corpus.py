"""The bad-input corpus on every backend: typed rejection before I/O, or an exact round trip,
and never a change to another conversation (a canary is checked after every case)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from chatmem.core import InvalidArgumentError, InvalidIdentifierError, UserMessage
from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import Harness, ServerInfo

from .corpus import BAD_IDENTIFIERS, CASES, IDENTIFIER_OPTIONS, INJECTIONS, Case

pytestmark = pytest.mark.column("corpus")

CANARY = "canary"
CANARY_MESSAGES = [UserMessage("canary", metadata={"k": "v"}), UserMessage("two")]


@pytest.fixture(scope="module")
def corpus_repo(harness: Harness, server: ServerInfo) -> Iterator[BaseChatMemoryRepository]:
    """One repository for every case (a fresh namespace per case would take minutes on
    Cassandra); isolation between cases is exactly what the canary checks."""
    repo = harness.make_repository(server)
    repo.save_all(CANARY, CANARY_MESSAGES)
    try:
        yield repo
    finally:
        harness.cleanup(server, repo)


def _same(a: Any, b: Any) -> bool:
    """Equality that also tells -0.0 from 0.0 and 1 from 1.0 (a round trip keeps both)."""
    if isinstance(a, float) or isinstance(b, float):
        return type(a) is type(b) and a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _check_canary(repo: BaseChatMemoryRepository) -> None:
    assert repo.find_by_conversation_id(CANARY) == CANARY_MESSAGES, "the canary changed"
    assert repo.find_conversation_ids() == [CANARY], "another conversation is listed"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_case(
    case: Case, corpus_repo: BaseChatMemoryRepository, note: dict[str, Any]
) -> None:
    repo = corpus_repo
    note["group"] = case.group
    written: list[Any] = []
    try:
        try:
            writes = case.build()
            for cid, messages in writes:
                repo.save_all(cid, messages)
                written.append(cid)
        except InvalidArgumentError as exc:
            note["outcome"] = f"rejected: {type(exc).__name__}({exc.argument})"
            assert case.expect in ("reject", "either"), f"rejected a valid input: {exc}"
            assert not written, f"rejected after writing {written!r} (not before I/O)"
            return
        note["outcome"] = "round trip"
        assert case.expect in ("roundtrip", "either"), "accepted an input that must be rejected"
        for cid, messages in writes:
            got = repo.find_by_conversation_id(cid)
            assert got == list(messages), f"{cid!r} read back differently"
            for want, have in zip(messages, got, strict=True):
                assert _same(dict(want.metadata), dict(have.metadata)), (
                    f"metadata changed type or sign: {dict(want.metadata)!r} -> "
                    f"{dict(have.metadata)!r}"
                )
        listed = set(repo.find_conversation_ids())
        assert listed == {CANARY, *(cid for cid, _ in writes)}, f"listing is {listed!r}"
    finally:
        for cid in written:
            repo.delete_by_conversation_id(cid)
        _check_canary(repo)


@pytest.mark.parametrize("bad", list(BAD_IDENTIFIERS.values()), ids=list(BAD_IDENTIFIERS))
def test_corpus_identifier(
    bad: Any,
    harness: Harness,
    server: ServerInfo,
    corpus_repo: BaseChatMemoryRepository,
    note: dict[str, Any],
) -> None:
    """Every option naming a store object rejects injection, quotes, unicode, overlong and
    non-str names with InvalidIdentifierError at construction (before any DDL)."""
    options = IDENTIFIER_OPTIONS.get(harness.name)
    if not options:
        pytest.skip("no store identifiers")
    outcomes = []
    for option in options:
        try:
            made = harness.make_repository(server, **{option: bad})
        except InvalidIdentifierError as exc:
            assert exc.argument.startswith(option) or option in str(exc)
            outcomes.append(f"{option}: rejected")
            continue
        # only a long name may be legal (Neo4j labels have no length limit): then it works
        try:
            assert bad == BAD_IDENTIFIERS["ident_too_long"], f"{option}={bad!r} was accepted"
            made.save_all("long-name", [UserMessage("ok")])
            assert made.find_by_conversation_id("long-name") == [UserMessage("ok")]
            outcomes.append(f"{option}: legal here, works")
        finally:
            harness.cleanup(server, made)
    note["outcome"] = "; ".join(outcomes)
    _check_canary(corpus_repo)


@pytest.mark.parametrize("value", list(INJECTIONS.values()), ids=list(INJECTIONS))
def test_corpus_search_value(
    value: str, corpus_repo: BaseChatMemoryRepository, note: dict[str, Any]
) -> None:
    """Redis advanced queries escape caller values: an injection matches nothing else."""
    if not hasattr(corpus_repo, "find_by_content"):
        pytest.skip("no advanced queries")
    repo: Any = corpus_repo
    repo.save_all("search-probe", [UserMessage(f"probe {value}")])
    try:
        for hit in repo.find_by_content(value):
            assert hit.conversation_id == "search-probe", f"{value!r} matched {hit!r}"
        hits = repo.find_by_type("USER", conversation_id=value)
        assert hits == [], f"conversation_id={value!r} matched {hits!r}"
        note["outcome"] = "escaped"
    finally:
        repo.delete_by_conversation_id("search-probe")
        _check_canary(corpus_repo)
