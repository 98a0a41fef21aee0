"""Slot claims: what a memory says the current value of something is.

A *slot* is a subject and an attribute (``user|residence``, ``user|database``,
``user|database|side project``); a *claim* says the slot holds a value from the time of the
message that states it. :mod:`.timeline` compares claims across sessions to find updates
and contradictions. Claims come from:

* profile facts (``metadata.facts``: subject, attribute, value, multi) — a multi-valued
  attribute (languages, family, diet) is never superseded;
* the statements of a person's message that pick one member of a *value class* — a
  general list of interchangeable choices (databases, web and front-end frameworks,
  programming languages, clouds, editors, operating systems, package managers, CI systems,
  message queues, job queues, payment providers, chat apps, issue trackers, docs and notes
  apps, design tools, ORMs, test frameworks, CSS
  frameworks, build tools, indentation, colour theme): "we use PostgreSQL", "let's go with
  FastAPI", "我们改用 Vue 了" — a preposition or copula names the value only right before it,
  and a value kept small, removed, past or only qualifying a person ("as little JavaScript
  as", "delete the Stripe code", "原来用钉钉", "a Django dev") is no choice;
* the residence / work-location / employer / job facts of the same statements (a person's
  message only: an unnamed assistant's "I'm a …" is not the user);
* quantities (:mod:`.quantities`) — a number with a unit or a time of day ("batches of 500
  rows", "借期 30 天", "cut-off at 15:30") on ``user|qty|unit`` with the words before it as
  :attr:`Claim.topic`: only a statement with change wording replaces one, and only one whose
  topic overlaps (:func:`topics_overlap`) or whose value the change says it leaves
  (:attr:`Claim.was`: "instead of 15", "six characters … can we go to five?");
* names of a project or product ("the app is called X", "rename the app to Y", "项目改名为 Z").

A statement that only asks, plans or hedges ("should we use MongoDB?", "maybe Redis",
"我们要不要换成 Go") claims nothing; one that names two members of a class without a change
wording ("MySQL at work and SQLite at home") claims nothing for that class. ``for my side
project`` / ``在个人项目里`` qualifies the slot, so two projects never supersede each other.
*Cues*: ``change`` (switched to, moved to, instead of, no longer, 改用, 换成, 不再) and
``correction`` (actually, sorry I meant, correction, 其实, 更正, 说错了) say that the statement
replaces an earlier value; without a cue only a later session does.

Word lists are general technical and everyday vocabulary, not benchmark text.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from knowhub.context.commit.quantities import changes_quantity, quantities, topics_overlap
from knowhub.providers.llm.local_context_profile import profile_facts
from knowhub.providers.llm.local_context_text import has_cjk, split_sentences
from knowhub.providers.llm.local_context_tools import (
    NAME_LEFT,
    NAME_RIGHT,
    VALUE_CLASSES,
    value_members,
)

__all__ = ["EXCLUSIVE_ATTRIBUTES", "VALUE_CLASSES", "Claim", "accepted_claims", "claims_in_text", "fact_claims", "states_change",
           "topics_overlap", "value_key"]

#: Profile attributes with one current value (the others are lists: languages, family ...).
EXCLUSIVE_ATTRIBUTES = frozenset({"name", "age", "residence", "work_location", "employer", "occupation",
                                  "relationship", "education"})

def value_key(value: str) -> str:
    """Comparison key of a value: case-folded letters and digits (and CJK)."""
    return re.sub(r"[\W_]+", "", value.casefold())


_LEFT, _RIGHT = NAME_LEFT, NAME_RIGHT
_MEMBERS = value_members()
#: Any member at all (case-insensitive, so a superset of every member pattern's matches): a
#: sentence it does not match names no value, and the ~200 member patterns are not run.
_ANY_MEMBER = re.compile(
    _LEFT + "(?:" + "|".join(sorted((n for spec in VALUE_CLASSES.values() for g in spec.split("|") for n in g.split("=")),
                                           key=len, reverse=True)) + ")" + _RIGHT, re.I)

_ASK_EN = re.compile(
    r"\b(?:should (?:we|i)|could (?:we|i)|shall we|what about|how about|considering|consider|thinking (?:of|about)|"
    r"maybe|might|perhaps|would it|is it worth|wondering|or should|vs\.?|versus|compare|comparing|pros and cons|"
    r"if (?:we|i)|whether|recommend|suggest|not sure)\b", re.I)
_ASK_CN = re.compile(r"(?:吗|要不要|是否|考虑|可能|或者|还是|如果|假如|对比|比较|哪个好|建议|推荐|不确定|纠结)")
#: A value being refused or stopped: "don't use X", "no longer on X" (up to two words between).
_NEG_EN = re.compile(r"\b(?:don't|do not|won't|will not|never|no longer|not|stopped|stop|quit|dropped|ditched|avoid|"
                     r"drop|remove[sd]?|removing|delete[sd]?|deleting|get rid of|rip out|used to (?:use|run on|be on)|"
                     r"previously used|formerly)\s+(?:\w+\s+){0,2}$|"
                     # a value kept small or absent: "as little JavaScript as", "without Redis", "no Redux"
                     r"\b(?:as little|less|fewer|minimal|without|no)\s+$|"
                     # a value being left: "from X", "instead of X", "replace X"
                     r"\b(?:from|instead of|rather than|away from|replace|replaced|replacing|over)\s+(?:the\s+)?$", re.I)
_NEG_CN = re.compile(r"(?:不用|不再用|不要用|别用|放弃|弃用|替换掉?|从|不是|而不是|代替|撤掉|撤|去掉|删掉|删除|拿掉|停用|下线|"
                     r"废弃|(?:原来|以前|之前|过去|曾经)(?:都|也|一直)?(?:用|是|在用))\s*$")
_CHANGE_EN = re.compile(
    r"\b(?:switch(?:ed|ing)?|migrat(?:e|ed|ing)|mov(?:e|ed|ing)|chang(?:e|ed|ing)|convert(?:ed|ing)?|port(?:ed|ing)?|"
    r"rewr(?:ite|ote|iting)|replac(?:e|ed|ing)|instead|no longer|anymore|any more|from now on|now (?:we|i) use|"
    r"went back|switched back|ditched|dropped|gave up on|changed my mind|these days|nowadays)\b", re.I)
_CHANGE_CN = re.compile(r"(?:改用|改成|换成|换用|换到|切换到|切到|迁移到|迁到|转到|搬到|不再|不用.{0,8}了|现在用|以后用|改为|弃用|替换|"
                        r"统一(?![的，,。；;、])|(?:^|[，,；;：:\s])换\s*(?=[A-Za-z\u4e00-\u9fff]))")
_CORRECT_EN = re.compile(r"\b(?:actually|correction|i meant|sorry,? i meant|i was wrong|to correct|my mistake|"
                         r"not \w+ but|scratch that)\b", re.I)
_CORRECT_CN = re.compile(r"(?:其实|更正|纠正|说错了|我是说|搞错了|不对，|不是.{1,12}而是)")
_PARTS = (r"side project|project|app|service|backend|frontend|front-end|back-end|website|site|api|cli|prototype|"
          r"mvp|blog|startup|analytics|tests?|scripts?|homework|mobile app|data pipeline|pipeline|"
          r"infra|infrastructure|deployment|dashboard|admin panel|bot|game|library|sdk|plugin|extension|notebooks?")
#: What a statement is about: "for my side project", "in the backend", "the frontend is ...".
_QUALIFIER_EN = re.compile(rf"\b(?:for|in|on)(?: (?:my|our|the|this|that|a))? ((?:[\w\-]+ ){{0,2}}?(?:{_PARTS}))\b|"
                           rf"\b(?:the|our|my|this) ((?:[\w\-]+ ){{0,2}}?(?:{_PARTS}))\b", re.I)
#: A choice or use of the value: "we use X", "went with X", "X is our database", "写在 X 上".
#: Most words between a choice wording and its value ("switched from MySQL to X": 3); chosen
#: on the dev half of benchmarks/data/context_updates_labelled.json (context_updates_bench.py).
CHOICE_WINDOW = 5
#: Quantity claims on (:func:`_qty_claims`); a switch so that the benchmark compares both.
QUANTITIES = True
_CHOICE_EN_TEXT = (
    r"\b(?:use[sd]?|using|run(?:s|ning)?|ran|chose|choose|chosen|pick(?:ed)?|go(?:ing)? with|went with|"
    r"decided (?:on|to use|to go with)|settled on|stick(?:ing)? with|stuck with|switch(?:ed|ing)? (?:over )?to|"
    r"migrat(?:e|ed|ing) to|mov(?:e|ed|ing) (?:over )?to|chang(?:e|ed|ing) to|port(?:ed|ing)? to|adopt(?:ed|ing)?|"
    r"built|build(?:ing)?|written in|writ(?:e|ing) (?:it |this |everything )?in|rewr(?:ite|ote|iting) (?:it |this )?in|"
    r"deploy(?:ed|ing)? (?:to|on)|host(?:ed|ing)? on|stor(?:e|ed|ing)|prefer(?:s|red)?|favou?r|standardi[sz]e on|"
    r"switch(?:ed|ing)?|migrat(?:e|ed|ing)|mov(?:e|ed|ing)|replac(?:e|ed|ing)|writ(?:e|es|ing)|wrote|"
    r"cod(?:e|es|ing) in|learn(?:ed|ing)?|develop(?:ed|ing)? (?:in|with)|work(?:s|ed|ing)? (?:in|with))\b(?:\s+[^\s.;!?]+){0,%d}\s*$|"
    # a preposition or copula names the value only right before it ("on Netlify", "is Django"):
    # further away it belongs to another phrase ("with seats and car spaces")
    r"\b(?:on|with|via|through|is|are|'s|in|instead|now)(?:\s+[^\s.;!?]+){0,%d}\s*$")
_CHOICE_CN_TEXT = (r"(?:用|使用|采用|选|选择|选了|定了|基于|改用|换成|换用|换到|切换到|迁移到|迁到|部署在|部署到|跑在|"
                   r"写|偏好|喜欢用|习惯用|统一|换)[^，。；！？]{0,%d}$|(?:是|为|上)[^，。；！？]{0,%d}$")
#: Classes a preposition or copula alone does not choose ("with space left", "there's still space").
_VERB_ONLY_CLASSES = frozenset({"indentation", "theme"})
#: Right after a value: a copula that states it ("MongoDB is our store", "Redis 作为缓存").
_COPULA_AFTER = re.compile(r"\s*(?:is|are|was|will be|it is|for)\b|\s*(?:是|作为|当|做)", re.I)
_INDENT_WORDS = re.compile(r"\b(?:indent\w*|tab width|tab size|tabs|formatt\w*|style guide|editorconfig)\b|缩进|制表", re.I)
#: A value that only qualifies a person or a way of learning ("a strong Django dev", "the React docs").
_MENTION_AFTER = re.compile(
    r"\s*(?:dev|devs|developers?|engineers?|experts?|fans?|programmers?|consultants?|community|docs|documentation|"
    r"books?|courses?|tutorials?|conferences?|meetups?|certification|certified|training|background|experience)\b", re.I)


@functools.lru_cache(maxsize=16)
def _choice(cjk: bool, window: int, verbs_only: bool = False) -> re.Pattern[str]:
    """The choice wording that must come at most ``window`` words before a value (a
    preposition or copula at most two; none with ``verbs_only``)."""
    weak = -1 if verbs_only else min(window, 2)
    if cjk:
        text = _CHOICE_CN_TEXT % (window * 4, max(weak, 0) * 4)
        return re.compile(text.rsplit("|(?:是|为|上)", 1)[0] if weak < 0 else text, re.I)
    text = _CHOICE_EN_TEXT % (window, max(weak, 0))
    return re.compile(text.rsplit("|\\b(?:on|with|", 1)[0] if weak < 0 else text, re.I)
_QUALIFIER_CN = re.compile(r"(?:在|给|为|对)?([\u4e00-\u9fff]{1,6}(?:项目|应用|服务|后端|前端|网站|博客|脚本|课程|作业|公司))(?:里|中|上|的)")
_AT_WORK = re.compile(r"\b(?:at work|at my job|at the office|at home|personally|for fun|on the side)\b|(?:公司里|在家里|业余)", re.I)


@dataclass(frozen=True)
class Claim:
    """One statement that a slot holds a value (see the module doc)."""

    slot: str
    value: str
    exclusive: bool = True
    cue: str = ""
    text: str = ""
    #: Words of what a quantity measures ("batch", "借期"): a ``…|qty|unit`` slot is shared by
    #: every quantity of that unit, so only claims whose topics overlap are compared.
    topic: tuple[str, ...] = ()
    #: The value a change says it leaves ("instead of 15", "six … go to five"): the earlier
    #: claim of that value is replaced even when its topic words differ.
    was: str = ""

    @property
    def key(self) -> str:
        """:func:`value_key` of the value."""
        return value_key(self.value)


def _cue(sentence: str, cjk: bool) -> str:
    if (_CORRECT_CN if cjk else _CORRECT_EN).search(sentence):
        return "correction"
    if (_CHANGE_CN if cjk else _CHANGE_EN).search(sentence):
        return "change"
    return ""


def states_change(text: str) -> bool:
    """Whether ``text`` uses the wording of a change, a correction or a quantity moved to a new
    value ("we switched to", "actually", "goes down from 25 to 15", 改成, 其实, 降到): the cues
    the timeline reads, for search (:mod:`knowhub.context.retrieval.value_questions`)."""
    cjk = has_cjk(text)
    return bool(_cue(text, cjk) or changes_quantity(text, cjk))


def _qualifier(sentence: str, cjk: bool) -> str:
    match = (_QUALIFIER_CN if cjk else _QUALIFIER_EN).search(sentence)
    if match:
        return value_key(next(g for g in match.groups() if g)).removesuffix("s")
    match = _AT_WORK.search(sentence)
    return value_key(match.group(0)) if match else ""


#: How a proposal names its choice, a few words before the value: "I recommend Dramatiq", "I'd go
#: with pytest", "Option B: Vite", "建议换成 uv", "我倾向于 BullMQ".
_PROPOSE_EN = re.compile(r"\b(?:recommend(?:ed|ing)?|suggest(?:ed|ing)?|propos(?:e|ed|ing)|i'?d (?:go with|use|take|pick|choose|try)|"
                         r"(?:my|the) (?:pick|vote|recommendation|suggestion)(?: is)?|best (?:option|choice|bet)(?: is)?|"
                         r"(?:option|plan|approach|variant) [a-d1-4]\s*[:.)]?)(?:\s+[^\s.;!?]+){0,5}\s*$", re.I)
_PROPOSE_CN = re.compile(r"(?:建议|推荐|倾向于?|可以用|方案[一二三四1-4A-D]?[：:]|选项[一二三四1-4A-D]?[：:])[^，。；！？]{0,20}$")


def _class_claims(sentence: str, subject: str, cjk: bool, proposal: bool = False) -> list[Claim]:
    """``proposal``: a sentence of a proposal the person accepted ("I'd switch to uv"): it asks
    or suggests by nature, and the acceptance makes it a choice, so the asking test does not
    apply and proposal wording ("I recommend", "建议") counts as choice wording."""
    asks = sentence.rstrip("\"'”’) ").endswith(("?", "？")) or bool((_ASK_CN if cjk else _ASK_EN).search(sentence))
    if asks and not proposal:
        return []
    if not _ANY_MEMBER.search(sentence):
        return []
    cue = _cue(sentence, cjk)
    qualifier = _qualifier(sentence, cjk)
    # a command in backticks ("`manage.py migrate procrastinate zero`") states nothing
    text = re.sub(r"`[^`]*\s[^`]*`", lambda m: " " * len(m.group(0)), sentence)
    folded = text.casefold()
    spans: list[tuple[int, int, str, str]] = []
    for cls, canonical, pattern, literals in _MEMBERS:
        if literals is not None and not any(lit in folded for lit in literals):
            continue
        spans.extend((m.start(), m.end(), cls, canonical) for m in pattern.finditer(text))
    found: dict[str, list[str]] = {}
    indent_said: bool | None = None
    for start, end, cls, canonical in _outermost(spans):
        # every test reads a bounded window (no copy of a long message per name: linear time)
        if (_NEG_CN if cjk else _NEG_EN).search(text[max(0, start - 40):start]):
            continue  # the value being left or refused ("from MySQL", "instead of Flask", "不用X")
        before = text[max(0, start - 80):start]
        if CHOICE_WINDOW >= 0 and not _choice(cjk, CHOICE_WINDOW, cls in _VERB_ONLY_CLASSES).search(before) \
                and not _COPULA_AFTER.match(text, end) and not (proposal and (_PROPOSE_CN if cjk else _PROPOSE_EN).search(before)):
            continue  # a mention, not a choice ("I read about MongoDB", "MongoDB's docs")
        if not cjk and _MENTION_AFTER.match(text, end):
            continue  # "a strong Django dev", "the React docs"
        if cls == "indentation" and text[start:end].casefold() in ("space", "tab"):
            if indent_said is None:
                indent_said = bool(_INDENT_WORDS.search(text))
            if not indent_said:
                continue  # "a sailing with space left": a singular space or tab is indentation only when said
        if canonical not in found.setdefault(cls, []):
            found[cls].append(canonical)
    out = []
    for cls, values in found.items():
        if len(values) != 1:
            continue  # two values of one class and no wording that tells which is chosen
        slot = f"{subject}|{cls}" + (f"|{qualifier}" if qualifier else "")
        out.append(Claim(slot, values[0], True, cue, sentence))
    return out


def _outermost(spans: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """The spans not inside a longer one ("微信" in "企业微信"; the same span matched by two
    names stays), in text order: one sort and one sweep, not a comparison of every pair."""
    ordered = sorted(spans, key=lambda s: (s[0], -s[1]))
    out: list[tuple[int, int, str, str]] = []
    reach = -1  # the furthest end of the spans before the current (start, end)
    i = 0
    while i < len(ordered):
        start, end = ordered[i][0], ordered[i][1]
        j = i
        while j < len(ordered) and ordered[j][:2] == (start, end):
            j += 1
        if reach < end:
            out.extend(ordered[i:j])
        reach = max(reach, end)
        i = j
    return out


# ---------------------------------------------------------------------- quantities

def _qty_claims(sentence: str, subject: str, cjk: bool) -> list[Claim]:
    """Quantity claims (:func:`.quantities.quantities`): the value a sentence gives a setting
    ("batch of 500 rows", "借期 30 天", "cut-off at 15:30") on ``…|qty|unit`` with its topic;
    only a sentence with change wording replaces an earlier value (see
    :meth:`~.timeline.Timeline.link`)."""
    return [Claim(f"{subject}|qty|{q.unit}", f"{q.value} {q.unit}", True, "change" if q.changed else "", sentence,
                  q.topic, f"{q.was} {q.unit}" if q.was else "")
            for q in quantities(sentence, cjk)]


# ---------------------------------------------------------------------- names

_NAMED_PARTS = {"app": "app", "application": "app", "project": "project", "product": "product", "service": "service",
                "bot": "bot", "tool": "tool", "site": "site", "website": "site", "repo": "repo", "repository": "repo",
                "company": "company", "startup": "company", "brand": "product", "game": "game", "library": "library",
                "package": "library", "项目": "project", "应用": "app", "小程序": "app", "产品": "product", "服务": "service",
                "网站": "site", "公司": "company", "仓库": "repo", "游戏": "game", "品牌": "product"}
_NAME_VALUE = r"[\"'“‘`]?((?-i:[A-Z][\w.\-]{1,30})|[\u4e00-\u9fff]{2,8})[\"'”’`]?"
_PART_EN = "|".join(k for k in _NAMED_PARTS if k.isascii())
_NAME_EN = re.compile(
    rf"\b(?:the|our|my|this|new) (?:[a-z\-]+ )?({_PART_EN})(?:'s name| name)? (?:is |will be |'s |is now |gets )?(?:called |named |renamed (?:to )?)?"
    rf"(?:called|named|renamed to|renamed) {_NAME_VALUE}|"
    rf"\b(?:the|our|my|this) ({_PART_EN}) name (?:is|will be|becomes) {_NAME_VALUE}|"
    rf"\brenam\w* (?:the|our|my|this) ({_PART_EN}) (?:to|as|into) {_NAME_VALUE}|"
    rf"\bcall (?:the|our|my|this) ({_PART_EN}) {_NAME_VALUE}", re.I)
_PART_CN = "|".join(k for k in _NAMED_PARTS if not k.isascii())
_NAME_CN = re.compile(rf"({_PART_CN}|[Aa]pp)(?:的)?(?:名字|名称)?(?:改名为|改名叫|更名为|改叫|改成|就叫|叫做|叫|名为|定为|定名为)\s*"
                      rf"[“\"'「]?([A-Za-z][\w.\-]{{1,30}}|[\u4e00-\u9fff]{{2,8}}?)[”\"'」]?(?=[，。,.;；！!？?\s]|$)")


def _name_claims(sentence: str, subject: str, cjk: bool) -> list[Claim]:
    """The name a project or product is given: "the app is called Tidewater", "rename the
    app to Harbor", "项目改名为 青鸟". A rename is a change; a plain naming claims the name."""
    match = (_NAME_CN if cjk else _NAME_EN).search(sentence)
    if not match:
        return []
    groups = [g for g in match.groups() if g]
    if len(groups) < 2:
        return []
    part = _NAMED_PARTS.get(groups[0].lower(), _NAMED_PARTS.get(groups[0], ""))
    value = groups[1].strip(".")
    if not part or not value or value.casefold() in {"it", "that", "this", "something", "what"}:
        return []
    cue = "change" if re.search(r"renam|改名|更名|改叫|改成", match.group(0), re.I) else _cue(sentence, cjk)
    return [Claim(f"{subject}|name of {part}", value, True, cue, sentence)]


