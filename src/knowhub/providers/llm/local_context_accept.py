"""A short reply that accepts the assistant's proposal: what was decided, read from the proposal.

In a coding chat the current value of a decision is often set by a reply that never names
the topic: the assistant proposes ("I'd switch from Poetry to uv: …", "Option A … Option B
…"), the user answers "doing it. uv.", "ok let's go with that", "yes, option B",
"行，就按这个来". Nothing in such a reply matches "which package manager do we use now?",
and a bare "ok" is no memory of its own. :func:`accepted_choice` reads the pair: when a
short reply accepts the immediately preceding proposal (or picks one of its options), it
returns the part of the proposal that was chosen and the tools it names, so that the
extractor (:func:`~.local_context_assistant.assistant_memories`) writes the user's decision
memory citing the reply and the proposal, and the timeline
(:func:`knowhub.context.commit.slots.accepted_claims`) lets it replace the earlier value.
A refusal ("no, keep poetry") is handled by the refusal rule instead and decides nothing
here; a hedge ("ok, let me think about it", "先不改") accepts nothing.

The words are general English and Chinese: how people say yes, pick an option, or put a
decision off; none comes from benchmark text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from knowhub.providers.llm.local_context_code import strip_code
from knowhub.providers.llm.local_context_text import Turn, content_words, split_sentences
from knowhub.providers.llm.local_context_tools import value_members

__all__ = ["MAX_REPLY_CHARS", "AcceptedChoice", "accepted_choice", "fold_into_replies"]

#: A reply longer than this says more than "yes": its own memory carries it (Latin characters;
#: a Chinese reply counts each character as three).
MAX_REPLY_CHARS = 160

# ---------------------------------------------------------------------- the reply

#: A yes word opening the reply, alone in its first sentence or before what is accepted.
_YES_EN = re.compile(
    r"^(?:(?:ok(?:ay)?|yes|yep|yeah|yup|sure|alright|all right|agreed|deal|fine|perfect|great|good|right)\b[\s,.!;:—–-]*)+"
    r"(?:$|(?:let'?s|we'?ll|i'?ll|go|do|doing|ship|sounds|works|that|then|please|option|the|plan|approach|choice|"
    r"variant|[a-d]\b|\d\b))", re.I)
_YES_CN = re.compile(r"^(?:好(?:的|吧|啊|嘞|呀)?|行|可以|没问题|嗯+|ok|OK)(?:[，,。.！!～~\s]|$)|^同意")
#: Saying yes to a proposal anywhere in the first sentence ("Great, let's do it", "那就按表上的来").
_ACCEPT_EN = re.compile(
    r"\b(?:let'?s (?:do|go|use|try|take|pick|switch|keep|stick)|go (?:ahead|for it|with)|(?:do|doing|ship|shipping) (?:it|that|this)|"
    r"sounds (?:good|great|right|fine|like a plan)|works for (?:me|us)|fine (?:by|with) (?:me|us)|that works|makes sense|"
    r"i agree|agreed|approved|i'?m sold|convinced|(?:we|i)'?ll (?:go with|take|use|do) (?:it|that|this|option|the)|"
    r"(?:it is|it'?s) a deal|yes,? please)\b", re.I)
_ACCEPT_CN = re.compile(r"(?:^|[，,。.！!；;：:\s])(?:那就|就按|就这么|按你说的(?:来|办|做)|听你的|按这个|就用|就选|定了|就它了|就这样|照这个|"
                        r"照你说的|同意|赞成|没意见)")
#: Yes words anywhere (what :func:`_says_only_yes` takes out before counting what is left).
_YES_WORDS = re.compile(r"\b(?:ok(?:ay)?|yes|yep|yeah|yup|sure|alright|all right|agreed|deal|fine|perfect|great|good|right|"
                        r"please|then|it is|that|this|it|do|doing|done|now|go|ahead|ship|by me|for me)\b|"
                        r"好的?|行|可以|没问题|嗯+|同意|赞成|吧", re.I)
#: Thanks for an answer is no decision ("Great, thanks!", "好，谢谢").
_THANKS = re.compile(r"\bthanks?\b|\bthank you\b|谢谢|多谢|感谢", re.I)
#: Putting it off or asking first: no decision yet ("ok, let me think", "先不改", "再想想").
_HEDGE = re.compile(r"\b(?:let me (?:think|check|see|look|ask)|i'?ll (?:think|check|see)|think about it|not (?:yet|now|sure)|"
                    r"later|maybe|hold on|wait|not so fast|hmm+)\b|先不|再想想|再看看|考虑一下|想一想|以后再说|等等|等一下|回头再|"
                    r"不确定|还没想好|"
                    # a yes before a refusal: "ok, no need", "好的，不换了" (review9)
                    r"\b(?:no need|not needed|never mind|nevermind|forget it|no thanks)\b|不换|不用|不改|不要|算了|不了|不需要", re.I)
#: Picking one option: "option B", "B it is", "the second one", "方案二", "选 B", "第二个".
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "last": -1, "一": 1, "二": 2, "三": 3, "四": 4,
             "1": 1, "2": 2, "3": 3, "4": 4, "a": 1, "b": 2, "c": 3, "d": 4}
_PICK_EN = re.compile(r"\b(?:option|plan|approach|variant|choice|number|no\.?)\s*([a-d1-4])\b|^([a-d1-4])(?:[,.!]|\s*$|\s+(?:please|it is|then|for me|works)\b)|"
                      r"\b([a-d])\s+it is\b|\bgo with ([a-d1-4])\b|"
                      r"\bthe (first|second|third|fourth|last) (?:one|option|approach|plan|variant|choice)\b", re.I)
_PICK_CN = re.compile(r"(?:方案|选项|选|用|第)\s*([一二三四1-4A-Da-d])(?:个|种|号|吧|方案|[，,。.！!\s]|$)")

# ---------------------------------------------------------------------- the proposal

#: An option line of the proposal: "Option B: …", "**B.** …", "2) …", "方案二：…".
_OPTION_LINE = re.compile(r"^\s*(?:[-*#>]\s*)*(?:\*\*)?(?:(?:option|plan|approach|variant|choice)\s+([a-d1-4])\b|"
                          r"([a-d1-4])[.):](?!\d))|^\s*(?:[-*#>]\s*)*(?:\*\*)?(?:方案|选项)\s*([一二三四1-4A-Da-d])", re.I)
#: A sentence that proposes: "I'd switch to …", "I recommend …", "my pick is …", "建议 …".
_PROPOSES = re.compile(
    r"\b(?:i(?:'d| would)(?! not)|i (?:recommend|suggest|propose)|my (?:pick|recommendation|suggestion|vote)|recommend(?:ed)?|"
    r"suggest(?:ed)?|propos(?:e|ed|al)|let'?s|we (?:could|should|can)|go with|switch(?:ing)? to|move to|best (?:option|choice|bet)|"
    r"simplest)\b|(?<!不)(?:建议|推荐)|我会|可以改|改成|换成|改用|用.{1,12}吧|最好|不如", re.I)
#: ... unless it advises against: "I wouldn't use Redis here", "不建议一步上 16".
_ADVISES_AGAINST = re.compile(r"\b(?:i wouldn'?t|i would not|don'?t (?:recommend|suggest)|not (?:recommend|suggest)|avoid)\b|"
                              r"不建议|不推荐|不要|别用", re.I)
_NUMBER = re.compile(r"\d")


@dataclass(frozen=True)
class AcceptedChoice:
    """What a short reply accepted: the chosen part of the proposal (its sentences that say
    what to do), the tools decided as ``(class, canonical)`` (those the reply names, else each
    class the part names, its member when it names one; "" when it names two: "from Poetry to
    uv" — the timeline tells which), and the option label the reply picked ("" when it took
    the proposal whole)."""

    text: str
    values: tuple[tuple[str, str], ...]
    option: str = ""


def _members(text: str) -> list[tuple[str, str]]:
    folded = text.casefold()
    found: list[tuple[int, str, str]] = []
    for cls, canonical, pattern, literals in value_members():
        if literals is not None and not any(lit in folded for lit in literals):
            continue
        match = pattern.search(text)
        if match:
            found.append((match.start(), cls, canonical))
    return [(cls, canonical) for _, cls, canonical in sorted(found)]


def _accepts(reply: str) -> bool:
    """A yes, an acceptance or a pick in the reply's first sentence, not a question, a hedge
    or (with no more than a yes) thanks."""
    sentences = split_sentences(reply)
    first = (sentences[0] if sentences else reply).strip().lstrip("\"'“‘(")
    if first.rstrip().endswith(("?", "？")) or _HEDGE.search(first):
        return False
    if _ACCEPT_EN.search(first) or _ACCEPT_CN.search(first) or _PICK_EN.search(first) or _PICK_CN.search(first):
        return True
    return bool((_YES_EN.search(first) or _YES_CN.search(first)) and not _THANKS.search(first))


#: What a bare yes may say beside the yes and the value it picks ("doing it. uv.", "行，就按这个来").
_MAX_OTHER_WORDS = 2
_MAX_OTHER_CJK = 6
_FILLER_CJK = frozenset("了啊呀吧哦呢嘛啦哈的这个那来办做就")


def _says_only_yes(reply: str) -> bool:
    """The reply says nothing but yes (and which tool or option): a reply that says more
    ("可以，就按这个来：Django + MySQL，借期 30 天", "Perfect. Do it. Does it run on 3.11?")
    is a memory of its own, with its own words and claims, and names its topic itself."""
    rest = reply
    for pattern in (_ACCEPT_EN, _ACCEPT_CN, _PICK_EN, _PICK_CN, _YES_WORDS):
        rest = pattern.sub(" ", rest)
    for _, _, member, _ in value_members():
        rest = member.sub(" ", rest) if member.search(rest) else rest
    words = [w for w in content_words(rest) if w.isascii()]
    cjk = [ch for ch in rest if "\u3400" <= ch <= "\u9fff" and ch not in _FILLER_CJK]
    return len(words) <= _MAX_OTHER_WORDS and len(cjk) <= _MAX_OTHER_CJK


def _picked(reply: str) -> int:
    """The option number the reply picks (0: none)."""
    match = _PICK_EN.search(reply) or _PICK_CN.search(reply)
    if match is None:
        return 0
    label = next(g for g in match.groups() if g).casefold()
    return _ORDINALS.get(label, 0)


def _options(prose: str) -> list[str]:
    """The proposal's labelled options, in order (each runs to the next label)."""
    options: list[str] = []
    current: list[str] | None = None
    for line in prose.split("\n"):
        if _OPTION_LINE.match(line):
            if current is not None:
                options.append("\n".join(current))
            current = [line]
        elif current is not None:
            current.append(line)
    if current is not None:
        options.append("\n".join(current))
    return options if len(options) >= 2 else []


