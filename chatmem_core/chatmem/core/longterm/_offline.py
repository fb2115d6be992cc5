"""Offline extraction by phrasing rules, in English and Korean (pure Python, no NLP library).

Each sentence of a user message is read on its own. It is skipped when it is not about the
user: a question, code, quoted or forwarded text, small talk, a one-off request to the
assistant, a statement about somebody else. Otherwise the first rule that matches gives the
type, and the phrasing gives the confidence:

- the strength of the statement sets a base: an explicit "I prefer" / "선호합니다" (0.90), a
  liking or a standing request (0.85); who the user is (0.95), what they use or know
  (0.90); a dated plan or deadline (0.85), an ongoing practice of the team (0.80);
- a hedge ("I think", "maybe", "probably", "아마", "것 같아요", "지도 몰라요") lowers it by 0.25,
  so a hedged statement lands below 0.8 and a reviewer sees it is a guess.

The memory is written in the message's language, in the third person: "The user ..." or
"사용자는 ...함/임." (the Korean plain noun-form ending used for notes).
"""

from __future__ import annotations

import re

from . import _rules as rules
from ._model import MemoryCandidate, MemoryType
from ._offline_ko import _korean, third_person_ko
from ._offline_text import _HANGUL, _QUOTED, MAX_CANDIDATES, _hedged, _message, _sentences, _words

# -- English ----------------------------------------------------------------------------
_EN_OTHERS = _words(
    "boss", "wife", "husband", "partner", "friend", "friends", "colleague", "colleagues",
    "coworker", "coworkers", "co-worker", "manager", "brother", "sister", "mom", "mother",
    "dad", "father", "son", "daughter", "kids?", "children", "client", "clients",
    "customers?", "girlfriend", "boyfriend", "teacher", "professor", "neighbou?r", "cousin",
    "uncle", "aunt", "parents", "family", "cto", "ceo", "users?", "intern",
)  # fmt: skip
_EN_NOT_ABOUT_USER = re.compile(
    rf"\A(he|she|they|his|her|their|the|it|its|this\s+(library|tool|article|file|code|"
    rf"function|project|repo)|that|these|those)\b|\A(my|our)\s+({_EN_OTHERS})\b",
    re.IGNORECASE,
)
_EN_QUESTION = re.compile(
    r"\?\s*\Z|\A(what|why|how|when|where|who|which|whose|whom|is|are|am|was|were|do|does|did|"
    r"can|could|would|will|should|shall|may|might|have|has)\b(?!\s+(I|we)\s+(really\s+)?"
    r"(prefer|like|love|want)\b)",
    re.IGNORECASE,
)
_EN_IMPERATIVE = re.compile(
    r"\A(please\s+|pls\s+|now\s+|ok(ay)?,?\s+)*(write|explain|translate|summari[sz]e|make|"
    r"show|add|fix|rewrite|draft|generate|tell|convert|act|pretend|try|give|create|help|list|"
    r"describe|continue|review|check|find|compare|refactor|implement|keep|use|answer|"
    r"include|format|avoid|stop|start|respond|reply|put|be|don't|do\s+not|never|always)\b"
    r"(?!\s+mind\b)",
    re.IGNORECASE,
)
_EN_STANDING = re.compile(
    r"\b(always|never|from\s+now\s+on|going\s+forward|in\s+(the\s+)?future|by\s+default|"
    r"every\s+time|each\s+time|in\s+general)\b"
    r"|\b(answers|responses|replies|explanations|examples|summaries|code\s+examples|"
    r"snippets)\b(?!.*\b(this|that|these|the\s+above)\b)",
    re.IGNORECASE,
)

