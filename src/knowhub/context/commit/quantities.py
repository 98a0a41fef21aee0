"""Quantities a sentence gives a setting: "batches of 500 rows", "借期 30 天", "cut-off at 15:30".

:func:`quantities` finds, per unit, the value a sentence states and, when the sentence has
change wording, the value it leaves:

* a number with a unit (rows, days, GB, ms …, 条/天/小时/家/人 …), an English number word
  with a unit ("six characters"), or a time of day (``14:00``, ``3:30 pm``, ``下午 3 点半``,
  ``下午3:30``, ``noon``: unit ``clock``); a time naming no part of day takes the one of an
  earlier time in the sentence ("下午 3 点半改成 4 点", "from 3:30 pm to 4:00": 16:00); in a change
  (a moving verb: moved, pushed, shifted, 改到, 提前, 推迟) the other half of the day when that is
  nearer the earlier time ("from 11 am to 1:00": 13:00; "晚上 11 点改到 12 点": 00:00; "from
  10 am to 9": 09:00), in a range (no moving verb: "open from 9 am to 5:00", "9 am–5", 从早上 9 点到
  5 点) the first such time after the start, since a range ends after it begins (17:00);
* change wording — "increase … to", "instead of", "from … to", a request to move a value
  ("can we go to five?", "make it 20"), 改成/改到/调到/变成/从…到 — marks the statement as a
  change; a bare number after it ("go to five", "改到 5") takes the unit of the sentence's
  other quantity;
* the value being left: the one after from / instead of / rather than / 从 / 原来, else the
  other value of the same unit in a change sentence ("six characters is one too many, can we
  go to five?": was 6) — unless the changed value names a thing of its own that shares no
  word with it ("batch is 500 rows, cut the page size to 50 rows": a page size, not the batch).

:attr:`Quantity.topic` holds the content words before the value (and, in Chinese, the noun
right after a measure word: "18 家门店" → 门店), so that only quantities of one thing are
compared (:func:`topics_overlap`). Word lists are general measurement and counting words.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from knowhub.text.query_stopwords import ENGLISH_QUERY_STOPWORDS

__all__ = ["SAME_SESSION", "Quantity", "changes_quantity", "quantities", "topics_overlap"]

#: The topic of a change that names no topic ("改成 2Gi 之后压测通过了", "make it 20"): it
#: replaces the value of that unit said earlier in the same session.
SAME_SESSION = "*"

#: Units of a setting's value (general measurement and counting words, English and Chinese).
_UNITS_EN = {
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s",
    "seconds": "s", "min": "min", "mins": "min", "minute": "min", "minutes": "min", "h": "h", "hr": "h", "hrs": "h",
    "hour": "h", "hours": "h", "day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month",
    "months": "month", "year": "year", "years": "year", "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "kib": "kb",
    "mib": "mb", "gib": "gb", "tib": "tb", "mi": "mb", "gi": "gb", "%": "%", "percent": "%", "rows": "row",
    "row": "row", "records": "row", "items": "item", "item": "item", "messages": "msg", "lines": "line",
    "requests": "req", "connections": "conn", "workers": "worker", "threads": "thread", "replicas": "replica",
    "retries": "retry", "attempts": "retry", "nodes": "node", "instances": "instance", "cores": "core",
    "vcpus": "core", "cpus": "core", "users": "user", "seats": "seat", "courts": "court", "books": "book",
    "characters": "char", "chars": "char", "pages": "page", "port": "port", "stores": "outlet", "shops": "outlet",
    "branches": "outlet", "outlets": "outlet", "locations": "outlet", "people": "person", "employees": "person",
    "members": "person", "staff": "person", "digits": "digit", "times": "times",
}
_UNITS_CN = {"毫秒": "ms", "秒": "s", "秒钟": "s", "分钟": "min", "小时": "h", "天": "day", "周": "week", "个月": "month",
             "年": "year", "条": "row", "行": "row", "台": "instance", "本": "book", "核": "core", "%": "%",
             "G": "gb", "Gi": "gb", "GB": "gb", "M": "mb", "Mi": "mb", "MB": "mb", "块场地": "court", "片场地": "court",
             "家": "outlet", "个人": "person", "人": "person", "名": "person", "次": "times"}
#: Units of Chinese measure words whose noun follows them ("18 家门店", "20 条记录"): the noun is
#: part of the topic.
_MEASURE_UNITS = frozenset({"outlet", "row", "instance", "book", "person", "times"})
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                 "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
                 "sixty": 60, "ninety": 90, "hundred": 100}
_NUM = r"\d+(?:[.,]\d+)*"
_WORDNUM = "|".join(_NUMBER_WORDS)
_UNIT_EN_RE = "|".join(sorted(map(re.escape, _UNITS_EN), key=len, reverse=True))
_QTY_EN = re.compile(rf"(?<![\w.:])({_NUM}|(?i:{_WORDNUM}))\s*-?\s*({_UNIT_EN_RE})\b|\bport\s+({_NUM})\b", re.I)
_QTY_CN = re.compile(rf"({_NUM})\s*({'|'.join(sorted(map(re.escape, _UNITS_CN), key=len, reverse=True))})")
#: A time of day: 14:00, 9:30 am, 3 pm, 下午 3 点(半), 下午3:30, noon — never a log timestamp (14:00:07).
_CN_PART = "上午|早上|凌晨|中午|下午|傍晚|晚上"
_CLOCK = re.compile(rf"(?:(?P<zh1>{_CN_PART})\s*)?(?<![\d:.])(?P<h1>[01]?\d|2[0-3])[:：](?P<m1>[0-5]\d)(?![:：]?\d)"
                    r"\s*(?P<ap1>am|pm|a\.m\.|p\.m\.)?|"
                    r"(?<![\d:.])(?P<h2>1[0-2]|0?[1-9])\s*(?P<ap2>am|pm|a\.m\.|p\.m\.)(?!\w)|"
                    rf"(?:(?P<zh3>{_CN_PART})\s*)?(?P<h3>\d{{1,2}})\s*点(?P<m3>半|\s*\d{{1,2}}\s*分)?|"
                    r"\b(?P<word>noon|midday|midnight)\b", re.I)
#: A change of a setting's value: "increase the batch to 2,000 rows", "8080 instead of 8000", "借期改成 21 天".
_QTY_CHANGE_EN = re.compile(
    r"\b(?:increas|rais|bump|reduc|lower|decreas|extend|shorten|cut|chang|switch|mov|set|mak|updat|adjust|doubl|halv|"
    r"tun|limit|cap|push|pull|bring|drop)\w*\b[^.;!?]{0,60}?\bto\b|\binstead of\b|\brather than\b|"
    rf"\b(?:go|get|come) (?:up |down |back )?to\s+(?:{_NUM}|{_WORDNUM})\b|"
    r"\bfrom\s+\S+\s+(?:\S+\s+)?to\b|→|->|\bnow\b|\bnew\b", re.I)
_QTY_CHANGE_CN = re.compile(r"改成|改为|改到|调到|调成|调整为|调整到|提高到|提升到|降到|降低到|减到|减少到|增加到|加到|扩到|扩大到|"
                            r"延长到|缩短到|放宽到|推迟到|提前到|挪到|变成|变为|换成|从.{0,12}?(?:到|改|调|提|降|变|增|减|扩|缩)|"
                            r"→|->|现在是|以后是")
#: A bare number a change moves a value to ("can we go to five?", "make it 20", "改到 5"): it
#: takes the unit of the sentence's other quantity.
_BARE_TO_EN = re.compile(rf"\b(?:to|make it|instead of|rather than|from)\s+({_NUM}|(?i:{_WORDNUM}))\b(?!\s*(?:[-:.]\d|%|{_UNIT_EN_RE})\b)",
                         re.I)
_BARE_TO_CN = re.compile(rf"(?:改成|改为|改到|调到|调成|降到|减到|加到|提高到|增加到|变成|变为|从|原来是?)\s*({_NUM})(?![\d.:：]|\s*[^\d\s，。；！？,.;!?])")
_LEAVING = re.compile(r"(?:\b(?:from|instead of|rather than|not|was|were|before)\s*$|(?:从|不是|而不是|原来是?|之前是?)\s*$)", re.I)
_GENERIC_CN = frozenset("个的在从到为改成提高降低调整设置是了就把让由和与或及都也再还并且可以要会能这那其一各等将按于以")
_QTY_STOP_EN = frozenset(
    """to from the a an of at is are be it we i our my and or every each per with for in on by now new old instead
    increase raise bump reduce lower change set make move switch up down let please can you should will would than
    that this about around only just max min maximum minimum most least after before run runs use keep""".split())  # noqa: SIM905

#: Words of change wording and requests that name no thing ("could we maybe go to 2,000 rows?").
_CHANGE_WORDS = frozenset("""go get come cut push pull bring drop extend shorten adjust double halve tune limit cap update
    bump let try stay stays keep maybe perhaps please how about instead okay ok""".split())  # noqa: SIM905


@dataclass(frozen=True)
class Quantity:
    """The value a sentence gives one unit of a setting (see the module doc)."""

    unit: str
    value: str
    changed: bool
    topic: tuple[str, ...]
    #: The value the change leaves ("" when the sentence names none).
    was: str = ""


def _stem(word: str) -> str:
    word = word.lower().removesuffix("'s")
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _topic(before: str, cjk: bool, after: str = "", measure: bool = False) -> tuple[str, ...]:
    """Content words of the clause just before a quantity ("the writer's batch size" →
    writer, batch, size; "借期" → 借, 期); for a Chinese ``measure`` word, also the noun after
    it ("18 家门店") and the clause's first word ("门店总数变成 24 家")."""
    clause = re.split(r"[，,。；;：:、!?！？()（）]", before)[-1]
    if cjk:
        tail = clause[-8:]
        chars = [c for c in tail if "\u3400" <= c <= "\u9fff" and c not in _GENERIC_CN]
        pairs = [a + b for a, b in itertools.pairwise(tail) if a in chars and b in chars]
        words = [_stem(w) for w in re.findall(r"[A-Za-z][\w\-]+", clause[-30:])]
        noun = re.match(r"[\u4e00-\u9fff]{2,4}", after)
        extra = [] if not noun else [noun.group(0)[:2]]
        head = re.match(r"\s*([\u4e00-\u9fff]{2})", clause)  # a count's subject: "分店总数变成 15 家"
        if measure:
            extra += [head.group(1)] if head and not set(head.group(1)) & _GENERIC_CN else []
        return tuple(dict.fromkeys(chars[-4:] + pairs[-3:] + words[-2:] + extra))
    words = [_stem(w) for w in re.findall(r"[A-Za-z][\w\-']+", clause[-60:])]
    return tuple(dict.fromkeys(w for w in words[-4:] if len(w) > 1 and w not in _QTY_STOP_EN))


