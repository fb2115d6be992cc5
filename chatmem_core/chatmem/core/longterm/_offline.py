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

from chatmem.core._errors import InvalidArgumentError

from . import _rules as rules
from ._model import MemoryCandidate, MemoryType

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


# -- Korean -----------------------------------------------------------------------------
_KO_OTHERS = _words(
    "상사", "아내", "남편", "와이프", "동료", "친구", "매니저", "팀장님?", "부장님?",
    "사장님?", "부모님", "엄마", "아빠", "어머니", "아버지", "형", "누나", "언니", "오빠",
    "동생", "아들", "딸", "아이", "애들", "고객", "고객사", "여자친구", "남자친구", "선배",
    "후배", "교수님", "가족", "지인", "룸메이트", "클라이언트",
)  # fmt: skip
_KO_NOT_ABOUT_USER = re.compile(
    rf"\A((제|저희|내|우리)\s*({_KO_OTHERS})|그는|그녀는|그들은|걔는|고객사|"
    r"(기사|문서|책|글|영상)에\s*(나온|따르면)|이\s*(라이브러리|함수|코드|파일|도구|프로젝트)"
    r"(는|은|가|이))"
)
_KO_QUESTION = re.compile(
    r"\?\s*\Z|(까요|나요|습니까|[니냐]까|인가요|가요\?|을까|ㄹ까|는지요|어때요|뭐예요|뭐야|"
    r"언제예요|누구예요|어디예요|할래요|줄래요|있나요)\s*[.!]*\s*\Z"
)
_KO_REQUEST = re.compile(
    r"(주세요|주십시오|주실래요|주시겠어요|줘요|줘|주라|봐|보세요|하세요|해라|할게요|합시다|"
    r"하죠|계속하죠)\s*[.!]*\s*\Z"
)
_KO_STANDING = re.compile(
    r"(항상|앞으로|늘|매번|언제나|기본적으로|계속|평소에)"
    r"|\A(?!(이|그|저|위|아래|다음|지금)\s)(\S+\s)?\S+(은|(?<!하)(?<!있)(?<!되)(?<!없)(?<!않)는|에는)\s"
)
_KO_HEDGE = re.compile(
    r"(아마|어쩌면|아무래도|혹시|글쎄|(것|거|게|듯)\s*같|듯(해요|합니다|싶)|지도\s*(몰라|모릅)|"
    r"모르겠지만|일지도|싶기도)"
)
_KO_SELF = r"(저는|전|나는|난|제가|내가)"
_KO_TEAM = r"(저희|우리)\s*(팀|회사|스타트업|조직|부서)?\s*(은|는|이|가|에서)?"
_KO_SMALL_TALK = re.compile(
    r"\A(네|예|아니요|아니|응|음|아|오|와|좋아요|괜찮아요|감사합니다|고마워요|고맙습니다|"
    r"죄송해요|죄송합니다|미안해요|안녕하세요|안녕|ㅋ+|ㅎ+|그래요|그렇군요|알겠습니다|알겠어요)"
    r"(\s|[,.!~]|\Z)"
)
_KO_TIME = (
    r"(다음\s*(주|달|분기|해|스프린트|학기)|이번\s*(주|달|분기|스프린트|여름|겨울|봄|가을|"
    r"학기|주말)|내일|모레|내년|올해|연말|월말|연초|\d+\s*월|\d+\s*일(?!\s*정도)|"
    r"[월화수목금토일]요일|요즘|현재|지금|당분간|마감|데드라인|출시할|출시\s*예정|런칭|"
    r"오늘\s*(까지|중으로|안에)|까지\s*(제출|끝내|마무리|통과|완료))"
)
_KO_PAST = re.compile(r"(었|았|였|했|됐)(습니다|어요|다|음)\s*[.!]*\s*\Z")