_EN_HEDGE = re.compile(
    r"\b(I\s+think|I\s+guess|I\s+suppose|I\s+believe|I\s+feel\s+like|probably|maybe|perhaps|"
    r"possibly|might|not\s+sure|kind\s+of|sort\s+of|likely|I'm\s+not\s+certain)\b",
    re.IGNORECASE,
)
_EN_SMALL_TALK = re.compile(
    r"\AI'm\s+(just\s+)?(fine|good|ok(ay)?|great|sorry|back|done|here|not\s+sure|confused|"
    r"lost|happy|glad|curious|wondering|stuck|tired|joking|kidding)\b|\AI\s+see\b|"
    r"\AI\s+(agree|understand|get\s+it|figured)\b",
    re.IGNORECASE,
)
_EN_TIME = (
    r"\b((next|this|coming|last)\s+(week|month|quarter|year|sprint|summer|winter|spring|"
    r"autumn|fall|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(on|by|until|before|from|every)\s+(next\s+)?(monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sunday)|tomorrow|tonight|deadline|due\s+(on|by|in|at|tomorrow|next)|"
    r"launch\w*|release\s+date|code\s+freeze|right\s+now|currently|at\s+the\s+moment|"
    r"these\s+days|in\s+the\s+middle\s+of|end\s+of\s+(the\s+)?(week|month|quarter|year)|"
    r"in\s+(january|february|march|april|may|june|july|august|september|october|november|"
    r"december)|on\s+the\s+\d+(st|nd|rd|th)|\d+(st|nd|rd|th)\s+of|this\s+(week|month|"
    r"quarter|year|sprint))\b"
)