def topics_overlap(a: tuple[str, ...] | list[str], b: tuple[str, ...] | list[str]) -> bool:
    """Whether two quantity topics name the same thing: a shared word or Chinese two-character
    word ("借期"), or two shared Chinese characters — one shared character ("保留" / "保持")
    is not enough."""
    shared = set(a) & set(b) - {SAME_SESSION}
    return any(len(w) > 1 for w in shared) or len(shared) >= 2


def _other_thing(earlier: tuple[str, ...], own: tuple[str, ...]) -> bool:
    """Whether a changed value names a thing of its own that shares no word with the earlier
    value of its unit in the sentence (different nouns: the earlier value is no value it leaves).
    Function words and change verbs name no thing; in Chinese only a two-character word does
    ("能不能改成" names nothing, "分页大小" does)."""
    nouns = [w for w in own if w not in _CHANGE_WORDS and w not in ENGLISH_QUERY_STOPWORDS
             and (len(w) > 1 or w.isascii())]
    return bool(earlier and nouns) and not set(earlier) & set(nouns)


def _number(raw: str) -> str:
    return str(_NUMBER_WORDS.get(raw.lower(), raw.replace(",", "")))


def _part_of_day(match: re.Match[str]) -> str:
    """"pm" / "am" when a time-of-day match says its part of day (3 pm, 下午, 上午, noon), else ""."""
    g = match.groupdict()
    part = (g["ap1"] or g["zh1"] or g["ap2"] or g["zh3"] or g["word"] or "").lower()
    if part.startswith("p") or part in ("下午", "傍晚", "晚上", "noon", "midday"):
        return "pm"
    return "am" if part else ""