# (type, base confidence, pattern): the first match wins; a hedge lowers the base.
_KO_RULES: list[tuple[MemoryType, float, re.Pattern[str]]] = [
    (MemoryType.PREFERENCE, 0.90, re.compile(r"선호(합니다|해요|한다|함|하는|해|하고)")),
    (
        MemoryType.PREFERENCE,
        0.85,
        re.compile(
            r"좋아(합니다|해요|한다|함|하는)|싫어(합니다|해요|한다|함|하는)"
            r"|(\S+(이|가|는|은)|(?<!\S)(게|걸|것이|건|거|것은))\s+(더\s+|훨씬\s+)?(좋아요|좋습니다|좋아|좋음|"
            r"싫어요|싫습니다|싫어|편해요|편합니다|편하고|편할|나아요|낫습니다|나은|좋은)"
            r"|보다(는)?\s.*(좋|편|낫|나은|나아)"
            r"|(으면|면)\s*좋겠(어요|습니다|다)|받고\s*싶(어요|습니다)"
        ),
    ),
    (
        MemoryType.FACT,
        0.95,
        re.compile(
            rf"\A{_KO_SELF}\s*(.*\s)?\S*(이에요|예요|입니다|이고|이며|이라서|이라|였고|이었고|"
            r"출신|인\s*(것|거|듯))"
            r"|\A제\s+(이름|직무|직업|역할|직책|전공|나이)(은|는)"
            r"|(에서|로|으로)\s*(일하고|일해요|일합니다|근무하고|근무해요|근무합니다|일하는)"
            r"|(이끌고|운영하고|관리하고|맡고|가르치고|담당하고|리드하고)\s*있"
            r"|(전공했|전공하|공부했|졸업했)"
            r"|(에|에서)\s*(살고|살아요|삽니다)|(저|나)(뿐|밖에)"
            r"|\A(저희|우리)\s*(회사|스타트업|팀)(은|는)\s.*(판매|만듭니다|만들어요|개발합니다|"
            r"운영합니다|제공합니다|입니다|이에요|예요)"
        ),
    ),
    (
        MemoryType.CONTEXT,
        0.85,
        re.compile(
            rf"{_KO_TIME}|(하고|준비하고|만들고|쓰고|옮기고|전환하고|진행하고)\s*있(어요|습니다)"
            r"|중(이에요|입니다|이야)"
        ),
    ),
    (
        MemoryType.FACT,
        0.90,
        re.compile(
            rf"\A{_KO_SELF}\s.*(사용합니다|사용해요|써요|씁니다|개발합니다|개발해요|작성합니다|"
            r"할\s*줄\s*알|할\s*수\s*있어요|다룹니다|다뤄요)"
            r"|전문(으로|이에요|입니다|가)|(써|사용해|해|일해)\s*왔"
        ),
    ),
    (
        MemoryType.CONTEXT,
        0.80,
        re.compile(
            rf"\A{_KO_TEAM}\s*.*(사용합니다|사용해요|써요|씁니다|일합니다|일해요|배포합니다|"
            r"배포해요|진행합니다|따릅니다|운영합니다|합니다|해요)"
        ),
    ),
]


def _korean(sentence: str) -> tuple[MemoryType, float] | None:
    if _KO_QUESTION.search(sentence) or _KO_SMALL_TALK.search(sentence):
        return None
    if _KO_NOT_ABOUT_USER.search(sentence) or "라고" in sentence:
        return None
    hedged = _KO_HEDGE.search(sentence) is not None
    if _KO_REQUEST.search(sentence):
        if not _KO_STANDING.search(sentence):
            return None
        return MemoryType.PREFERENCE, _hedged(0.85, hedged)
    first_person = re.search(rf"{_KO_SELF}|{_KO_TEAM}|\A제\s", sentence) is not None
    for memory_type, base, pattern in _KO_RULES:
        if pattern.search(sentence):
            # "Python 3.12는 10월에 출시되었습니다": dated, but past news about the world
            past_news = not first_person and _KO_PAST.search(sentence) is not None
            if memory_type is MemoryType.CONTEXT and past_news:
                return None
            return memory_type, _hedged(base, hedged)
    return None