def _en(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_EN_FIRST_PERSON = _en(r"\b(I|I'm|I've|I'd|I'll|me|my|we|we're|we've|we'll|our|us)\b")

# (type, base confidence, pattern): the first match wins; a hedge lowers the base.
_EN_RULES: list[tuple[MemoryType, float, re.Pattern[str]]] = [
    (
        MemoryType.PREFERENCE,
        0.90,
        _en(
            r"\bI\s+(really\s+|strongly\s+|generally\s+|usually\s+|definitely\s+|probably\s+)?"
            r"prefer\b|\bI('d|\s+would)\s+(much\s+)?(rather|prefer)\b|\bmy\s+preference\s+is\b"
        ),
    ),
    (
        MemoryType.PREFERENCE,
        0.85,
        _en(
            r"\bI\s+(really\s+|generally\s+|usually\s+|always\s+|just\s+|also\s+)?"
            r"(like|love|hate|dislike|can't\s+stand|don't\s+like|do\s+not\s+like|enjoy)\b"
            r"|\bI\s+(always\s+|usually\s+)?(want|need)\b.*\b(answers?|responses?|replies|"
            r"summar(y|ies)|examples?|format|style|tone|bullets?|explanations?|markdown|"
            r"version|rather\s+than|instead\s+of)\b"
        ),
    ),
    (
        MemoryType.FACT,
        0.95,
        _en(
            r"\A((honestly|actually|so|well),?\s+)?(I\s+think\s+)?I('m|\s+am)\s+(probably\s+|"
            r"maybe\s+|actually\s+|currently\s+)?(more\s+of\s+)?(a|an|the)\s+(?!(bit|little|"
            r"lot)\b)"
            r"|\bI('m|\s+am)\s+(fluent|colou?rblind|left-handed|allergic|based|from|originally|"
            r"deaf|blind|dyslexic|vegan|vegetarian)\b"
            r"|\bI('ve|\s+have)\s+been\s+(a|an|the)\b|\bmy\s+(name|role|title|job|position|"
            r"background)\s+is\b|\bI\s+(work|worked)\s+(at|for|as|in|on|remotely|from)\b"
            r"|\bI\s+(lead|run|manage|own|founded|co-founded|teach|maintain|head)\b"
            r"|\bI\s+live\s+in\b|\bI\s+(studied|majored|graduated)\b"
            r"|\bwe('re|\s+are)\s+(a|an)\s+(team|startup|company|agency|studio|shop|"
            r"non-?profit|group|small|two|three|four|five)\b"
            r"|\A(our|my)\s+(company|startup|business|agency|team)\s+(sells|makes|builds|"
            r"is\s+(a|an)|has\s+\d+|develops|provides|offers)\b"
        ),
    ),
    (
        MemoryType.CONTEXT,
        0.85,
        _en(
            rf"{_EN_TIME}|\bI('m|\s+am)\s+(working\s+on|preparing|planning|migrating|writing|"
            r"building|interviewing|travel\w*|hiring|moving|rewriting|on\s+vacation|"
            r"focused|studying\s+for)\b|\bwe('re|\s+are)\s+(currently\s+)?(hiring|moving|"
            r"migrating|rewriting|raising|preparing|planning|switching)\b"
        ),
    ),
    (
        MemoryType.FACT,
        0.90,
        _en(
            r"\bI\s+(specialize|specialise|focus)\s+(in|on)\b|\bI\s+have\s+(a\s+)?(background|"
            r"degree|phd|masters?|experience)\b|\bI('ve|\s+have)\s+(used|worked|written|"
            r"been\s+using|been\s+writing)\b|\bI\s+(mostly\s+|mainly\s+|usually\s+|"
            r"primarily\s+|only\s+)?(use|write|code|develop|program)\s+(in\s+)?[A-Z\w]"
            r"|\bI\s+(speak|know)\b|\bI('m|\s+am)\s+the\s+only\b"
        ),
    ),
    (
        MemoryType.CONTEXT,
        0.80,
        _en(
            r"\A(our|my)\s+(team|company|startup|org\w*|department|group)\s+(uses|works|"
            r"follows|runs|deploys|ships|releases|has|is\s+(using|working|moving))\b"
            r"|\Awe\s+(use|work|follow|run|deploy|ship|release|do|practi[cs]e|have)\b"
        ),
    ),
]

_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "are": "is", "am": "is", "be": "is"}
_FIRST_PERSON: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{a}\b", re.IGNORECASE), b)
    for a, b in (
        (r"I\s+(think|guess|believe|suppose)\s+I'm", r"the user \1s they are"),
        (r"I\s+(think|guess|believe|suppose)\s+I", r"the user \1s they"),
        (r"\A\s*my", "the user's"),
        (r"\A\s*our", "the user's"),
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
    """Rewrite a first-person English sentence about the user as "The user ..." prose."""
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
    if "the user" not in text.lower():
        text = f"The user says: {text}"
    return text if text.endswith((".", "!", "?")) else text + "."


def _request_is_standing(sentence: str) -> bool:
    """A request to the assistant that sets a rule for every answer ("Please always ...",
    "keep answers short"), as opposed to a one-off task ("Rewrite this email")."""
    return bool(_EN_STANDING.search(sentence))


def _english(sentence: str) -> tuple[MemoryType, float] | None:
    if _EN_QUESTION.search(sentence) or _EN_SMALL_TALK.search(sentence):
        return None
    if _EN_IMPERATIVE.search(sentence):
        if not _request_is_standing(sentence):
            return None
        return MemoryType.PREFERENCE, _hedged(0.85, _EN_HEDGE.search(sentence) is not None)
    if _EN_NOT_ABOUT_USER.search(sentence) or not _EN_FIRST_PERSON.search(sentence):
        return None
    for memory_type, base, pattern in _EN_RULES:
        if pattern.search(sentence):
            return memory_type, _hedged(base, _EN_HEDGE.search(sentence) is not None)
    return None


def classify(sentence: str) -> tuple[MemoryType, float] | None:
    """The type and confidence one sentence states about the user, or None."""
    return _korean(sentence) if _HANGUL.search(sentence) else _english(sentence)


def rewrite(sentence: str) -> str:
    """The sentence as a third-person memory in its own language."""
    return third_person_ko(sentence) if _HANGUL.search(sentence) else third_person(sentence)


class RuleBasedExtractor:
    """Offline extraction by phrasing rules in English and Korean, one candidate per
    sentence about the user; confidence from the phrasing (see the module docstring)."""

    def extract(self, text: str) -> list[MemoryCandidate]:
        """The candidates in one user message (none for questions, code, small talk...)."""
        out: list[MemoryCandidate] = []
        seen: set[str] = set()
        for sentence in _sentences(_message(text)):
            # words in quotes are somebody's words, not the user's statement
            found = classify(_QUOTED.sub('"..."', sentence))
            if found is None:
                continue
            content = rewrite(sentence)
            key = rules.normalise(content)
            if key not in seen:
                seen.add(key)
                out.append(
                    MemoryCandidate(memory_type=found[0], content=content, confidence=found[1])
                )
        return out[:MAX_CANDIDATES]