def _clock(match: re.Match[str], carried: str = "") -> str:
    """``HH:MM`` of a time-of-day match; ``carried`` ("pm") is the part of day of an earlier time
    of the same sentence, for a time that names none ("下午 3 点半改成 4 点": 16:00)."""
    g = match.groupdict()
    if g["word"]:
        return "00:00" if g["word"].lower() == "midnight" else "12:00"
    if g["h1"] is not None:
        hour, minute, part, half = int(g["h1"]), int(g["m1"]), g["zh1"] or "", g["ap1"] or ""
        half = (half or ("" if part or g["h1"].startswith("0") else carried)).lower()  # 09:00 is a 24-hour time
    elif g["h2"] is not None:
        hour, minute, part, half = int(g["h2"]), 0, "", g["ap2"].lower()
    else:
        hour, part, extra = int(g["h3"]), g["zh3"] or "", g["m3"] or ""
        minute = 30 if extra == "半" else int(re.sub(r"\D", "", extra) or 0)
        half = "pm" if not part and carried == "pm" else ""
    if part:  # 下午 3 点, 下午3:30
        half = "pm" if part in ("下午", "傍晚", "晚上") and hour < 12 else ""
        if part == "中午" and hour < 11:  # 中午 1 点 is 13:00; 中午 11/12 点 stay
            half = "pm"
        elif part in ("晚上", "凌晨") and hour == 12:  # 晚上 12 点 is midnight
            half = "am"
    if half.startswith("p") and hour < 12:
        hour += 12
    elif half.startswith("a") and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else ""


