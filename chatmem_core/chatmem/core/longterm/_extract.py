"""Extraction: from a user message to memory candidates.

``Extractor`` is the protocol. ``RuleBasedExtractor`` works offline on common phrasing ("I
prefer ...", "I'm the CTO of ...", "we launch next month ..."). ``LlmExtractor`` asks any
``complete(prompt) -> str`` callable (sync or async) and holds its answer to a strict JSON
contract: one object ``{"memories": [{"type", "content", "confidence"}]}`` and nothing else.
Malformed output raises ExtractionError for the whole batch, so nothing half-valid is stored.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from chatmem.core._errors import InvalidArgumentError

from . import _rules as rules
from ._model import ExtractionError, MemoryCandidate, MemoryType

Complete = Callable[[str], "str | Awaitable[str]"]

MAX_CANDIDATES = 20

EXTRACTION_PROMPT = """You extract long-term memories about a user from one message they sent.
Types: "preference" (tone, format, workflow style), "fact" (stable facts: role, team,
company, recurring needs), "context" (situational context that helps personalise).
Write each memory as one sentence in the third person ("The user ...").
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


async def _await(pending: Awaitable[Any]) -> Any:
    return await pending


def _message(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a str, got {type(text).__name__}")
    return text


# -- rules for offline use --------------------------------------------------------------
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "are": "is", "am": "is", "be": "is"}
_FIRST_PERSON: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{a}\b", re.IGNORECASE), b)
    for a, b in (
        (r"\A\s*my", "the user's"),
        ("i'm", "the user is"),
        ("i am", "the user is"),
        ("i've", "the user has"),
        ("i have", "the user has"),
        ("i'd", "the user would"),
        ("i'll", "the user will"),
        ("i was", "the user was"),
        ("i don't", "the user does not"),
        ("i do not", "the user does not"),
        ("i can't", "the user cannot"),
        ("we're", "the user's team is"),
        ("we are", "the user's team is"),
        ("we've", "the user's team has"),
        ("we'll", "the user's team will"),
        ("we don't", "the user's team does not"),
        ("myself", "themselves"),
        ("my", "their"),
        ("our", "their"),
    )
]
_SUBJECT_VERB = re.compile(r"\b(I|we)\s+([a-z]+)\b", re.IGNORECASE)
_OBJECT = re.compile(r"\b(me|us)\b")
_AUX = {"will", "would", "can", "could", "should", "must", "might", "may", "shall"}

# (type, confidence, pattern): first match wins; checked per sentence.
_RULES: list[tuple[MemoryType, float, re.Pattern[str]]] = [
    (
        MemoryType.PREFERENCE,
        0.90,
        re.compile(
            r"\b(I\s+(really\s+|strongly\s+|generally\s+|usually\s+)?"
            r"(prefer|like|love|hate|dislike|want|need)\b.*\b(answers?|responses?|replies|"
            r"summar(y|ies)|examples?|code|format|style|tone|bullet|emails?|explanations?|"
            r"over|instead|rather|concise|short|detail\w*|language)"
            r"|\bI\s+(really\s+)?prefer\b|\bI'd\s+rather\b|\bplease\s+(always|never)\b"
            r"|\bplease\b.*\b(answers?|responses?|replies|summar(y|ies)|examples?|format|"
            r"style|tone|short|concise|brief|bullet)"
            r"|\bI\s+don't\s+like\b)",
            re.IGNORECASE,
        ),
    ),
    (
        MemoryType.FACT,
        0.95,
        re.compile(
            r"\b(I'm|I\s+am|I\s+work|I've\s+been|I\s+lead|I\s+run|I\s+manage|I\s+live|"
            r"my\s+name\s+is|my\s+(role|title|team|company|job)\b|we're\s+a\b|"
            r"our\s+(company|team|startup)\b)"
            r".*\b(CTO|CEO|COO|CFO|founder|engineer|developer|manager|lead|head|director|"
            r"designer|scientist|analyst|consultant|student|teacher|doctor|at|for|of|in|"
            r"company|team|startup|called|named|is)\b",
            re.IGNORECASE,
        ),
    ),
    (
        MemoryType.CONTEXT,
        0.85,
        re.compile(
            r"\b(next|this|coming)\s+(week|month|quarter|year|sprint|monday|friday)\b"
            r"|\b(tomorrow|tonight|deadline|due\s+(on|by)|launch\w*|currently|right\s+now|"
            r"these\s+days|at\s+the\s+moment|I'm\s+(working|preparing|planning|travel\w*)|"
            r"by\s+(monday|tuesday|wednesday|thursday|friday|the\s+end\s+of))\b",
            re.IGNORECASE,
        ),
    ),
]


def _third_person_verb(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _AUX or (low.endswith("ed") and not low.endswith("eed")):
        return verb
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    return verb + "s"


def third_person(sentence: str) -> str:
    """Rewrite a first-person sentence about the user as "The user ..." prose."""
    text = sentence.strip().replace("\u2019", "'")  # typographic apostrophes
    for pattern, replacement in _FIRST_PERSON:
        text = pattern.sub(replacement, text)

    def subject(m: re.Match[str]) -> str:
        who = "the user" if m.group(1).lower() == "i" else "the user's team"
        return f"{who} {_third_person_verb(m.group(2))}"

    text = _SUBJECT_VERB.sub(subject, text)
    text = re.sub(r"\bI\b", "the user", text)
    text = _OBJECT.sub("them", text)
    text = text[:1].upper() + text[1:]
    if not text.lower().startswith("the user"):
        text = f"The user says: {text}"
    return text if text.endswith((".", "!", "?")) else text + "."


class RuleBasedExtractor:
    """Offline extraction by phrasing rules, one candidate per matching sentence: preference
    (0.90), fact (0.95), context (0.85). Questions are skipped: they ask, they do not tell."""

    def extract(self, text: str) -> list[MemoryCandidate]:
        out: list[MemoryCandidate] = []
        seen: set[str] = set()
        for sentence in _SENTENCES.split(_message(text)):
            sentence = sentence.strip().replace("\u2019", "'")
            if not sentence or sentence.endswith("?") or len(sentence) > 500:
                continue
            for memory_type, confidence, pattern in _RULES:
                if pattern.search(sentence):
                    content = third_person(sentence)
                    if rules.normalise(content) not in seen:
                        seen.add(rules.normalise(content))
                        out.append(
                            MemoryCandidate(
                                memory_type=memory_type, content=content, confidence=confidence
                            )
                        )
                    break
        return out[:MAX_CANDIDATES]
