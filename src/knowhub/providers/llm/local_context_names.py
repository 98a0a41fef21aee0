"""Which capitalised words of a sentence are names: the English entity finder of the offline extractor.

A capital letter marks a name only in the middle of a clause. At a clause start (a
sentence, a list item, after a colon or a dash) it marks the start, so an ordinary word
there ("Never", "Restarting", "Tiny", "Emailed Anouk") is no entity. The rules, all from
general knowledge of English, none from benchmark text:

* a word of the general common-word list (``knowhub/text/common_words_en.txt``, matched by
  its Snowball stem) at a clause start is no name alone; a verb, function word, numeral or
  interjection is cut from the front of a longer run ("Emailed Anouk" → Anouk), an
  adjective or noun is not ("New York", "Network Rail");
* a common word capitalised inside a clause stays a name ("Slack", "Render") unless it is a
  function word or numeral, or the same conversation also writes it in lower case ("press
  Done" when "done" is written too: a label, not a name);
* pronoun contractions ("We're", "He's") are no names; a possessive ends the name
  ("Kieran's PR" → Kieran, then "PR" on its own);
* weekdays and months are times, not names; a weekday written as a schedule ("Fridays",
  "Fri") is one normalised ``time`` entity ("Friday"), the same for all its spellings;
* command-line flags ("-Wall", "--no-cache") are code (blanked by
  :func:`.local_context_code.strip_code`), and chat abbreviations ("TL;DR", "WTF") are
  no names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from knowhub.providers.llm.local_context_code import (
    check_entity,
    glued_to_identifier,
    is_language,
    trim_code_words,
)
from knowhub.providers.llm.local_context_text import MONTHS, STOPWORDS, WEEKDAYS
from knowhub.providers.llm.local_context_topics import IRREGULAR_VERBS
from knowhub.text.query_stopwords import ENGLISH_QUERY_STOPWORDS
from knowhub.text.tokens import snowball

__all__ = [
    "GENERIC_ABBREVIATIONS",
    "NOT_ENTITY",
    "NameContext",
    "check_name",
    "common_word_class",
    "is_time_word",
    "name_context",
    "names_in",
    "recurring_weekday",
]

_CAP_WORD = r"[A-Z](?:[^\W\u3400-\u9fff]|['’\-])*"  # a Latin word stops at Chinese text
#: A run of capitalised words; "of", "de", "van", "von" may join two ("Bank of England"),
#: "the" never does: "Keep the Prisma" is a verb and a name, not one name.
_ENTITY_RUN = re.compile(rf"(?:(?:Dr|Mr|Mrs|Ms|Prof|St)\.\s+)?{_CAP_WORD}(?:\s+(?:of|de|da|van|von)\s+{_CAP_WORD}|\s+{_CAP_WORD})*")
NOT_ENTITY = frozenset(
    {w.capitalize() for w in STOPWORDS}
    | {m.capitalize() for m in MONTHS} | {d.capitalize() for d in WEEKDAYS}
    | {"I", "I'm", "I've", "I'd", "I'll", "OK", "Ok", "Okay", "Mom", "Dad", "Hey", "Hi", "Wow", "Yeah",
       "Thanks", "Thank", "Congrats", "Congratulations", "Sorry", "Please", "Omg", "Lol", "Haha", "Aww",
       "Awesome", "Cool", "Nice", "Great", "Sure", "Yes", "No", "Sounds", "Totally", "Absolutely", "Good",
       "Wish", "Hope", "Glad", "Love", "Let's", "Bye", "Take", "Keep", "God", "Oh", "Ah", "Hmm", "Yep", "Nope",
       "Agreed", "True", "Right", "Exactly", "Definitely", "Anyway", "Btw", "Also", "Plus", "Well", "Same"}
)
_PLACE_PREP = re.compile(r"\b(?:in|at|to|from|visited|visit|near|around)\s+$", re.I)
#: "work at X", "joined X", "hired by X": X is an employer, whatever the preposition
_EMPLOYER_PREP = re.compile(
    r"\b(?:work(?:s|ed|ing)?|intern(?:s|ed|ing)?|job|position|role|student|studying|studies|professor|researcher|"
    r"employee|staff|teacher|nurse|engineer|developer)\s+(?:\w+\s+){0,2}(?:at|for|with)\s+$|"
    r"\b(?:joined|join|joining|employed by|hired by|hired at|offer from|interview(?:ed|ing)? (?:at|with))\s+$",
    re.I)
#: Common abbreviations that are ordinary nouns, not names (general computing and everyday
#: English abbreviations, as any dictionary of abbreviations lists them, the chat
#: abbreviations of informal writing, and the ISO 4217 codes of the most traded
#: currencies): "the TTL", "an API", "in EUR", "WTF".
GENERIC_ABBREVIATIONS = frozenset(
    """