_KO_PRONOUNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(a), b)
    for a, b in (
        (r"\A(저는|전|나는|난)\s*", ""),
        (r"(저희|우리)\s*(는|은)\s", "사용자의 팀은 "),
        (r"(저희|우리)\s+", "사용자의 "),
        (r"(저희|우리)(가|도|를)", r"사용자 측\2"),
        (r"(저한테|나한테|저에게|나에게)", "사용자에게"),
        (r"(제가|내가)", "사용자가"),
        (r"(저도|나도)\s", "사용자도 "),
        (r"(저를|나를)\s", "사용자를 "),
        (r"(저뿐|나뿐)", "사용자뿐"),
        (r"(?<!\S)(저는|나는)\s", "사용자는 "),
        (r"(?<!\S)(제|내)\s", "사용자의 "),
    )
]
# Sentence endings to the noun form of notes ("-함", "-임", "-음"), longest first.
_KO_ENDINGS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(a + r"\Z"), b)
    for a, b in (
        (r"(것|거|게|듯)\s*같(아요|습니다|네요|아|다)", r"\1 같다고 함"),
        (r"지도\s*(몰라요|모릅니다|몰라)", "지도 모른다고 함"),
        (r"(으면|면)\s*좋겠(어요|습니다|다)", r"\1 좋겠다고 함"),
        (r"\s*주(세요|십시오|시겠어요|실래요|세요)", " 주기를 원함"),
        (r"싶(어요|습니다|어)", "싶어 함"),
        (r"(입니다|이에요|예요)", "임"),
        (r"있(습니다|어요|어)", "있음"),
        (r"없(습니다|어요|어)", "없음"),
        (r"(했|였|었|았|왔|셨)(습니다|어요|어|다)", r"\1음"),
        (r"(합니다|해요|한다)", "함"),
        (r"(됩니다|돼요|된다)", "됨"),
        (r"좋(습니다|아요)", "좋음"),
        (r"싫(습니다|어요)", "싫음"),
        (r"어려(워요|웁니다)", "어려움"),
        (r"(나아요|낫습니다)", "나음"),
        (r"(알아요|압니다)", "앎"),
        (r"(살아요|삽니다)", "삶"),
        (r"(써요|씁니다)", "씀"),
        (r"(가요|갑니다)", "감"),
        (r"(와요|옵니다)", "옴"),
        (r"(봐요|봅니다)", "봄"),
        (r"(만들어요|만듭니다)", "만듦"),
        (r"(몰라요|모릅니다)", "모름"),
        (r"(배워요|배웁니다)", "배움"),
        (r"(다녀요|다닙니다)", "다님"),
        (r"습니다", "음"),
    )
]


def _noun_form(match: re.Match[str]) -> str:
    """ "갑니다" -> "감": the syllable before "니다" drops its final ㅂ and takes ㅁ."""
    code = ord(match.group(1)) - 0xAC00
    return chr(0xAC00 + code - code % 28 + 16)


def third_person_ko(sentence: str) -> str:
    """Rewrite a Korean sentence about the user as a third-person note: "사용자는 ...함."."""
    text = sentence.strip().rstrip(".!~。 ")
    for pattern, replacement in _KO_PRONOUNS:
        text = pattern.sub(replacement, text)
    for pattern, replacement in _KO_ENDINGS:
        text, count = pattern.subn(replacement, text)
        if count:
            break
    else:
        # any other "-ㅂ니다" ending: the noun form of its stem
        text = re.sub(
            r"([\uac00-\ud7a3])니다\Z",
            lambda m: _noun_form(m) if (ord(m.group(1)) - 0xAC00) % 28 == 17 else m.group(0),
            text,
        )
    if not text.startswith("사용자"):
        text = f"사용자는 {text}"
    return text + "."


def _hedged(base: float, hedged: bool) -> float:
    return round(base - HEDGE_PENALTY, 2) if hedged else base


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
