"""Labels, for backends claiming ``Capability.LABELS``: the configured labels (or equivalent
names) decide which store a repository sees; two label sets on one server share nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chatmem.core import UserMessage
from chatmem.core.backend import BaseChatMemoryRepository, Capability

from ..capabilities import require_capability
from ..harness import Harness

Repo = BaseChatMemoryRepository
Make = Callable[..., Repo]
LABELS = pytest.mark.capability(Capability.LABELS)


def _texts(repo: Repo, cid: str) -> list[str | None]:
    return [m.text for m in repo.find_by_conversation_id(cid)]


@LABELS
def test_labels_two_label_sets_are_separate_stores(
    repository: Repo, harness: Harness, make_repository: Make
) -> None:
    require_capability(repository, Capability.LABELS)
    one = make_repository(**harness.label_options("Alpha"))
    two = make_repository(**harness.label_options("Beta"))
    one.save_all("same-id", [UserMessage("in one")])
    two.save_all("same-id", [UserMessage("in two")])
    two.append("only-two", UserMessage("x"))
    assert _texts(one, "same-id") == ["in one"]
    assert _texts(two, "same-id") == ["in two"]
    assert one.find_conversation_ids() == ["same-id"]
    one.delete_by_conversation_id("same-id")
    assert sorted(two.find_conversation_ids()) == ["only-two", "same-id"]
    assert _texts(two, "same-id") == ["in two"]


@LABELS
def test_labels_a_repository_on_the_same_labels_sees_the_same_store(
    repository: Repo, harness: Harness, make_repository: Make
) -> None:
    require_capability(repository, Capability.LABELS)
    labels = harness.label_options("Gamma")
    make_repository(**labels).save_all("c", [UserMessage("kept")])
    again = make_repository(**labels)
    assert _texts(again, "c") == ["kept"]
    again.append("c", UserMessage("more"))
    assert _texts(make_repository(**labels), "c") == ["kept", "more"]
