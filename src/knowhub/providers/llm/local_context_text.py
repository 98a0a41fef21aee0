"""Text helpers for the offline context extractors: turns, dates, time cues, sentences.

Self-contained (standard library only) because it sits in the provider layer, under the
engines: :mod:`.local_context_rules` builds candidate memories with it, and the
ContextEngine reuses :func:`parse_when` and :func:`format_date` for transcripts.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "Turn",
    "annotate_time_cues",
    "content_words",
    "format_date",
    "has_cjk",
    "is_acknowledgement",
    "parse_when",
    "split_sentences",
    "truncate",
    "turns_from_payload",
]

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
_MONTH_NUM = {name: i + 1 for i, name in enumerate(MONTHS)} | {name[:3]: i + 1 for i, name in enumerate(MONTHS)}
_MONTH_NUM["sept"] = 9
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_CN_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_NUM_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
              "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a few": 3, "few": 3, "several": 3, "couple of": 2, "a couple of": 2}
_CN_NUM = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10, "几": 3}

STOPWORDS = frozenset(
    """a an the and or but if so to of in on at for with from by as is am are was were be been being do does did
    have has had i me my mine you your yours he him his she her they them their we us our it its this that these those
    there here what which who whom whose when where why how not no yes yeah yep oh wow hey hi hello thanks thank
    really very just too also so such can could would should will shall may might must gonna gotta lol haha
    that's it's i'm i've i'd i'll you're you've you'd don't can't won't didn't isn't aren't wasn't doesn't
    about into over out up down then than now well still even much many more most some any all both each own
    like get got go going make made know think feel felt see saw say said one thing things lot bit really great
    good nice cool awesome amazing glad sure totally definitely""".split()  # noqa: SIM905
)


def has_cjk(text: str) -> bool:
    """True when the text holds at least one CJK ideograph."""
    return any("\u3400" <= ch <= "\u9fff" for ch in text)


def content_words(text: str) -> list[str]:
    """Lower-cased Latin words that are not stop words, plus CJK characters."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'’\-]*|\d+", text.lower()) if w not in STOPWORDS]
    words.extend(ch for ch in text if "\u3400" <= ch <= "\u9fff")
    return words


#: How people acknowledge without saying anything else (general English and Chinese).
_ACK_EN = re.compile(
    r"\b(?:ok(?:ay)?|sure(?: thing)?|got it|gotcha|will do|on it|understood|noted|done|great|perfect|thanks|"
    r"thank you|you'?re welcome|no problem|no worries|sounds good|all right|alright|yes|yep|yeah|of course|"
    r"certainly|absolutely|right|roger(?: that)?|copy that|makes sense|i see|cool|nice|happy to help|"
    r"glad to help|my pleasure|(?:i'?ll|i will|will) (?:do (?:that|it|so)|keep (?:that|it) in mind))\b", re.I)
_ACK_CN = re.compile(r"好的|好嘞|好滴|没问题|明白了?|收到了?|了解了?|知道了|懂了|谢谢你?|多谢|不客气|是的|当然|没错|照办|"
                     r"记住了|记下了|(?:这就|马上)(?:去)?(?:做|改|办|弄)?|嗯+|好|行|可以|对")
_NEGATION_EN = re.compile(r"\b(?:no|not|nope|never|don'?t|won'?t|can'?t|shouldn'?t)\b", re.I)
_ACK_FILLER = frozenset("了啊呀吧哦呢嘛啦哈的")


def is_acknowledgement(text: str) -> bool:
    """A message that only acknowledges ("好的。", "OK, will do.", "Sure!", "收到，这就去改。"):
    no content word and no Chinese character is left once the acknowledgement words, fillers
    and punctuation are taken out. Such a message is no memory of its own."""
    if len(text) > 80 or not (_ACK_EN.search(text) or _ACK_CN.search(text)):
        return False
    rest = _ACK_CN.sub(" ", _ACK_EN.sub(" ", text))
    if _NEGATION_EN.search(rest):
        return False  # "Absolutely not.", "No, thanks.": a refusal says something ("no problem" is taken out above)
    if any("\u3400" <= ch <= "\u9fff" and ch not in _ACK_FILLER for ch in rest):
        return False
    return not [w for w in content_words(rest) if w not in ("i", "will", "do", "it", "that", "so", "now", "much", "very", "lot")]


