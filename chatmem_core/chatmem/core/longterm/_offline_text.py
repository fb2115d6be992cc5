"""What the offline extractor's English and Korean rules share: the message's own sentences
(code, quoted and forwarded text removed) and the hedge rule (see ``_offline``)."""

from __future__ import annotations

import re

from chatmem.core._errors import InvalidArgumentError

MAX_CANDIDATES = 20
"""At most this many candidates come out of one message (rules or model)."""

HEDGE_PENALTY = 0.25
"""How much a hedge ("I think", "아마", "것 같아요") lowers a statement's confidence."""

_HANGUL = re.compile(r"[\uac00-\ud7a3]")
_FENCED = re.compile(r"```.*?(```|\Z)", re.DOTALL)
_QUOTED = re.compile(r"\"[^\"\n]*\"|\u201c[^\u201d\n]*\u201d|\u300c[^\u300d\n]*\u300d")
_SENTENCES = re.compile(r"(?<=[.!?\u3002])\s+|\n+")
_CODE_LINE = re.compile(
    r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|def|class|import|from|for|if|while|return)\b.*"
    r"([;:{}()=]|\s{4})|[{};]\s*$",
    re.IGNORECASE,
)


def _message(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a str, got {type(text).__name__}")
    return text


def _sentences(text: str) -> list[str]:
    """The message's own sentences: code blocks and quoted lines (``>``) go."""
    text = _FENCED.sub("\n", text.replace("\u2019", "'"))
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(">")]
    out = []
    for sentence in _SENTENCES.split("\n".join(lines)):
        sentence = sentence.strip()
        if sentence and len(sentence) <= 500 and not _CODE_LINE.search(sentence):
            out.append(sentence)
    return out


def _words(*alternatives: str) -> str:
    return "|".join(alternatives)


def _hedged(base: float, hedged: bool) -> float:
    return round(base - HEDGE_PENALTY, 2) if hedged else base
