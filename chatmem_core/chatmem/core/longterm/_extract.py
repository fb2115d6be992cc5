"""Extraction: from a user message to memory candidates.

``Extractor`` is the protocol. ``RuleBasedExtractor`` (``_offline``) works offline on
English and Korean phrasing ("I prefer ...", "저는 ...의 CTO입니다", "다음 달에 출시 ...").
``LlmExtractor`` asks any ``complete(prompt) -> str`` callable (sync or async) and holds its
answer to a strict JSON contract: one object
``{"memories": [{"type", "content", "confidence"}]}`` and nothing else.
Malformed output raises ExtractionError for the whole batch, so nothing half-valid is stored.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from chatmem.core._errors import InvalidArgumentError

from . import _rules as rules
from ._model import ExtractionError, MemoryCandidate
from ._offline import RuleBasedExtractor, third_person
from ._offline_text import MAX_CANDIDATES, _message

Complete = Callable[[str], "str | Awaitable[str]"]

EXTRACTION_PROMPT = """You extract long-term memories about a user from one message they sent.
Types: "preference" (tone, format, workflow style), "fact" (stable facts: role, team,
company, recurring needs), "context" (situational context that helps personalise).
Write each memory as one sentence in the third person, in the message's language
("The user ..."; in Korean "사용자는 ...").
Give a confidence in [0.0, 1.0]. Extract nothing that is not about the user.
Answer with JSON only, exactly this shape and no other keys:
{{"memories": [{{"type": "preference", "content": "The user ...", "confidence": 0.9}}]}}
When there is nothing to remember, answer {{"memories": []}}.

Message: {message}"""


@runtime_checkable
class Extractor(Protocol):
    """Finds candidates in one user message."""

    def extract(self, text: str) -> list[MemoryCandidate]: ...


# -- the strict JSON contract -----------------------------------------------------------
_FENCE = re.compile(r"\A```(?:json)?\s*\n(.*)\n```\Z", re.DOTALL)


def parse_extraction(output: object) -> list[MemoryCandidate]:
    """Validate a model's answer against the contract; ExtractionError naming the fault.

    A single surrounding Markdown code fence is tolerated (models add one unasked);
    anything else outside the JSON object is an error."""
    if not isinstance(output, str):
        raise ExtractionError(f"model output must be a str, got {type(output).__name__}")
    text = output.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ExtractionError(f"model output is not JSON: {exc}") from None
    if not isinstance(data, dict) or set(data) != {"memories"}:
        raise ExtractionError('model output must be an object with only "memories"')
    items = data["memories"]
    if not isinstance(items, list):
        raise ExtractionError('"memories" must be a list')
    if len(items) > MAX_CANDIDATES:
        raise ExtractionError(f'"memories" has {len(items)} items; at most {MAX_CANDIDATES}')
    out: list[MemoryCandidate] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or set(item) != {"type", "content", "confidence"}:
            raise ExtractionError(
                f'memories[{i}] must be an object with exactly "type", "content", "confidence"'
            )
        try:
            out.append(
                MemoryCandidate(
                    memory_type=rules.validate_type(item["type"], f"memories[{i}].type"),
                    content=rules.validate_content(item["content"], f"memories[{i}].content"),
                    confidence=rules.validate_confidence(
                        item["confidence"], f"memories[{i}].confidence"
                    ),
                )
            )
        except InvalidArgumentError as exc:
            raise ExtractionError(f"model output: {exc}") from None
    return out


class LlmExtractor:
    """Extraction by a language model: ``complete`` gets ``prompt_template`` filled with the
    message and must answer per the JSON contract (see ``parse_extraction``)."""

    def __init__(self, complete: Complete, *, prompt_template: str = EXTRACTION_PROMPT) -> None:
        if not callable(complete):
            raise InvalidArgumentError("complete", "must be callable: complete(prompt) -> str")
        if "{message}" not in prompt_template:
            raise InvalidArgumentError("prompt_template", "must contain {message}")
        self.complete = complete
        self.prompt_template = prompt_template

    def prompt(self, text: str) -> str:
        """The prompt sent for ``text``."""
        return self.prompt_template.format(message=text)

    def extract(self, text: str) -> list[MemoryCandidate]:
        """Ask the model (an async ``complete`` is run to completion here; call ``aextract``
        from inside an event loop instead)."""
        answer: Any = self.complete(self.prompt(_message(text)))
        if inspect.isawaitable(answer):
            answer = asyncio.run(_await(answer))
        return parse_extraction(answer)

    async def aextract(self, text: str) -> list[MemoryCandidate]:
        """``extract`` for async callers; a sync ``complete`` is called directly."""
        answer: Any = self.complete(self.prompt(_message(text)))
        if inspect.isawaitable(answer):
            answer = await answer
        return parse_extraction(answer)


def load_callable(spec: str, argument: str = "--complete") -> Callable[..., Any]:
    """``package.module:function``, imported: how a command line names a ``complete``."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise InvalidArgumentError(argument, f"{spec!r} is not module:function")
    try:
        target = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise InvalidArgumentError(argument, f"cannot import {spec}: {exc}") from None
    if not callable(target):
        raise InvalidArgumentError(argument, f"{spec} is not callable")
    return target  # type: ignore[no-any-return]


async def _await(pending: Awaitable[Any]) -> Any:
    return await pending


__all__ = [
    "EXTRACTION_PROMPT",
    "MAX_CANDIDATES",
    "Complete",
    "Extractor",
    "LlmExtractor",
    "RuleBasedExtractor",
    "parse_extraction",
    "third_person",
]