def truncate(text: str, limit: int) -> str:
    """Cut at a word boundary and add an ellipsis when longer than ``limit``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not has_cjk(cut[-10:]) and " " in cut[limit // 2:]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"


#: A sentence runs to an end mark; a period inside a word ("package.json", "Node.js") or
#: after a common title or abbreviation ("Dr.", "St.", "e.g.") does not end it.
#: Runs of ordinary characters are matched possessively (``++``): a run never holds an end
#: mark, so every place a sentence can end is still the end of a run, the matches are the
#: same, and the run costs one step instead of one per character (4x faster on long replies).
_SENTENCE_RE = re.compile(
    r"(?:[^.!?。！？\n]++|\.(?=\w)|(?<=\b(?:Dr|Mr|Ms|St|vs|Jr|Sr))\.|(?<=\bMrs)\.|(?<=\bProf)\.|(?<=\be\.g|\bi\.e)\.)+"
    r"(?:[.!?。！？]+[\"'”’)]*|$)")


def split_sentences(text: str) -> list[str]:
    """Sentences of a message (Latin and Chinese end marks, newlines)."""
    return list(_split_sentences(text))


@functools.lru_cache(maxsize=1024)
def _split_sentences(text: str) -> tuple[str, ...]:
    """Cached: one commit splits a message for several extractors and for the timeline."""
    out = []
    for match in _SENTENCE_RE.finditer(text):
        sentence = match.group(0).strip()
        if sentence:
            out.append(sentence)
    return tuple(out)


# ---------------------------------------------------------------------- dates

_LOCOMO_RE = re.compile(
    r"(?:(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+)?(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I
)
_MDY_RE = re.compile(r"([A-Za-z]+)\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})")
_CN_DATE_RE = re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")


def parse_when(value: Any) -> datetime | None:
    """Best-effort datetime from ISO strings, epoch numbers, ``1:56 pm on 8 May, 2023``,
    ``May 8, 2023`` or ``2023年5月8日``; naive results are taken as UTC. None if unknown."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(float(value) / (1000 if value > 1e11 else 1), UTC)
        except (OverflowError, OSError, ValueError):
            return None
    text = str(value).strip()
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except ValueError:
        pass
    match = _LOCOMO_RE.search(text)
    if match and match.group(5).lower() in _MONTH_NUM:
        hour = int(match.group(1) or 0)
        minute = int(match.group(2) or 0)
        if match.group(3) and match.group(3).lower().startswith("p") and hour < 12:
            hour += 12
        if match.group(3) and match.group(3).lower().startswith("a") and hour == 12:
            hour = 0
        try:
            return datetime(int(match.group(6)), _MONTH_NUM[match.group(5).lower()], int(match.group(4)), hour, minute, tzinfo=UTC)
        except ValueError:
            return None
    match = _MDY_RE.search(text)
    if match and match.group(1).lower() in _MONTH_NUM:
        try:
            return datetime(int(match.group(3)), _MONTH_NUM[match.group(1).lower()], int(match.group(2)), tzinfo=UTC)
        except ValueError:
            return None
    match = _CN_DATE_RE.search(text)
    if match:
        try:
            return datetime(int(match.group(1)), int(match.group(2)), int(match.group(3)), tzinfo=UTC)
        except ValueError:
            return None
    return None


def format_date(when: datetime | None) -> str:
    """``8 May 2023`` (empty for None)."""
    if when is None:
        return ""
    return f"{when.day} {MONTHS[when.month - 1].capitalize()} {when.year}"


def format_day_iso(when: datetime | None) -> str:
    """``2023-05-08`` (empty for None): a Chinese event's day. Not ``2023年5月8日``: search
    reads Chinese by characters and bigrams, and 日/月/年 of every event's date matched
    日志, 月底 and 年度 in questions (docs/benchmarks.md, ninth session, branch fixes9)."""
    return f"{when.year:04d}-{when.month:02d}-{when.day:02d}" if when is not None else ""


def mostly_cjk(text: str) -> bool:
    """More CJK ideographs than Latin words: a Chinese message, even with a few English names
    in it ("把订单服务迁移到 PostgreSQL 16"), and not an English one naming a Chinese place."""
    ideographs = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
    return ideographs > 0 and ideographs >= len(re.findall(r"[A-Za-z]+", text))