API APIS URL URLS URI TTL CPU GPU TPU RAM ROM SSD HDD USB HDMI LED LCD OS VM VPS VPN LAN WAN DNS TCP UDP IP HTTP
USD EUR GBP JPY CNY RMB HKD CHF CAD AUD INR
HTTPS SSH SSL TLS CDN SDK CLI GUI UI UX IDE JSON XML YAML CSV PDF HTML CSS SQL ORM JWT RPC REST CRUD ETL CI CD
QA QPS RPS SLA SLO KPI OKR ROI CEO CTO CFO COO HR PR PM ETA ASAP FAQ DIY TV PC ID PIN OTP SMS MMS GPS AI ML
NLP LLM OCR IOT AR VR CRM ERP SaaS B2B B2C MVP POC RFC PTO OOO WFH EOD TBD FYI IMO BTW DM PS AM FM DJ MC PHD
PhD MBA MSc BSc MD
KB MB GB TB PB KiB MiB GiB TiB Gi Mi Ki GHz MHz KHz Hz MS
NACK EOL CTE SD TLDR WTF OMG LOL LMAO ROFL IDK TBH FWIW AFAIK IIRC IMHO NVM AKA TL DR
""".split()  # noqa: SIM905
)
#: An all-capitals word with an English inflection ending is a shouted word ("REJECTED",
#: "PENDING", "URGENTLY"), not an acronym or a name.
_SHOUTED = re.compile(r"^[A-Z]{2,}(?:ED|ING|LY|TION|MENT|NESS|ABLE)$")
_UNIT_WORDS = frozenset(a.casefold() for a in GENERIC_ABBREVIATIONS if a[-1:] in "BbiHz" or a in ("MS",))
_ORG_SUFFIX = ("Inc", "Corp", "University", "College", "School", "Company", "Club", "Group", "Center", "Centre",
               "Foundation", "Institute", "Studio", "Bank", "Hospital", "Church", "Museum", "Park", "Festival", "Conference")
#: "TL;DR" and its spellings: a chat abbreviation, blanked before names are looked for.
_TLDR = re.compile(r"\bTL\s*;\s*DR\b|\bTLDR\b", re.I)


def _is_generic_abbreviation(name: str) -> bool:
    """An abbreviation that is an ordinary noun (``the default TTL``, ``the PDFs``), not a name."""
    plural = name[:-1] if len(name) > 2 and name.endswith("s") and name[:-1].isupper() else ""
    return (name in GENERIC_ABBREVIATIONS or plural in GENERIC_ABBREVIATIONS or name.casefold() in _UNIT_WORDS
            or bool(_SHOUTED.match(name)))


# ---------------------------------------------------------------------- the common-word list

def _load_lexicon() -> dict[str, str]:
    """Word → class ("verb", "function", "numeral", "interjection", "adjective", "noun")."""
    path = Path(__file__).resolve().parents[2] / "text" / "common_words_en.txt"
    classes: dict[str, str] = {}
    current = "noun"
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
            continue
        for word in line.split():
            classes.setdefault(word, current)
    for word in STOPWORDS | ENGLISH_QUERY_STOPWORDS:
        classes.setdefault(word.replace("’", "'"), "function")
    for past, base in IRREGULAR_VERBS.items():
        classes.setdefault(past, "verb")
        classes.setdefault(base, "verb")
    return classes


_LEXICON = _load_lexicon()
_STEMS: dict[str, str] = {}
for _word, _class in _LEXICON.items():
    _STEMS.setdefault(snowball(_word), _class)
#: Classes cut from the front of a run at a clause start: no name starts with them.
_LEADING = frozenset({"verb", "function", "numeral", "interjection"})


def common_word_class(word: str) -> str | None:
    """The class of a common English word (any inflection), or None for no common word.

    An ``-ed`` / ``-ing`` form of a listed noun is a verb ("Booked", "Logging")."""
    bare = word.strip("'’.,:;!?\"()*").replace("’", "'")
    if any(c.isupper() for c in bare[1:]) and not bare.isupper():
        return None  # internal capitals ("GoT", "iPhone"): a name's spelling, no common word
    bare = bare.lower()
    if not bare.isalpha() and "'" not in bare:
        return None
    if bare in _LEXICON:
        return _LEXICON[bare]
    found = _STEMS.get(snowball(bare))
    if found in ("noun", "adjective") and bare.endswith(("ed", "ing")):
        return "verb"
    return found


#: Weekday and month abbreviations (months only next to a day number: "Jan" is also a name).
_WEEKDAY_ABBR = frozenset("mon tue tues wed weds thu thur thurs fri sat sun".split())  # noqa: SIM905
_MONTH_ABBR = frozenset("jan feb mar apr jun jul aug sep sept oct nov dec".split())  # noqa: SIM905


_WEEKDAY_OF = {d[:n]: d for d in WEEKDAYS for n in (3, 4)} | {"weds": "wednesday", "thur": "thursday",
                                                            "thurs": "thursday", "tues": "tuesday"}


def recurring_weekday(word: str) -> str | None:
    """The weekday a plural or abbreviation names ("Tuesdays", "Thu" → "Tuesday", "Thursday"):
    a schedule ("Tuesdays and Thursdays"), one normalised ``time`` entity per weekday. A
    singular full name ("on Friday") is a date, resolved by the time cues: None."""
    bare = word.strip("'’.,:;!?\"()").lower()
    if bare.endswith("s") and bare[:-1] in WEEKDAYS:
        return bare[:-1].capitalize()
    day = _WEEKDAY_OF.get(bare) if bare not in WEEKDAYS else None
    return day.capitalize() if day else None


def is_time_word(word: str, next_text: str = "", before: str = "") -> bool:
    """A weekday or month, an abbreviation or plural of one ("Fri", "Fridays", "Thu")."""
    bare = word.strip("'’.,:;!?\"()").lower().removesuffix("'s")
    single = bare[:-1] if bare.endswith("s") else bare
    if bare in WEEKDAYS or single in WEEKDAYS or bare in _WEEKDAY_ABBR or bare in MONTHS:
        return True
    if bare in _MONTH_ABBR or single in _MONTH_ABBR:
        return bool(re.match(r"\.?\s*\d", next_text) or re.search(r"\d\s*$", before))
    return False


#: Titles before a name; alone they name nobody ("Ask Dr. Osei" → never "Dr").
_TITLES = frozenset(["Dr", "Mr", "Mrs", "Ms", "Prof", "St", "Sir", "Dame"])
_PRONOUNS = frozenset(
    "i you we they he she it that there here what who where when how let this everyone everything nobody".split())  # noqa: SIM905
_TITLE_CASE = re.compile(r"^[A-Z][a-z]+$")
_CONTRACTION = re.compile(r"^([A-Za-z]+)['’](s|re|ve|ll|d|m|t)$")


def _contraction(word: str) -> tuple[str, str] | None:
    """``(stem, ending)`` of "He's", "We're", "Kieran's"; None for a word without one."""
    match = _CONTRACTION.match(word.strip(".,:;!?\"()"))
    return (match.group(1), match.group(2).lower()) if match else None


# ---------------------------------------------------------------------- clause starts

#: The start of a sentence or a list item (after list markers, quotes and emphasis).
_SENTENCE_START = re.compile(r"""^[\s"'“‘*_#>|\-•+(\[]*(?:\d+[.)][\s"'“‘*_]*)?$""")
#: A clause start inside a sentence: after a colon, semicolon, dash or bracket. A name may
#: stand there ("Backend: Fastify"), an ordinary word may too ("Rule: Never ...").
_CLAUSE_START = re.compile(r"""(?:[:;!?.(\[{—–]|\s-)[\s"'“‘*_]*$""")


def _start_kind(sentence: str, start: int) -> str:
    """"sentence" at a sentence or list-item start, "clause" after a colon, dash or bracket, else ""."""
    before = sentence[:start]
    if _SENTENCE_START.match(before):
        return "sentence"
    return "clause" if _CLAUSE_START.search(before[-200:]) else ""  # anchored at the end: the tail is enough


@dataclass
class NameContext:
    """What one extraction payload says about its words: the capitalised words written
    after a sentence start, those written inside a clause (neither after a colon nor a
    dash), and the words it writes in lower case."""

    capitalized: set[str] = field(default_factory=set)
    inside: set[str] = field(default_factory=set)
    lower: set[str] = field(default_factory=set)


_WORD = re.compile(r"[A-Za-z][A-Za-z'’\-]*")


def name_context(sentences: list[str]) -> NameContext:
    """:class:`NameContext` of the prose ``sentences`` of a payload."""
    ctx = NameContext()
    for sentence in sentences:
        for match in _WORD.finditer(sentence):
            word = match.group(0)
            if word[0].islower():
                ctx.lower.add(word.lower())
            else:
                kind = _start_kind(sentence, match.start())
                bare = word.strip("'’").removesuffix("'s").removesuffix("’s")
                if kind != "sentence":
                    ctx.capitalized.add(bare)
                if not kind:
                    ctx.inside.add(bare)
    return ctx


def _named_in_chat(word: str, ctx: NameContext) -> bool:
    """Capitalised inside a clause and never written in lower case: this chat's name ("Slack")."""
    bare = word.strip("'’").removesuffix("'s").removesuffix("’s")
    return bare in ctx.inside and bare.lower() not in ctx.lower


# ---------------------------------------------------------------------- runs

def _split_run(words: list[str]) -> list[tuple[int, list[str]]]:
    """A run cut at contractions: "He's Diane" → Diane; "Kieran's PR" → Kieran, PR. A
    possessive stays inside a title whose next word is written like a word, not like an
    abbreviation or an identifier ("Charlotte's Web", "New Year's Eve"). Yields ``(index of the first word, words)``."""
    parts: list[tuple[int, list[str]]] = []
    current: list[str] = []
    first = 0
    for i, word in enumerate(words):
        found = _contraction(word)
        following = words[i + 1] if i + 1 < len(words) else ""
        pronoun = found is not None and found[0].lower() in _PRONOUNS
        titled = bool(_TITLE_CASE.match(following))
        if found is None or (found[1] == "s" and not pronoun and titled):
            if not current:
                first = i
            current.append(word)
            continue
        stem, ending = found
        if ending == "s" and not pronoun and common_word_class(stem) is None:
            if not current:
                first = i
            current.append(stem)  # a possessive ends the name
        if current:
            parts.append((first, current))
        current = []
    if current:
        parts.append((first, current))
    return parts


def names_in(sentence: str, speakers: set[str], ctx: NameContext) -> list[tuple[str, str]]:
    """``(name, type)`` pairs found in one English sentence (type: organization, place or
    named entity)."""
    sentence = _TLDR.sub(lambda m: " " * len(m.group(0)), sentence)
    found: list[tuple[str, str]] = []
    for match in _ENTITY_RUN.finditer(sentence):
        if glued_to_identifier(sentence, match.start()):
            continue  # the capitalised tail of an identifier (getUserName)
        raw_words = match.group(0).split()
        offsets = [m.start() + match.start() for m in re.finditer(r"\S+", match.group(0))]
        for first, words in _split_run(raw_words):
            start = offsets[first]
            for name, kind in _name_of(sentence, start, words, speakers, ctx):
                found.append((name, kind))
    return found


def _name_of(sentence: str, start: int, words: list[str], speakers: set[str],
             ctx: NameContext) -> list[tuple[str, str]]:
    start_kind = _start_kind(sentence, start)
    at_start = start_kind != ""
    words = trim_code_words(words)
    while words and (words[0].strip("'’") in NOT_ENTITY
                     or (at_start and len(words) > 1 and common_word_class(words[0]) in _LEADING
                         and not _named_in_chat(words[0], ctx))):
        words = words[1:]
    if any(w.lower().strip("'’").removesuffix("'s").removesuffix("’s") in speakers for w in words):
        return []  # a speaker's own (full) name, or a greeting to the other speaker
    while words and (words[-1] in NOT_ENTITY or words[-1].lower() in ("of", "and", "&")):
        words = words[:-1]
    if not words:
        return []
    name = " ".join(words).strip("'’-").removesuffix("'s").removesuffix("’s").strip("-")
    if len(name) < 2 or name.lower() in speakers or name in _TITLES or (
            name.lower() in STOPWORDS and common_word_class(name) is not None):
        return []
    end = start + len(" ".join(words))
    if len(words) == 1:
        weekday = recurring_weekday(name)
        if weekday:
            return [(weekday, "time")]
        if _is_generic_abbreviation(name) or is_time_word(name, sentence[end:], sentence[:start]):
            return []
        common = common_word_class(name) is not None and not name.isupper() and not is_language(name)
        if common and at_start and not _named_in_chat(name, ctx):
            return []  # an ordinary word opening a sentence or clause ("Never", "Tiny")
        if start_kind == "sentence" and not name.isupper() and name not in ctx.capitalized:
            return []  # a capital that only ever opens a sentence
    before = sentence[max(0, start - 200): sentence.find(words[0], start)]  # the patterns end at $: the tail is enough
    if any(name.endswith(s) for s in _ORG_SUFFIX) or _EMPLOYER_PREP.search(before):
        kind = "organization"
    elif _PLACE_PREP.search(before):
        kind = "place"
    else:
        kind = "named entity"
        word_class = common_word_class(name) if len(words) == 1 and not name.isupper() else None
        if word_class is not None and not is_language(name) and (
                (word_class in ("function", "numeral", "interjection") and _LEXICON.get(name.lower()) == word_class)
                or name.lower() in ctx.lower):
            return []  # a function word, or a common word the chat also writes in lower case: a label
    return [(name, kind)]


def check_name(name: str, kind: str | None) -> str | None:
    """:func:`.local_context_code.check_entity` plus the rules of this module that hold
    for a whole name, found or model-given: a weekday or month, a pronoun contraction, a lone
    title, a command-line flag or a generic or chat abbreviation is no entity (None); a
    weekday typed ``time`` (:func:`recurring_weekday`) stays."""
    bare = name.strip()
    if kind == "time" and bare.lower() in WEEKDAYS:
        return kind
    if (kind or "") != "relation" and (
            bare.startswith("-") or bare in _TITLES or _is_generic_abbreviation(bare) or _TLDR.fullmatch(bare)
            or (" " not in bare and (is_time_word(bare) or (_contraction(bare) or ("", ""))[0].lower() in _PRONOUNS))):
        return None
    return check_entity(name, kind)