def _minutes(value: str) -> int:
    hour, minute = value.split(":")
    return int(hour) * 60 + int(minute)


def _nearer(value: str, anchor: str) -> str:
    """``value`` or the same clock time in the other half of the day, whichever is nearer
    ``anchor`` (the earlier time of the same change) around the clock; on a tie the one after it.
    "from 11 am to 1:00" moves two hours forward over noon (13:00), not ten back; "晚上 11 点改到
    12 点" one hour over midnight (00:00); "from 10 am to 9:00" stays in the morning."""
    day = 24 * 60
    here, there, start = _minutes(value), (_minutes(value) + 12 * 60) % day, _minutes(anchor)

    def distance(at: int) -> tuple[int, bool]:
        ahead = (at - start) % day
        return min(ahead, day - ahead), ahead > day // 2

    best = min((here, there), key=distance)
    return f"{best // 60:02d}:{best % 60:02d}"


def _later(value: str, anchor: str) -> str:
    """``value`` or the same clock time in the other half of the day, whichever comes first
    after ``anchor``: the end of a range ("open from 9 am to 5:00" ends at 17:00, "from 1 am to
    11:00" at 11:00 — a change would take the nearer 23:00)."""
    day = 24 * 60
    here, there, start = _minutes(value), (_minutes(value) + 12 * 60) % day, _minutes(anchor)
    best = min((here, there), key=lambda at: (at - start) % day or day)
    return f"{best // 60:02d}:{best % 60:02d}"


#: A verb that moves a time ("moved the standup from 10 am to 9", 改到, 提前): the later time
#: of such a sentence is a new value, which may come earlier; without one, "from X to Y",
#: "X–Y" and 从…到… name a range (opening hours, a shift).
_MOVES_EN = re.compile(r"\b(?:mov|chang|push|pull|shift|reschedul|postpon|delay|bump|bring|switch|set|mak|adjust|"
                       r"updat|extend|shorten|cut)\w*\b|\binstead of\b|\brather than\b", re.I)
_MOVES_CN = re.compile(r"改|调|挪|提前|推迟|延后|延到|换|变")
#: Words that hold a moving word but move nothing: the noun "shift" ("my night shift is from 10
#: pm to 6" is a range), 空调 (air conditioner), 调试 (debug), 调查, 调用, 协调, 强调, 变量, 改进.
#: General language.
_NOT_MOVES = re.compile(r"\b(?:night|day|morning|evening|afternoon|late|early|graveyard|swing|split|double|weekend|"
                        r"work|my|his|her|their|our|your|the|a|this|that|next|last|first|second|third)\s+shifts?\b|"
                        r"空调|调试|调查|调用|协调|强调|变量|改进", re.I)
#: Where a clause ends: a moving word of another clause ("I set up the clinic; it is open from
#: 9 am to 5", 我换了工作，现在上午 9 点到 5 点上班) moves none of this clause's times.
_CLAUSE_END = {False: re.compile(r"[;!?]|:\s"), True: re.compile(r"[;!?；：！？，,]")}


def _moving(sentence: str, start: int, end: int, cjk: bool) -> bool:
    """Whether a moving word stands in the clause of two times (the first at ``start``, the
    second ending at ``end``): they are a change, else a range."""
    ends = [m.end() for m in _CLAUSE_END[cjk].finditer(sentence, 0, start)]
    window = _NOT_MOVES.sub(" ", sentence[ends[-1] if ends else 0:end])
    return bool((_MOVES_CN if cjk else _MOVES_EN).search(window))