def claims_in_text(text: str, subject: str = "user", profile: bool = True) -> list[Claim]:
    """The claims of one message (class choices, quantities, names and, with ``profile``,
    exclusive profile facts: an unnamed assistant's "I'm a …" says nothing about the user)."""
    return list(_claims_in_text(text, subject, CHOICE_WINDOW, QUANTITIES, profile))


@functools.lru_cache(maxsize=512)
def _claims_in_text(text: str, subject: str, window: int, quantities: bool = True,
                    profile: bool = True) -> tuple[Claim, ...]:
    """Cached: a commit asks once per memory of a message (its event, its entities, its
    preference), and the claims are frozen; ``window`` is in the key because a benchmark
    changes :data:`CHOICE_WINDOW` between runs."""
    out: list[Claim] = []
    subject = subject.casefold() or "user"
    for sentence in split_sentences(text):
        cjk = has_cjk(sentence)
        out.extend(_class_claims(sentence, subject, cjk))
        if quantities:
            out.extend(_qty_claims(sentence, subject, cjk))
        out.extend(_name_claims(sentence, subject, cjk))
        cue = _cue(sentence, cjk)
        for attribute, value, multi in profile_facts(sentence, cjk) if profile else ():
            if not multi and attribute in EXCLUSIVE_ATTRIBUTES:
                out.append(Claim(f"{subject}|{attribute}", value, True, cue, sentence))
    out = _left_in_message(out)
    unique: dict[tuple[str, str, tuple[str, ...]], Claim] = {}
    for claim in out:
        unique.setdefault((claim.slot, claim.key, claim.topic), claim)
    return tuple(unique.values())