def _sentences_naming(prose: str, keep: object) -> list[str]:
    return [" ".join(s.split()) for s in split_sentences(prose) if s.strip() and keep(s)]  # type: ignore[operator]


def accepted_choice(proposal: Turn, reply: Turn | None) -> AcceptedChoice | None:
    """The part of ``proposal`` (an assistant turn) that ``reply`` (the next turn, a short
    user reply) accepts, or None when the reply is long, refuses, hedges or accepts nothing
    that names a tool or a number (module doc)."""
    if reply is None or reply.role != "user" or reply.index != proposal.index + 1:
        return None
    text = reply.text.strip()
    weight = sum(3 if "\u3400" <= ch <= "\u9fff" else 1 for ch in text)
    if not text or weight > MAX_REPLY_CHARS or not _accepts(text) or not _says_only_yes(text):
        return None
    prose = strip_code(str(proposal.extra.get("raw") or proposal.text))
    options = _options(prose)
    pick = _picked(text)
    said = _members(_ACCEPT_EN.sub(" ", text))  # "Go with Telegram": the verb is no language
    option = ""
    if options and pick:
        index = len(options) - 1 if pick == -1 else pick - 1
        if index >= len(options):
            return None
        part = _sentences_naming(options[index], lambda s: True)
        option = str(pick if pick > 0 else len(options))
    elif said:  # "doing it. uv.": the proposal's sentences naming what the reply names
        names = {canonical for _, canonical in said}
        part = _sentences_naming(prose, lambda s: any(c in names for _, c in _members(s)))
        if not part:
            return None
    else:
        part = _sentences_naming(prose, lambda s: bool(_PROPOSES.search(s)) and not _ADVISES_AGAINST.search(s)
                                 and bool(_members(s) or _NUMBER.search(s)))
    if not part:
        return None
    chosen = " ".join(part)[:1200]
    values = list(said)
    if not said:  # a class the chosen part names once is decided; of two ("from Poetry to uv") only the class
        named = _members(chosen)
        for cls in dict.fromkeys(c for c, _ in named):
            members = [v for c, v in named if c == cls]
            values.append((cls, members[0] if len(members) == 1 else ""))
    if not values and not _NUMBER.search(chosen):
        return None
    return AcceptedChoice(chosen, tuple(values[:4]), option)