#: A bare hour after a time and "to" / "until" / a dash ("from 10 am to 9", "9 am–5"): a time
#: of day too, unless a unit follows ("from 9 am to 5 people" is a count).
_BARE_HOUR = re.compile(rf"\s*(?:to|until|till|through|-|–|—)\s*(1[0-2]|0?[1-9])(?!\d|[:.]\d|\s*(?:am|pm|a\.m\.|p\.m\.|"
                        rf"o'clock|{_UNIT_EN_RE})\b)", re.I)

#: A bare hour that starts a range whose end names the part of day ("between 2 and 4 pm",
#: "from 11 to 1 pm", "9–5 pm"): right before that end.
_BARE_START = re.compile(r"(?:\b(?:between|from)\s+(1[0-2]|0?[1-9])\s*(?:and|to|until|till|through|-|–|—)|"
                         r"(?<![\w:.,])(1[0-2]|0?[1-9])\s*(?:-|–|—))\s*$", re.I)


def _earlier(value: str, anchor: str) -> str:
    """``value`` or the same clock time in the other half of the day, whichever comes last
    before ``anchor``: the start of a range ("between 2 and 4 pm" starts at 14:00, "from 11 to
    1 pm" at 11:00)."""
    day = 24 * 60
    here, there, end = _minutes(value), (_minutes(value) + 12 * 60) % day, _minutes(anchor)
    best = min((here, there), key=lambda at: (end - at) % day or day)
    return f"{best // 60:02d}:{best % 60:02d}"


def _twelve_hour(match: re.Match[str]) -> bool:
    """Whether a time naming no part of day reads in either half of the day ("1:00", "4 点"),
    not as a 24-hour time ("09:00", "13:00")."""
    hour = match.group("h1") or match.group("h3") or ""
    return bool(hour) and not hour.startswith("0") and 1 <= int(hour) <= 12


#: What may stand between two times of one thing ("3:30 pm to 4:00", "3 点半改成 4 点").
_JOIN_CN = frozenset("改成到调变为推迟延挪提前至或者的吧再就还是从")


def _joined(between: str, cjk: bool) -> bool:
    """Whether only change wording stands between two times, so that the later one is the
    same thing's and takes the earlier one's part of day ("from 3:30 pm to 4:00": 16:00; "the
    demo is at 3 pm, so move the standup to 10:30": another thing, 10:30)."""
    if sum(1 for ch in between if "\u3400" <= ch <= "\u9fff" and ch not in _JOIN_CN) > 1:
        return False  # one character may name the thing itself ("5 点的会挪到 6 点半"), a word another
    return all(w in _QTY_STOP_EN or w in _CHANGE_WORDS or w in ENGLISH_QUERY_STOPWORDS or len(w) == 1
               for w in re.findall(r"[a-z]+", between.lower()))


def _found(sentence: str, cjk: bool) -> list[tuple[int, int, str, str]]:
    """``(start, end, unit, value)`` of every quantity and time of day, in order."""
    units = _UNITS_CN if cjk else _UNITS_EN
    out: list[tuple[int, int, str, str]] = []
    for match in (_QTY_CN if cjk else _QTY_EN).finditer(sentence):
        if match.group(1) is None and not cjk:  # "port 8080"
            out.append((match.start(), match.end(), "port", match.group(3).replace(",", "")))
            continue
        raw = match.group(2)
        unit = units.get(raw.lower(), units.get(raw, ""))
        if unit:
            out.append((match.start(), match.end(), unit, _number(match.group(1))))
    taken = [(s, e) for s, e, _u, _v in out]
    carried, carried_end, anchor, anchor_start = "", 0, "", 0  # the part of day and time of the sentence's last time that named one
    for match in _CLOCK.finditer(sentence):
        joined = bool(carried) and _joined(sentence[carried_end:match.start()], cjk)
        value = _clock(match, carried if joined else "")
        if _part_of_day(match):
            carried, carried_end, anchor, anchor_start = _part_of_day(match), match.end(), value, match.start()
            start = None if cjk else _BARE_START.search(sentence[max(0, match.start() - 24):match.start()])
            if start and value:
                at = max(0, match.start() - 24) + start.start(1 if start.group(1) else 2)
                hour = int(start.group(1) or start.group(2))
                if not any(s <= at < e for s, e in taken):
                    first_half = _nearer if _moving(sentence, at, match.end(), cjk) else _earlier  # "moved from 5 to 4 pm": 17:00
                    out.append((at, at + len(str(hour)), "clock", first_half(f"{hour % 12:02d}:00", value)))
                    taken.append((at, at + len(str(hour))))
            bare = None if cjk else _BARE_HOUR.match(sentence, match.end())
            if bare and value and not _CLOCK.match(sentence, bare.start(1)):
                hour = int(bare.group(1)) % 12 + (12 if carried == "pm" else 0)
                other_half = _nearer if _moving(sentence, match.start(), bare.end(), cjk) else _later  # a change, or a range
                out.append((bare.start(1), bare.end(1), "clock", other_half(f"{hour:02d}:00", value)))
                taken.append((bare.start(1), bare.end(1)))
        elif joined and value and anchor and _twelve_hour(match):
            value = (_nearer if _moving(sentence, anchor_start, match.end(), cjk) else _later)(value, anchor)
        if value and not any(s < match.end() and match.start() < e for s, e in taken):
            out.append((match.start(), match.end(), "clock", value))
    return sorted(out)