def weekday_date(when: datetime, weekday: int, week_offset: int) -> datetime:
    """The given weekday (0 = Monday) of the week ``week_offset`` weeks from ``when``'s
    (weeks run Monday to Sunday): ``下周五`` is (4, +1), ``this Saturday`` (5, 0). ``last
    <day>`` (-1) is the latest such day before ``when`` — "last Friday" said on a Saturday
    is the day before."""
    if week_offset < 0:
        back = (when.weekday() - weekday) % 7 or 7
        return when - timedelta(days=back)
    monday = when - timedelta(days=when.weekday())
    return monday + timedelta(days=7 * week_offset + weekday)


def _month_shift(when: datetime, months: int) -> str:
    index = when.year * 12 + (when.month - 1) + months
    return f"{MONTHS[index % 12].capitalize()} {index // 12}"


def _cn_count(word: str) -> int:
    """A Chinese count up to 99: 五, 十, 十五 (15), 二十 (20), 二十三; 1 when it is none."""
    tens, ten, ones = word.partition("十")
    if not ten:
        return _CN_NUM.get(word, 1)
    if (tens and tens not in _CN_NUM) or (ones and ones not in _CN_NUM):
        return 1
    return (_CN_NUM[tens] if tens else 1) * 10 + (_CN_NUM[ones] if ones else 0)


def _count(word: str) -> int:
    word = word.lower().strip()
    if word.isdigit():
        return int(word)
    return _NUM_WORDS[word] if word in _NUM_WORDS else _cn_count(word)


def _resolve_latin(cue: str, when: datetime) -> str | None:
    cue_l = cue.lower()
    day = format_date(when)
    simple = {
        "yesterday": format_date(when - timedelta(days=1)),
        "last night": format_date(when - timedelta(days=1)),
        "today": day, "tonight": day, "this morning": day, "this afternoon": day, "this evening": day,
        "tomorrow": format_date(when + timedelta(days=1)),
        "last week": f"the week before {day}", "next week": f"the week after {day}",
        "this week": f"the week of {day}",
        "last weekend": f"the weekend before {day}", "this weekend": f"the weekend of {day}",
        "next weekend": f"the weekend after {day}",
        "last month": _month_shift(when, -1), "next month": _month_shift(when, 1), "this month": _month_shift(when, 0),
        "last year": str(when.year - 1), "next year": str(when.year + 1), "this year": str(when.year),
        "the other day": f"a few days before {day}", "recently": f"shortly before {day}",
        "lately": f"shortly before {day}",
    }
    if cue_l in simple:
        return simple[cue_l]
    match = re.match(r"(last|this|next|on)\s+(\w+)", cue_l)
    if match and match.group(2) in WEEKDAYS:
        target = WEEKDAYS.index(match.group(2))
        if match.group(1) == "on":  # "on Friday": past or coming, only the tense tells
            return f"the {match.group(2).capitalize()} before {day}"
        return format_date(weekday_date(when, target, {"last": -1, "this": 0, "next": 1}[match.group(1)]))
    match = re.match(r"(.+?)\s+(day|week|month|year)s?\s+ago", cue_l)
    if match:
        n = _count(match.group(1))
        unit = match.group(2)
        if unit == "day":
            return format_date(when - timedelta(days=n))
        if unit == "week":
            return f"{n} week{'s' if n != 1 else ''} before {day}"
        if unit == "month":
            return _month_shift(when, -n)
        return str(when.year - n)
    return None


_LATIN_CUES = re.compile(
    r"\b(yesterday|last night|today|tonight|this (?:morning|afternoon|evening)|tomorrow|"
    r"(?:last|next|this) (?:week|weekend|month|year)|the other day|recently|lately|"
    r"(?:last|next|this|on) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|few|several|a couple of) "
    r"(?:day|week|month|year)s? ago)\b",
    re.I,
)
#: Words that start with 前 ("front", "former"): "做了四年前端" is four years of front-end
#: work, not "four years ago" — the cue must not end inside such a word.
_QIAN_WORDS = "端|台|景|途|面|辈|列|沿|线|提|者|往|进|锋|任|期|置|缀|妻|夫|排|厅|门|额|臂|车|身|奏|戏|言|兆|程|科|院|后"
_CN_CUES = re.compile(
    r"((?:上个?|下个?|这个?|本)?(?:周|星期|礼拜)[一二三四五六日天]|"
    r"昨天|昨晚|前天|今天|今晚|明天|后天|上周|上个?星期|下周|下个?星期|这周|本周|上个月|下个月|这个月|去年|明年|今年|"
    # (?<!…): a count starts where its numerals start (a long run of digits is read once)
    r"(?<![一两二三四五六七八九十几\d])[一两二三四五六七八九十几\d]+(?:天|周|个月|年)前(?!" + _QIAN_WORDS + r"))"
)


