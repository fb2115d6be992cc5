"""The window rule as pure functions: vectors, the log property, edit plans."""

from __future__ import annotations

import random

import pytest

from chatmem.core import AssistantMessage, Message, UserMessage
from chatmem.core.backend import add_to_window, apply_window_edit, plan_window_edit, window_of
from chatmem.testing.corpus import VECTORS, parse


def texts(ms: list[Message]) -> str:
    return " ".join(m.text or "" for m in ms)


@pytest.mark.parametrize("window, batches, expected", VECTORS)
def test_reference_rule_vectors(window: int, batches: list[str], expected: str) -> None:
    stored: list[Message] = []
    for b in batches:
        stored = add_to_window(stored, parse(b), window)
    assert texts(stored) == expected


def test_under_the_window_nothing_is_evicted_even_mid_turn() -> None:
    assert texts(window_of(parse("A0 U1 A1"), 3)) == "A0 U1 A1"


def test_rule_at_read_equals_rule_at_every_add_for_turns() -> None:
    rng = random.Random(7)
    for _ in range(300):
        window = rng.randint(1, 7)
        log: list[Message] = []
        stored: list[Message] = []
        for step in range(20):
            batch: list[Message] = [UserMessage(f"U{step}")]
            batch += [AssistantMessage(f"A{step}.{j}") for j in range(rng.randint(0, 3))]
            log += batch
            stored = add_to_window(stored, batch, window)
            assert window_of(log, window) == stored


def _positioned(ms: list[Message]) -> list[Message]:
    return [m.with_store_fields(created_at=None, position=i) for i, m in enumerate(ms)]


def test_edit_plan_without_new_system_message_appends_only_non_system() -> None:
    source = _positioned(parse("S1 U1 A1"))
    edit = plan_window_edit(source, parse("S1 U2"), 10)
    assert not edit.delete_positions and edit.delete_non_system_below is None
    assert texts(list(edit.append)) == "U2"


def test_edit_plan_with_new_system_message_materialises_the_window() -> None:
    source = _positioned(parse("S1 U1 A1 U2 A2"))
    edit = plan_window_edit(source, parse("S2 U3"), 3)
    assert edit.delete_positions == {0}
    assert edit.delete_non_system_below == 3
    kept = apply_window_edit(source, edit)
    assert texts(kept) == "U2 A2 S2 U3"
    assert window_of(kept, 3) == add_to_window(window_of(source, 3), parse("S2 U3"), 3)


def test_edit_plan_when_nothing_fits_deletes_every_non_system_row() -> None:
    source = _positioned(parse("S1 S2 U1 A1"))
    edit = plan_window_edit(source, parse("S3"), 2)
    assert texts(apply_window_edit(source, edit)) == "S3"