def changes_quantity(text: str, cjk: bool) -> bool:
    """Whether ``text`` has the wording of a value being changed ("increase the batch to",
    "from 25 to 15", "instead of", 改成, 降到; the pattern :func:`quantities` reads)."""
    return bool((_QTY_CHANGE_CN if cjk else _QTY_CHANGE_EN).search(text))


def quantities(sentence: str, cjk: bool) -> list[Quantity]:
    """The value a sentence gives each unit (the first that is not being left; after change
    wording the one it moves to), with the value it leaves (see the module doc)."""
    if len(sentence) > 300:
        return []
    found = _found(sentence, cjk)
    if not found:
        return []
    change = (_QTY_CHANGE_CN if cjk else _QTY_CHANGE_EN).search(sentence)
    bare: list[tuple[int, int, str]] = []
    if change:  # "go to five": a bare number after change wording takes the sentence's unit
        for match in (_BARE_TO_CN if cjk else _BARE_TO_EN).finditer(sentence):
            start = match.start(1)
            if any(s <= start < e for s, e, _u, _v in found):
                continue
            near = [f for f in found if f[2] != "clock"]
            if len({u for _s, _e, u, _v in near}) == 1:
                found.append((start, match.end(1), near[0][2], _number(match.group(1))))
                bare.append((start, match.end(1), _number(match.group(1))))
        found.sort()
    out: list[Quantity] = []
    for unit in dict.fromkeys(u for _s, _e, u, _v in found):
        of_unit = [(s, e, v) for s, e, u, v in found if u == unit]
        left = [(s, e, v) for s, e, v in of_unit if change and _LEAVING.search(sentence[:s])]
        kept = [q for q in of_unit if q not in left]
        if not kept:
            continue
        start, end, value = kept[0]
        if change and len(kept) > 1:  # "14:00 is too early, change it to 15:30": the value after the change wording
            after = [q for q in kept if q[0] >= change.start()]
            start, end, value = after[0] if after else kept[0]
        was = next((v for _s, _e, v in left if v != value), "")
        if change and not was and (start, end, value) in bare:  # "six characters … can we go to five?"
            was = next((v for s, _e, v in of_unit if v != value and s < start), "")
        first, first_end, _v = of_unit[0]
        noun = cjk and unit in _MEASURE_UNITS
        topic = _topic(sentence[:first], cjk, sentence[first_end:] if noun else "", noun)
        if start != first:  # "6 家门店……门店总数变成 24 家": the words of the value said, too
            # the earlier values blanked: "from 3:30 pm to 4:00" names no "pm", "从下午 3 点改到" no 下午
            masked = "".join(" " if any(a <= i < b for a, b, _u, _v in found) else ch for i, ch in enumerate(sentence[:start]))
            own = _topic(masked, cjk, sentence[end:] if noun else "", noun)
            if _other_thing(topic, own):  # "batch is 500 rows, cut the page size to 50": not the batch
                topic, was = own, ""
            else:
                topic = tuple(dict.fromkeys(topic + own))
        if not topic and not change:
            continue
        out.append(Quantity(unit, value, bool(change), topic or (SAME_SESSION,), was))
    return out