def _month_iso(when: datetime, months: int) -> str:
    index = when.year * 12 + (when.month - 1) + months
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _week_iso(when: datetime, weeks: int) -> str:
    """The Monday–Sunday of the week ``weeks`` from ``when``'s: ``2026-02-23～2026-03-01``."""
    monday = when - timedelta(days=when.weekday()) + timedelta(days=7 * weeks)
    return f"{format_day_iso(monday)}～{format_day_iso(monday + timedelta(days=6))}"


def _resolve_cn(cue: str, when: datetime) -> str | None:
    """The date a Chinese cue names, written as the Chinese event lead writes its day
    (``2026-03-02``, ``2026-02``, ``2025``, a week as ``2026-02-23～2026-03-01``): not the English
    "the week before 2 March 2026" / "February 2026" of :func:`_resolve_latin`, and no 年/月/日
    (search reads Chinese by characters: see :func:`format_day_iso`)."""
    iso = format_day_iso
    simple = {
        "昨天": iso(when - timedelta(days=1)), "昨晚": iso(when - timedelta(days=1)),
        "前天": iso(when - timedelta(days=2)), "今天": iso(when), "今晚": iso(when),
        "明天": iso(when + timedelta(days=1)), "后天": iso(when + timedelta(days=2)),
        "上周": _week_iso(when, -1), "上星期": _week_iso(when, -1), "上个星期": _week_iso(when, -1),
        "下周": _week_iso(when, 1), "下星期": _week_iso(when, 1), "下个星期": _week_iso(when, 1),
        "这周": _week_iso(when, 0), "本周": _week_iso(when, 0),
        "上个月": _month_iso(when, -1), "下个月": _month_iso(when, 1), "这个月": _month_iso(when, 0),
        "去年": str(when.year - 1), "明年": str(when.year + 1), "今年": str(when.year),
    }
    if cue in simple:
        return simple[cue]
    match = re.match(r"(上个?|下个?|这个?|本)?(?:周|星期|礼拜)([一二三四五六日天])", cue)
    if match:
        offset = {"上": -1, "下": 1}.get((match.group(1) or "这")[0], 0)
        target = _CN_WEEKDAY[match.group(2)]
        if offset < 0:  # 上周五: the Friday of last week (not merely the latest Friday)
            monday = when - timedelta(days=when.weekday() + 7)
            return iso(monday + timedelta(days=target))
        return iso(weekday_date(when, target, offset))
    match = re.match(r"([一两二三四五六七八九十几\d]+)(天|周|个月|年)前", cue)
    if match:
        n = int(match.group(1)) if match.group(1).isdigit() else _cn_count(match.group(1))
        unit = match.group(2)
        if unit == "天":
            return iso(when - timedelta(days=n))
        if unit == "周":
            return _week_iso(when, -n)
        if unit == "个月":
            return _month_iso(when, -n)
        return str(when.year - n)
    return None


def annotate_time_cues(text: str, when: datetime | None) -> tuple[str, list[dict[str, str]]]:
    """Append the absolute date after each relative time cue: ``yesterday [7 May 2023]``.

    Returns the annotated text and the cues found (``cue``, ``resolved``); without a
    reference time the text is returned unchanged but cues are still reported.
    """
    cues: list[dict[str, str]] = []

    def repl(match: re.Match[str], resolver: Any) -> str:
        cue = match.group(0)
        try:
            resolved = resolver(cue, when) if when is not None else None
        except (OverflowError, ValueError):  # "tomorrow" of 9999-12-31: no date to name
            resolved = None
        cues.append({"cue": cue, "resolved": resolved or ""})
        return f"{cue} [{resolved}]" if resolved else cue

    out = _LATIN_CUES.sub(lambda m: repl(m, _resolve_latin), text)
    out = _CN_CUES.sub(lambda m: repl(m, _resolve_cn), out)
    return out, cues


# ---------------------------------------------------------------------- turns