_GENERIC_PART = re.compile(r"\|(?:project|app|application)$")


def accepted_claims(text: str, values: Sequence[str] = (), subject: str = "user") -> list[Claim]:
    """The claims of the part of an assistant's proposal that a person's short reply accepted
    (:mod:`knowhub.providers.llm.local_context_accept`): the tools it picks (only ``values``
    when the reply named them: "doing it. uv.") and the quantities it sets; what the proposal
    leaves ("from Poetry", "instead of 15") is no value, and two tools of one class with no
    word telling which is chosen claim nothing, as in a person's own statement."""
    keys = {value_key(v) for v in values}
    out: list[Claim] = []
    subject = subject.casefold() or "user"
    for sentence in split_sentences(text):
        cjk = has_cjk(sentence)
        for claim in _class_claims(sentence, subject, cjk, proposal=True):
            if keys and claim.key not in keys:
                continue
            # the assistant's "the project" / "the app" is the one the chat is about, no side project
            out.append(dataclasses.replace(claim, slot=_GENERIC_PART.sub("", claim.slot)))
    if QUANTITIES and not out:  # a number it sets, when it picks no tool ("ten times faster" is no setting)
        for sentence in split_sentences(text):
            out.extend(_qty_claims(sentence, subject, has_cjk(sentence)))
    unique: dict[tuple[str, str, tuple[str, ...]], Claim] = {}
    for claim in _left_in_message(out):
        unique.setdefault((claim.slot, claim.key, claim.topic), claim)
    return list(unique.values())


