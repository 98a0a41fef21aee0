"""Rule-based, bilingual (English + Chinese) memory extraction for the offline LocalAgent.

Each ``extract_*`` function takes the payload of a context extraction task (see
:mod:`.local_context`) and returns candidate dicts ``{category, owner_scope, routing_key,
abstract, overview, content, confidence, source_refs, metadata}``. Heuristics, not a
language model — but tuned so that memories are fine-grained: every candidate cites only
the turn(s) it came from, keeps the concrete words of the speaker, names the speaker, and
resolves relative time cues against the message time ("yesterday [7 May 2023]"). The
entity/event extractor emits one event memory for every substantive turn so that no
detail of a conversation is lost.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from knowhub.providers.llm.local_context_accept import fold_into_replies
from knowhub.providers.llm.local_context_assistant import assistant_memories
from knowhub.providers.llm.local_context_cn import cn_entities
from knowhub.providers.llm.local_context_code import strip_code
from knowhub.providers.llm.local_context_instructions import (
    instruction_topic,
    is_instruction,
    is_listed_rule,
    preference_phrases,
    rules_follow,
)
from knowhub.providers.llm.local_context_names import (
    NOT_ENTITY,
    NameContext,
    check_name,
    name_context,
    names_in,
)
from knowhub.providers.llm.local_context_profile import NAME_PATTERNS, profile_facts
from knowhub.providers.llm.local_context_text import (
    STOPWORDS,
    Turn,
    annotate_time_cues,
    content_words,
    has_cjk,
    is_acknowledgement,
    split_sentences,
    truncate,
    turns_from_payload,
)
from knowhub.providers.llm.local_context_topics import base_verbs, keywords_of, topics_of

__all__ = [
    "extract_entities_events",
    "extract_preferences",
    "extract_procedures",
    "extract_profile",
    "summarize_session",
]

ABSTRACT_LIMIT = 240

_EVENT_CAP = 400
_QUESTION_END = ("?", "？")

#: The extractors' data-chosen rules, each one switchable so that the benchmark can
#: validate it leave-one-conversation-out (benchmarks/_context_loo.py): ``lexicon_tags``
#: writes the topics/keywords/base verbs of :mod:`.local_context_topics` into event
#: overviews; ``follow_up_quote`` quotes the turn two back when a reply answers a question;
#: ``user_parts`` gives the statements a long user message to an assistant leaves out of its
#: summary (a second topic: "I'm at home on the island …" inside a request about the job
#: queue) event nodes of their own, citing the message. Only the unnamed user of an agent
#: conversation: a long turn between two named people (LoCoMo) is one conversational move,
#: and parts there cost LoCoMo dev 0.5 points. Measured in the seventh session: long
#: technical chats +0.2, dev and fresh ±0, and on the ~85k-token chats written after the
#: rule (never seen by it) xl 0.801 → 0.820 (English 0.726 → 0.768), xl2 0.818 → 0.821
#: (docs/benchmarks.md).
SWITCHES: dict[str, bool] = {"lexicon_tags": True, "follow_up_quote": True, "user_parts": True}
#: A part node packs consecutive left-out statements up to this many characters.
PART_CHARS = 240


def _candidate(category: str, routing_key: str, abstract: str, overview: str, content: str,
               confidence: float, refs: list[str], owner_scope: str = "user", **metadata: Any) -> dict[str, Any]:
    return {
        "category": category,
        "owner_scope": owner_scope,
        "routing_key": routing_key,
        "abstract": truncate(abstract, ABSTRACT_LIMIT),
        "overview": overview,
        "content": content,
        "confidence": round(max(0.0, min(1.0, confidence)), 3),
        "source_refs": refs,
        "metadata": metadata,
    }


def _statements(text: str) -> list[str]:
    """Sentences that are not questions."""
    return [s for s in split_sentences(text) if not s.rstrip("\"'”’) ").endswith(_QUESTION_END)]


#: A question that opens with its question word or auxiliary: no clause of it is a statement.
_ASKS = re.compile(r"^\W*(?:do|does|did|is|are|was|were|am|can|could|would|will|shall|should|may|might|must|have|has|"
                   r"had|what|where|when|why|how|which|who|whom|whose|isn't|aren't|don't|doesn't|didn't|won't|"
                   r"wouldn't|couldn't|shouldn't)\b|^(?:是不是|要不要|能不能|可不可以|会不会|有没有|为什么|怎么|哪|谁|什么)", re.I)


#: A supposition, not a statement: "Suppose I relocated to Austin, how …?", "假设我今年30岁，…？".
_SUPPOSES = re.compile(r"^\W*(?:(?:suppose|supposing|say|let'?s say|let us say|assum\w*|imagine|hypothetically|what if|"
                       r"in case|even if|if)\b|假设|假如|如果|要是|万一|比如说?|设想)", re.I)


def _profile_statements(text: str) -> list[str]:
    """The statements a profile fact may come from: every sentence that is no question, and the
    clauses before the asking one of a question that opens as a statement ("Now that we're
    settled in Adelaide, can you help me pick a NAS?" → "Now that we're settled in Adelaide")."""
    out = []
    for sentence in split_sentences(text):
        if not sentence.rstrip("\"'”’) ").endswith(_QUESTION_END):
            out.append(sentence)
        elif not _ASKS.match(sentence) and not _SUPPOSES.match(sentence) and re.search(r"[,，]", sentence):
            out.append(re.split(r"[,，](?=[^,，]*$)", sentence)[0])
    return out


def _clean_phrase(phrase: str, max_words: int = 8) -> str:
    phrase = re.split(
        r"[,.;:!?，。；：！？()\[\]]| - | but | because | 'cause | cause | and then | and it | so that | so | which | as well as | 但是| 因为",
        phrase,
    )[0]
    words = phrase.strip().split()
    return " ".join(words[:max_words]).strip(" '\"“”")


# ---------------------------------------------------------------------- profile

def extract_profile(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Stable facts about the speakers (:func:`.local_context_profile.profile_facts`): name,
    age, residence, work location, origin, employer, job, studies, diet, languages, family."""
    out: list[dict[str, Any]] = []
    for turn in turns_from_payload(payload):
        if not (turn.is_person or (turn.role == "assistant" and payload.get("include_assistant"))):
            continue
        seen: set[tuple[str, str]] = set()
        for sentence in _profile_statements(turn.text):
            for attribute, value, multi in profile_facts(sentence, has_cjk(sentence)):
                if (attribute, value.lower()) in seen or (not multi and any(a == attribute for a, _ in seen)):
                    continue  # the first statement of a single-valued attribute in a message wins
                seen.add((attribute, value.lower()))
                fact_text = f"{turn.speaker} — {attribute}: {value}"
                out.append(_candidate(
                    "profile", f"{turn.speaker} {attribute}",
                    f"{turn.speaker}'s {attribute}: {value} (said on {turn.date})" if turn.date else f"{turn.speaker}'s {attribute}: {value}",
                    f"- {fact_text}\n- source: {sentence}",
                    turn.cite(), 0.75, [turn.id],
                    speaker=turn.speaker,
                    facts=[{"subject": turn.speaker, "attribute": attribute, "value": value, "multi": multi,
                            "text": sentence, "source_refs": [turn.id], "at": turn.when.isoformat() if turn.when else ""}],
                ))
    return out


# ---------------------------------------------------------------------- preferences

_PREF_EN = re.compile(
    r"\b(?:I|we)\s*(?:really |absolutely |totally |just |also |do |kinda |kind of |still |much )?"
    r"(love|like|enjoy|prefer|adore|hate|dislike|can't stand|cannot stand|don't like|do not like|am into|'m into|"
    r"am a (?:big |huge )?fan of|'m a (?:big |huge )?fan of|am passionate about|'m passionate about|am obsessed with|'m obsessed with)"
    r" ((?:(?!,? (?:but|and|although|though|while) (?:I|we)\b|, (?:I|we)\b)[^.!?;])+)",
    re.I,
)
#: Allergies and intolerances are the strongest dislikes ("I'm allergic to peanuts", "我对猫毛过敏").
_ALLERGY_EN = re.compile(r"\bI(?:'m| am) (?:very |quite |severely )?(?:allergic|intolerant) to ([^.!?;,]+)", re.I)
_ALLERGY_CN = re.compile(r"我对([^，。,.!！？?；;]{1,12}?)过敏")
_FAV_EN = re.compile(r"\bmy (?:all[- ]time )?favou?rite ([\w\- ]{2,30}?) (?:is|are|was|has to be) ([^.!?;,]+)", re.I)
_FAV_CN = re.compile(r"(?:我|^|，|,)最喜欢的([\u4e00-\u9fff]{1,6}?)(?:是|就是)([^，。,.!！？?；;]{1,16})")
_PREF_CN = re.compile(r"我(?:很|非常|特别|最|真的|也|比较|更)?(喜欢|爱|偏好|讨厌|不喜欢|热爱|更喜欢|受不了|不爱|不吃|不喝)([^，。,.!！？?；;]{1,24})")
_NEGATIVE = ("hate", "dislike", "can't stand", "cannot stand", "don't like", "do not like", "讨厌", "不喜欢", "受不了", "不爱",
             "不吃", "不喝", "is allergic to", "过敏", "would rather not", "does not want")


_THIRD = {"love": "loves", "like": "likes", "enjoy": "enjoys", "prefer": "prefers", "adore": "adores",
          "hate": "hates", "dislike": "dislikes", "don't like": "doesn't like", "do not like": "does not like"}


def _third_person(verb: str) -> str:
    """``love`` → ``loves``, ``am into`` → ``is into``: the speaker is named in the memory."""
    if verb in _THIRD:
        return _THIRD[verb]
    return re.sub(r"^am\b", "is", verb)


def _topic(obj: str) -> str:
    words = [w for w in re.findall(r"[\w'\-]+", obj.lower()) if w not in STOPWORDS and not w.startswith("-")]
    if has_cjk(obj):
        return obj.strip()[:8]
    return " ".join(words[:3]) or obj.strip()[:30]


def extract_preferences(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Likes, dislikes, favourites and constraints, one candidate per stated preference."""
    out: list[dict[str, Any]] = []
    for turn in turns_from_payload(payload):
        if not (turn.is_person or (turn.role == "assistant" and payload.get("include_assistant"))):
            continue
        listed = False  # the message announced a list of rules: its enumerated items are rules
        for sentence in _statements(turn.text):
            found: list[tuple[str, str]] = []
            for match in _PREF_EN.finditer(sentence):
                verb, obj = match.group(1).lower().replace("'m", "am"), _clean_phrase(match.group(2), 10)
                if obj and not re.match(r"(?:it|that|this|those|these|you|your|them|to|how|when|what|the way|seeing|hearing)\b", obj, re.I):
                    found.append((verb, obj))
            for match in _FAV_EN.finditer(sentence):
                found.append((f"favourite {match.group(1).strip()} is", _clean_phrase(match.group(2), 8)))
            for match in _ALLERGY_EN.finditer(sentence):
                found.append(("is allergic to", _clean_phrase(match.group(1), 6)))
            for match in _ALLERGY_CN.finditer(sentence):
                found.append(("过敏", _clean_phrase(match.group(1), 6)))
            favourite = _FAV_CN.search(sentence)
            if favourite:
                found.append((f"最喜欢的{favourite.group(1)}是", _clean_phrase(favourite.group(2), 8)))
            for match in _PREF_CN.finditer(sentence):
                obj = _clean_phrase(match.group(2), 8)
                if obj and not (favourite and obj.startswith("的")):
                    found.append((match.group(1), obj))
            if turn.is_person:
                rule = is_instruction(sentence, has_cjk(sentence)) or (listed and is_listed_rule(sentence))
                listed = listed or rules_follow(sentence)
                for verb, obj in [] if rule else preference_phrases(sentence):  # a rule is memory enough
                    obj = _clean_phrase(obj, 10)
                    if obj and not any(obj.casefold() in o.casefold() or o.casefold() in obj.casefold() for _, o in found):
                        found.append((verb, obj))
                if rule:
                    out.append(_instruction(turn, sentence))
            for verb, obj in found:
                negative = verb in _NEGATIVE
                topic = _topic(obj)
                annotated, _ = annotate_time_cues(sentence, turn.when)
                statement = f"{turn.speaker} {_third_person(verb)} {obj}" if not has_cjk(verb) else f"{turn.speaker_cn}{verb}{obj}"
                out.append(_candidate(
                    "preferences", f"{turn.speaker} {topic}",
                    f"{statement} — \"{truncate(annotated, 150)}\"",
                    f"- {turn.speaker} ({'dislikes' if negative else 'likes'}): {obj}\n- said on {turn.date}: {annotated}",
                    turn.cite(), 0.7, [turn.id],
                    speaker=turn.speaker, polarity="negative" if negative else "positive", topic=topic,
                    title=f"{turn.speaker} — {topic}", fact=statement,
                ))
    return out


def _instruction(turn: Turn, sentence: str) -> dict[str, Any]:
    """A standing instruction (:mod:`.local_context_instructions`): its own preference node,
    keyed by the speaker and what the rule is about, citing the message that states it."""
    cjk = has_cjk(sentence)
    topic = instruction_topic(sentence, cjk, STOPWORDS)
    annotated, _ = annotate_time_cues(sentence, turn.when)
    rule = truncate(annotated, 200)
    # in Chinese the unnamed user's rule needs no subject: "用户的…" on every rule would match the
    # 用户 of every question ("用户为什么不用 X？") and rank the rules above the answer
    owner = "" if turn.speaker_cn == "用户" else f"{turn.speaker_cn}的"
    abstract = (f"{owner}长期要求（规则）：{rule}" if cjk
                else f"Standing instruction from {turn.speaker} (a rule to follow): {rule}")
    return _candidate(
        "preferences", f"{turn.speaker} instruction {topic}", abstract,
        f"- {turn.speaker} (instruction): {rule}\n- said on {turn.date}",
        turn.cite(), 0.7, [turn.id],
        speaker=turn.speaker, polarity="instruction", kind="instruction", topic=topic,
        title=f"{turn.speaker} — instruction: {topic}", fact=f"{turn.speaker}: {rule}",
    )


# ---------------------------------------------------------------------- entities and events

_RELATIONS = ("sister", "brother", "mom", "mother", "dad", "father", "son", "daughter", "wife", "husband",
              "friend", "best friend", "boyfriend", "girlfriend", "partner", "boss", "cousin", "aunt", "uncle",
              "grandma", "grandmother", "grandpa", "grandfather", "niece", "nephew", "kids", "children",
              "dog", "cat", "puppy", "kitten", "coworker", "colleague", "neighbor", "mentor", "teacher",
              "supervisor", "manager", "advisor", "roommate", "classmate", "teammate", "landlord", "therapist",
              "coach", "tutor", "fiance", "fiancee", "boys", "girls")
_TITLE = r"(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+"
_REL_RE = re.compile(r"\bmy (" + "|".join(sorted(_RELATIONS, key=len, reverse=True))
                     + rf")(?:,? ((?-i:(?:{_TITLE})?[A-Z][a-z]+)))?\b", re.I)  # the name keeps its capital
_ACTION_HINT = re.compile(
    r"\b(went|go(?:ing)? to|visited|attended|joined|started|finished|got|bought|made|took|gave|met|moved|"
    r"painted|ran|played|won|lost|signed|launched|opened|adopted|graduated|traveled|travelled|celebrated|"
    r"planning|plan to|gonna|will|am going|'m going|decided|learned|read|wrote|saw|watched|built|created|"
    r"had|did|tried|received|became|volunteer\w*|organiz\w*)\b", re.I)
_EVENT_CN = re.compile(r"(去了|参加|开始|完成|买了|见了|搬|学会|做了|看了|打算|准备|计划|结婚|毕业|旅行|旅游|生日|比赛|演出)")


def _self_names(turns: list[Turn]) -> set[str]:
    """Names the speakers give themselves ("my name is Priya", "我叫王磊"): a profile fact
    about the speaker, not an entity they mention."""
    names: set[str] = set()
    for turn in turns:
        for pattern in NAME_PATTERNS:
            for match in pattern.finditer(turn.text):
                names.add(_clean_phrase(match.group(1), 3).lower())
    return names


def _speaker_names(turns: list[Turn]) -> set[str]:
    names: set[str] = set()
    for turn in turns:
        for part in turn.speaker.split():
            names.add(part.lower())
            if len(part) >= 4:
                for n in range(3, len(part)):
                    names.add(part[:n].lower())
    return names


def _left_out(turn: Turn, kept: str) -> list[str]:
    """The statements of a person's turn its summary ``kept`` leaves out, packed into parts of
    consecutive sentences (at most :data:`PART_CHARS` each; code and logs are no statements)."""
    parts: list[str] = []
    current = ""
    for sentence in split_sentences(strip_code(str(turn.extra.get("raw") or turn.text))):
        sentence = " ".join(sentence.split())
        said = len(content_words(sentence)) >= 3 or sum(1 for ch in sentence if "\u3400" <= ch <= "\u9fff") >= 6
        if not said or sentence in kept or " ".join(sentence.split()[:6]) in kept:
            if current:
                parts.append(current)
            current = ""
            continue
        if current and len(current) + len(sentence) + 1 > PART_CHARS:
            parts.append(current)
            current = ""
        current = f"{current} {sentence}".strip()
    if current:
        parts.append(current)
    return parts


def _event_text(turn: Turn) -> tuple[str, list[dict[str, str]], str]:
    """(L0 text: the most informative sentences within budget, time cues, full annotated text)."""
    statements = split_sentences(turn.text)
    annotated_parts = []
    cues: list[dict[str, str]] = []
    for sentence in statements:
        annotated, found = annotate_time_cues(sentence, turn.when)
        annotated_parts.append(annotated)
        cues.extend(found)
    budget = ABSTRACT_LIMIT - len(turn.speaker) - len(turn.date) - 8
    full = " ".join(annotated_parts)
    if len(full) <= budget:
        return full, cues, full
    scored = sorted(range(len(annotated_parts)), key=lambda i: -_informativeness(annotated_parts[i]))
    keep: set[int] = set()
    used = 0
    for i in scored:
        if used + len(annotated_parts[i]) + 1 <= budget or not keep:
            keep.add(i)
            used += len(annotated_parts[i]) + 1
    return " ".join(annotated_parts[i] for i in sorted(keep)), cues, full


def _informativeness(sentence: str) -> float:
    words = content_words(sentence)
    caps = len(re.findall(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+", sentence))
    digits = len(re.findall(r"\d", sentence))
    cue = 2.0 if "[" in sentence else 0.0
    return len(set(words)) + 1.5 * caps + 0.5 * min(digits, 4) + cue


def _substantive(turn: Turn) -> bool:
    """Worth a memory of its own: anything beyond a bare greeting or acknowledgement."""
    if turn.caption:
        return True
    if is_acknowledgement(turn.text):
        return False
    if has_cjk(turn.text):
        return sum(1 for ch in turn.text if "\u3400" <= ch <= "\u9fff") >= 4
    return len(content_words(turn.text)) >= 2


def extract_entities_events(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """One event memory per substantive turn, plus entity memories for named things."""
    turns = turns_from_payload(payload)
    speakers = _speaker_names(turns) | _self_names(turns)
    names = name_context([sentence for turn in turns for sentence in _prose_sentences(turn)])
    # like the profile and preference rules: an unnamed assistant's turns are no memories
    # about the user (its replies stay quoted as context of the user's turns; its fixes are
    # cases); a named second speaker of a transcript is a person
    include_assistant = bool(payload.get("include_assistant", False))
    out: list[dict[str, Any]] = []
    previous: Turn | None = None
    for position, turn in enumerate(turns):
        if turn.role in ("system", "tool") or not (turn.is_person or include_assistant):
            previous = turn
            continue
        following = turns[position + 1] if position + 1 < len(turns) else None
        # neighbours are quoted without their speaker's name: the name of the memory's own
        # speaker must stay a distinguishing term for "what did <name> ..." searches
        context_line = f"in reply to: \"{truncate(previous.text, 240)}\"" if previous else ""
        reply_line = f"answered with: \"{truncate(following.text, 240)}\"" if following else ""
        if _substantive(turn) and len(out) < _EVENT_CAP * 2:
            text, cues, full_text = _event_text(turn)
            caption = f" [shared image: {truncate(turn.caption, 80)}]" if turn.caption else ""
            has_action = bool(_ACTION_HINT.search(turn.text) or _EVENT_CN.search(turn.text))
            abstract = f"{turn.head(text)}{text}{caption}"
            resolved = [c["resolved"] for c in cues if c["resolved"]]
            overview_lines = [f"- {turn.speaker} said on {turn.date or 'an unknown date'}: {full_text}"]
            if resolved:
                overview_lines.append("- when: " + "; ".join(f"{c['cue']} = {c['resolved']}" for c in cues if c["resolved"]))
            if context_line:
                overview_lines.append(f"- context: {context_line}")
            # an answer to a follow-up question often names nothing ("What did you think of
            # it?" - "Super good! Rich and creamy"): the thing it is about was said two turns
            # back, usually by the same speaker; quote it (the memory still cites only its turn)
            earlier = turns[position - 2] if position >= 2 else None
            asked = previous is not None and any(q in previous.text for q in _QUESTION_END)
            if SWITCHES["follow_up_quote"] and earlier is not None and earlier.is_person and asked:
                overview_lines.append(f"- earlier: \"{truncate(earlier.text, 200)}\"")
            if reply_line:
                overview_lines.append(f"- then: {reply_line}")
            if turn.caption:
                overview_lines.append(f"- shared image: {turn.caption}")
            tagged = SWITCHES["lexicon_tags"]
            topics = topics_of(f"{turn.text} {turn.caption}") if tagged else []
            if topics:
                overview_lines.append(f"- topics: {', '.join(topics)}")
            verbs = base_verbs(turn.text) if tagged else []
            if verbs:
                overview_lines.append(f"- actions: {', '.join(verbs)}")
            keywords = keywords_of(f"{turn.text} {turn.caption}") if tagged else []
            if keywords:
                overview_lines.append(f"- keywords: {', '.join(keywords)}")
            out.append(_candidate(
                "events", f"{turn.id}", abstract, "\n".join(overview_lines),
                turn.cite() + (f"\n{context_line}" if context_line else ""),
                0.6 + (0.15 if cues else 0.0) + (0.1 if has_action else 0.0), [turn.id],
                speaker=turn.speaker, session_time=turn.when_text, event_time=resolved[0] if resolved else turn.date,
                time_cues=cues, kind="turn", topics=topics, keywords=keywords,
            ))
            if SWITCHES["user_parts"] and turn.role == "user" and not turn.extra.get("named") \
                    and len(full_text) > len(text):
                for n, part in enumerate(_left_out(turn, text), 1):
                    annotated, part_cues = annotate_time_cues(part, turn.when)
                    out.append(_candidate(
                        "events", f"{turn.id}-p{n}", f"{turn.head(annotated)}{annotated}",
                        f"- {turn.speaker} said on {turn.date or 'an unknown date'} (part of a longer message): {annotated}",
                        turn.cite(), 0.55, [turn.id], speaker=turn.speaker, session_time=turn.when_text,
                        event_time=turn.date, time_cues=part_cues, kind="turn part", event_id=f"{turn.id}-p{n}",
                    ))
        out.extend(_entity_candidates(turn, speakers, names))
        previous = turn
    if not include_assistant:  # an unnamed assistant's decisions, code and fixes (local_context_assistant)
        out = fold_into_replies([*out, *assistant_memories(turns)])
    return out


def _prose_sentences(turn: Turn) -> list[str]:
    """Sentences of the turn's prose: code is blanked in the message as written (its line
    breaks tell an indented block or a pasted traceback), then each sentence is joined."""
    raw = str(turn.extra.get("raw") or turn.text)
    return [" ".join(s.split()) for s in split_sentences(strip_code(raw)) if s.strip()]


def _entity_candidates(turn: Turn, speakers: set[str], names: NameContext) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for sentence in _prose_sentences(turn):  # code never names an entity
        annotated, _ = annotate_time_cues(sentence, turn.when)
        found: list[tuple[str, str, str]] = []  # (name, type, relation)
        for match in _REL_RE.finditer(sentence):
            relation = match.group(1).lower()
            person = match.group(2)
            if person and person.lower() not in STOPWORDS and person.capitalize() not in NOT_ENTITY:
                found.append((person, "person", f"{turn.speaker}'s {relation}"))
            else:
                found.append((f"{turn.speaker}'s {relation}", "relation", f"{turn.speaker}'s {relation}"))
        if has_cjk(sentence):
            found.extend(cn_entities(sentence, turn.speaker_cn))
        for name, kind in names_in(sentence, speakers, names):
            if not any(name == f[0] for f in found):
                found.append((name, kind, ""))
        for name, found_kind, relation in found:
            key = name.lower()
            kind = check_name(name, found_kind)  # no code tokens, times or fragments; languages are no places
            if kind is None or key in seen or (kind != "relation" and key in speakers):
                continue
            seen.add(key)
            desc = f"{relation}, " if relation and relation != name else f"{kind}, "
            abstract = f"{name} ({desc}mentioned by {turn.speaker}{' on ' + turn.date if turn.date else ''}): {truncate(annotated, 150)}"
            out.append(_candidate(
                "entities", name, abstract,
                f"- {name}: {kind}{'; ' + relation if relation else ''}\n- {turn.speaker} ({turn.date}): {annotated}",
                turn.cite(), 0.55 + (0.15 if kind in ("person", "place", "organization") else 0.0), [turn.id],
                speaker=turn.speaker, entity_type=kind, relation=relation, title=name,
                fact=f"{turn.speaker}{' (' + turn.date + ')' if turn.date else ''}: {truncate(annotated, 150)}",
            ))
    return out


# ---------------------------------------------------------------------- procedures

#: A fix: what was done to solve the problem (goes on the case's "solution" line).
_FIX_EN = re.compile(
    r"\b(the fix (?:was|is)|fixed (?:it|this|that)? ?by|solved (?:it|this|that)? ?by|the solution (?:was|is)|"
    r"resolved (?:it|this|that)? ?by|(?:the )?workaround (?:was|is)|what worked was|\w+ing (?:it|this|that|them) (?:fixed|solved|resolved)\b|"
    r"(?:it|this|that) (?:was )?(?:fixed|solved|resolved) "
    r"(?:it|the (?:problem|issue))|to fix (?:it|this|that),)", re.I)
#: A cause: why the problem happened (the "cause" line, never the solution).
_CAUSE_EN = re.compile(
    r"\b(the (?:root )?cause (?:was|is)|the problem (?:was|is)|the issue (?:was|is)|(?:it|this) (?:was|is) caused by|"
    r"turned out (?:that|to be))", re.I)
_FIX_CN = re.compile(r"(解决办法|解决方法|解决方案|解决了|就解决|修复|办法是|最后通过|改成|调整为|调到|换成)")
_CAUSE_CN = re.compile(r"(原因是|根因|问题是|问题出在|最后发现|排查发现|是因为|导致)")
_CLAUSE = re.compile(r"[^，,；;]+[，,；;]?")
_PATTERN_EN = re.compile(r"\b(?:I|we) (always|usually|normally|typically|tend to|every time|whenever)\b([^.!?;]*)", re.I)
_PATTERN_CN = re.compile(r"(?:我|我们)(总是|通常|一般|每次|习惯)([^，。,.!！？?；;]{2,30})")


def extract_procedures(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Cases (problem → solution), habits/patterns, and tool or skill usage."""
    turns = turns_from_payload(payload)
    out: list[dict[str, Any]] = []
    for i, turn in enumerate(turns):
        if turn.role == "tool":
            continue
        case = _case_of(turns, i)
        if case is not None:
            out.append(case)
        for sentence in _statements(turn.text):
            match = _PATTERN_EN.search(sentence) or _PATTERN_CN.search(sentence)
            if not match:
                continue
            habit = _clean_phrase(match.group(2), 10)
            if len(content_words(habit)) < 1:
                continue
            out.append(_candidate(
                "patterns", f"{turn.speaker} {_topic(habit)}",
                f"{turn.speaker} (habit): {truncate(sentence, 200)}",
                f"- habit of {turn.speaker}: {sentence}", turn.cite(), 0.55, [turn.id], owner_scope="agent",
                speaker=turn.speaker, title=f"{turn.speaker} — {_topic(habit)}",
            ))
    out.extend(_tool_usage(payload, turns))
    return out


def _case_parts(text: str) -> tuple[list[str], list[str]]:
    """(cause statements, fix statements) of a message; a sentence that holds both ("原因是
    磁盘满了，清理日志后解决了") is split at its clauses."""
    causes: list[str] = []
    fixes: list[str] = []
    for sentence in split_sentences(text):
        fix = bool(_FIX_EN.search(sentence) or _FIX_CN.search(sentence))
        cause = bool(_CAUSE_EN.search(sentence) or _CAUSE_CN.search(sentence))
        if fix and cause:
            for clause in (c.group(0).strip(" ，,；;") for c in _CLAUSE.finditer(sentence)):
                if _FIX_EN.search(clause) or _FIX_CN.search(clause):
                    fixes.append(clause)
                elif _CAUSE_EN.search(clause) or _CAUSE_CN.search(clause):
                    causes.append(clause)
            if not fixes:  # the clauses did not separate them: the whole sentence is the fix
                fixes.append(sentence)
        elif fix:
            fixes.append(sentence)
        elif cause:
            causes.append(sentence)
    return causes, fixes


def _case_of(turns: list[Turn], i: int) -> dict[str, Any] | None:
    """A case from the turn ``i`` that states a cause or a fix: the problem is the turn
    before it; the solution line holds only the fix (from this turn, else the next one),
    the cause gets its own line. A cause alone is a case without a solution."""
    turn = turns[i]
    causes, fixes = _case_parts(turn.text)
    if not causes and not fixes:
        return None
    if causes and not fixes and i + 1 < len(turns) and turns[i + 1].role != "tool":
        fixes = _case_parts(turns[i + 1].text)[1]
        fix_turn = turns[i + 1] if fixes else None
    else:
        fix_turn = None
    problem_turn = turns[i - 1] if i > 0 else None
    cited = [t for t in (problem_turn, turn, fix_turn) if t is not None]
    problem = truncate(problem_turn.text, 200) if problem_turn else ""
    cause = " ".join(causes)
    solution = " ".join(fixes)
    lines = ([f"- problem: {problem}"] if problem else []) + ([f"- cause: {cause}"] if cause else [])
    lines += [f"- solution: {solution}"] if solution else []
    head = solution or cause
    return _candidate(
        "cases", f"case {turn.id}",
        f"Case ({turn.speaker}{', ' + turn.date if turn.date else ''}): {truncate(head, 180)}"
        + (f" (cause: {truncate(cause, 60)})" if solution and cause else ""),
        "\n".join(lines), "\n".join(t.cite() for t in cited), 0.6 if solution else 0.5, [t.id for t in cited],
        owner_scope="agent", speaker=turn.speaker, problem=problem, cause=cause, solution=solution,
    )


def _used_tool_entries(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """``used_tools`` as ``{name, ...}`` dicts (a bare string is a name)."""
    entries = []
    for item in payload.get("used_tools") or []:
        if isinstance(item, str):
            item = {"name": item}
        if isinstance(item, dict) and item.get("name"):
            entries.append(item)
    return entries


def _pair_used_tools(
    entries: list[dict[str, Any]], tool_turns: list[Turn]
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Which ``used_tools`` entry describes which ``role: tool`` message.

    One use is one count: an entry (not a skill) names the same tool as a tool message of
    the session that no other entry describes, and when it gives ``source_refs`` the
    message is among them. Paired entries add their outcome and description to that
    message's use; the others are uses of their own.
    """
    paired: dict[str, dict[str, Any]] = {}
    unpaired: list[dict[str, Any]] = []
    for entry in entries:
        name = str(entry["name"]).casefold()
        refs = {str(r) for r in entry.get("source_refs") or []}
        turn = None
        if entry.get("kind") != "skill":
            turn = next(
                (t for t in tool_turns if t.id not in paired and t.speaker.casefold() == name
                 and (not refs or t.id in refs)),
                None,
            )
        if turn is None:
            unpaired.append(entry)
        else:
            paired[turn.id] = entry
    return paired, unpaired


def _tool_usage(payload: dict[str, Any], turns: list[Turn]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    tool_turns = [t for t in turns if t.role == "tool" and t.speaker != "Tool"]
    paired, unpaired = _pair_used_tools(_used_tool_entries(payload), tool_turns)
    for turn in tool_turns:
        name = turn.speaker
        entry = paired.get(turn.id, {})
        failed = bool(re.search(r"\b(error|exception|failed|traceback|not found)\b|错误|失败", turn.text, re.I))
        success = entry.get("success") if entry.get("success") is not None else not failed
        description = str(entry.get("description") or "")
        overview = [f"- {description}"] if description else []
        overview.append(f"- last output: {truncate(turn.text, 200)}")
        out.append(_candidate(
            "tools", name, f"Tool {name} was used ({'succeeded' if success else 'failed'}){' on ' + turn.date if turn.date else ''}",
            "\n".join(overview), turn.cite(), 0.7 if entry else 0.6,
            [turn.id], owner_scope="agent", tool=name, success=success, description=description,
            used_at=turn.when.isoformat() if turn.when else "", usage_key=str(entry.get("usage_key") or ""),
        ))
    for item in unpaired:
        name = str(item["name"])
        kind = "skills" if item.get("kind") == "skill" else "tools"
        success = item.get("success")
        refs = [str(r) for r in item.get("source_refs") or []]
        state = "" if success is None else (" (succeeded)" if success else " (failed)")
        out.append(_candidate(
            kind, name, f"{'Skill' if kind == 'skills' else 'Tool'} {name} was used in session {payload.get('session_id', '')}{state}",
            f"- {item.get('description') or 'used in a session'}", str(item.get("detail") or ""), 0.7, refs,
            owner_scope="agent", tool=name, success=success, description=str(item.get("description") or ""),
            used_at=str(payload.get("session_time") or ""), usage_key=str(item.get("usage_key") or ""),
        ))
    return out


# ---------------------------------------------------------------------- summary


def summarize_session(payload: dict[str, Any], max_sentences: int = 5) -> str:
    """Extractive summary: the most informative sentences, in conversation order."""
    turns = turns_from_payload(payload)
    if not turns:
        return ""
    sentences: list[tuple[int, str]] = []
    for turn in turns:
        for sentence in _statements(turn.text):
            annotated, _ = annotate_time_cues(sentence, turn.when)
            sentences.append((len(sentences), f"{turn.speaker}: {annotated}"))
    if not sentences:
        return truncate(" ".join(f"{t.speaker}: {t.text}" for t in turns[:3]), 400)
    doc_freq: Counter[str] = Counter()
    for _, sentence in sentences:
        doc_freq.update(set(content_words(sentence)))
    total = len(sentences)

    def score(sentence: str) -> float:
        words = set(content_words(sentence))
        idf = sum(math.log(1 + total / doc_freq[w]) for w in words)
        return idf / math.sqrt(len(words) + 1) + _informativeness(sentence) * 0.3

    top = sorted(sentences, key=lambda s: -score(s[1]))[:max_sentences]
    return " ".join(truncate(s, 200) for _, s in sorted(top))
