"""The offline extractor's Korean rules: which sentences are about the user, their type and
confidence, and the memory as a note in the plain noun-form ending (see ``_offline``)."""

from __future__ import annotations

import re

from ._model import MemoryType
from ._offline_text import _hedged, _words

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