@dataclass
class Turn:
    """One normalized message as the rules see it."""

    id: str
    role: str
    speaker: str
    text: str
    index: int
    when: datetime | None = None
    when_text: str = ""
    caption: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_person(self) -> bool:
        """A human speaker: a user message, or any message with an explicit speaker name
        (two-person transcripts often map the second person to ``assistant``)."""
        if self.role in ("system", "tool"):
            return False
        return self.role == "user" or bool(self.extra.get("named"))

    @property
    def speaker_cn(self) -> str:
        """The speaker as a Chinese sentence names them: the unnamed user is 用户 and the
        unnamed assistant 助手 ("用户喜欢喝乌龙茶", not "User喜欢…"); a named speaker keeps the name."""
        if not self.extra.get("named") and (self.role, self.speaker) in (("user", "User"), ("assistant", "Assistant")):
            return "用户" if self.role == "user" else "助手"
        return self.speaker

    @property
    def date(self) -> str:
        """Day of the message (``8 May 2023``) or the raw timestamp text."""
        return format_date(self.when) or self.when_text

    def head(self, text: str) -> str:
        """What an event's abstract says before ``text``: ``User (8 May 2023): ``; before a
        Chinese text ``小王（2023-05-08）：``, and for the unnamed user only the day,
        ``2023-05-08：`` — as the user's own Chinese rules carry no subject: 用户 on every event
        matched the 用户 of every question ("用户为什么…") and cost recall."""
        if mostly_cjk(text):
            day = format_day_iso(self.when) or self.when_text
            who = "" if self.speaker_cn == "用户" else self.speaker_cn
            if who:
                return f"{who}（{day}）：" if day else f"{who}："
            return f"{day}：" if day else ""
        return f"{self.speaker} ({self.date}): " if self.date else f"{self.speaker}: "

    def cite(self) -> str:
        """``[D1:3] Caroline (8 May 2023): "..."`` — a quote with id, speaker and time."""
        when = f" ({self.when_text or self.date})" if (self.when_text or self.date) else ""
        caption = f" [shared image: {self.caption}]" if self.caption else ""
        return f'[{self.id}] {self.speaker}{when}: "{self.text}"{caption}'


def _speaker(message: dict[str, Any], user_label: str) -> str:
    name = message.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    role = str(message.get("role") or "user")
    return {"user": user_label, "assistant": "Assistant", "system": "System", "tool": "Tool"}.get(role, role)


def _infer_times(explicit: list[datetime | None], session_when: datetime | None) -> list[tuple[datetime | None, bool]]:
    """Order-consistent times: a message without a usable timestamp gets the time of the
    message before it (it was written after it), the first ones the session time unless a
    later explicit timestamp is earlier. Returns ``(time, inferred)`` per message."""
    out: list[tuple[datetime | None, bool]] = []
    previous: datetime | None = None
    for i, when in enumerate(explicit):
        if when is not None:
            out.append((when, False))
            previous = when
            continue
        if previous is None:
            upcoming = next((w for w in explicit[i + 1:] if w is not None), None)
            candidates = [w for w in (session_when, upcoming) if w is not None]
            previous = min(candidates) if candidates else None
        out.append((previous, previous is not None))
    return out


def turns_from_payload(payload: dict[str, Any]) -> list[Turn]:
    """Turns from a task payload's ``messages`` (already normalized by the engine).

    A message without a timestamp is dated by :func:`_infer_times` (never before the
    message it answers) and flagged ``extra["time_inferred"]``.
    """
    session_when = parse_when(payload.get("session_time"))
    user_label = str(payload.get("user_label") or "User")
    messages = [m for m in payload.get("messages") or [] if isinstance(m, dict)]
    times = _infer_times([parse_when(m.get("timestamp")) for m in messages], session_when)
    turns: list[Turn] = []
    for index, (message, (when, inferred)) in enumerate(zip(messages, times, strict=True)):
        text = message.get("content")
        if not isinstance(text, str) or not text.strip():
            continue
        raw_when = message.get("timestamp")
        when_text = str(raw_when) if raw_when not in (None, "") and not inferred else (when.isoformat() if when else "")
        turns.append(
            Turn(
                id=str(message.get("id") or f"m{index}"),
                role=str(message.get("role") or "user"),
                speaker=_speaker(message, user_label),
                text=" ".join(text.split()),
                index=index,
                when=when,
                when_text=when_text,
                caption=str(message.get("caption") or ""),
                extra={"named": bool(isinstance(message.get("name"), str) and message["name"].strip()),
                       "time_inferred": inferred, "raw": text},
            )
        )
    return turns