def fold_into_replies(candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An accepting reply that is a memory of its own ("Perfect. Do it. Does it run on 3.11?")
    becomes the decision: its event memory takes the decision's summary, cites the proposal
    too and carries what was decided, and no second node repeats it (a node more per reply
    shifts the word statistics every other memory is ranked by). A bare "ok let's go with
    that" has no memory of its own: its decision stays a node."""
    own = {str(c["source_refs"][0]): c for c in candidates
           if c.get("category") == "events" and c["metadata"].get("kind") == "turn" and len(c.get("source_refs") or []) == 1}
    out: list[dict[str, Any]] = []
    for candidate in candidates:
        meta = candidate.get("metadata") or {}
        event = own.get(str(candidate["source_refs"][0])) if meta.get("accepts") else None
        if event is None:
            out.append(candidate)
            continue
        event["source_refs"] = list(candidate["source_refs"])
        # the reply's own words stay first (what it says beside the yes is its own memory)
        event["abstract"] = f"{event['abstract']} — {meta.get('summary') or candidate['abstract']}"
        decided = [ln for ln in candidate["overview"].split("\n") if " answered: " not in ln]  # the event quotes the reply
        event["overview"] = "\n".join([*decided, event["overview"]])
        event["content"] = candidate["content"]
        event["confidence"] = max(event["confidence"], candidate["confidence"])
        event["metadata"].update({k: meta[k] for k in ("kind", "origin", "accepts", "decided", "decided_values", "option", "verdict")})
    return out