def _left_in_message(claims: list[Claim]) -> list[Claim]:
    """A change of a quantity leaves the value of that unit said before it in the message
    ("14:00 is too early. Change the cut-off to 15:30."): it becomes the change's ``was``
    and claims nothing itself."""
    if not any(c.topic and c.cue == "change" for c in claims):
        return claims
    out: list[Claim] = []
    earlier: dict[str, set[str]] = {}  # slot → values said before, with no change wording
    for claim in claims:
        if not claim.topic:
            out.append(claim)
            continue
        values = earlier.setdefault(claim.slot, set())
        if claim.cue != "change":
            values.add(claim.value)
            out.append(claim)
            continue
        others = {v for v in values if value_key(v) != claim.key}
        if not claim.was and len(others) == 1:
            claim = dataclasses.replace(claim, was=others.pop())
        if claim.was:  # the old value said beside its change claims nothing
            out = [c for c in out if not (c.slot == claim.slot and c.key == value_key(claim.was) and not c.cue)]
        out.append(claim)
    return out


def fact_claims(facts: list[dict[str, object]], cue_text: str = "") -> list[Claim]:
    """Claims of profile facts (``{subject, attribute, value, multi, text}``)."""
    out = []
    for fact in facts:
        attribute = str(fact.get("attribute") or "")
        value = str(fact.get("value") or "")
        if not attribute or not value:
            continue
        text = str(fact.get("text") or cue_text)
        cjk = has_cjk(text)
        subject = str(fact.get("subject") or "user").casefold()
        exclusive = not fact.get("multi") and attribute in EXCLUSIVE_ATTRIBUTES
        out.append(Claim(f"{subject}|{attribute}", value, exclusive, _cue(text, cjk), text))
    return out
