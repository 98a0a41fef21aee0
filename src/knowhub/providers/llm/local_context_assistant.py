"""What the assistant said, as memories: the offline rules for an unnamed assistant's turns.

For a coding agent, what was decided and why matters as much as what the user said: the
stack the assistant proposed and the user took, the configuration it wrote, the cause of a
bug and the fix. The rules here turn each assistant turn the user accepted or built on into
typed ``events`` memories (``metadata.kind``: ``decision``, ``plan``, ``fix``, ``code``,
``config`` or ``fact``) that cite the assistant message:

* **Accepted or not.** The user's next turn decides. An explicit refusal at its start ("No,
  ...", "let's not", "I'd rather", "不要", "算了") drops the turn: a rejected suggestion is
  no memory of the assistant; the refusal is the user's ``rejected`` memory, citing the
  reply and the suggestion it names ("the user decided against X"). An explicit acceptance
  ("sounds good", "works", "好的", "可以") or none at all (no reply, or a reply that goes on
  with the work: no objection) keeps the turn; the summary node quotes the reply. Citing
  the accepting reply as well (switch ``cite_acceptance``) was measured neutral to slightly
  worse leave one chat out, so it is off.
* **Split.** Every message gets one node: L0 its first statements of prose, L1 an outline
  of its pieces (each code block by the sentence that introduces it and the names it
  defines), L2 the message. A long message (over :data:`SPLIT_CHARS`) is also cut into its
  code blocks and its prose (paragraphs packed up to :data:`CHUNK_CHARS`): every piece is a
  node citing the message, so that a question about one function of a long answer meets a
  node about that function; the whole-message node then keeps only the outline.
* **Summaries never quote code.** The one-line summary (L0) of a code block is the prose
  sentence that introduces it ("This module hashes passwords and issues tokens:"), else
  the one after it, else the message's first prose sentence; the file name from the
  block's first comment is added. A message's summary is its first statements of prose.

The word lists are general English and Chinese (how people say yes and no, how a decision
or a cause is announced), not taken from any benchmark text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from knowhub.providers.llm.local_context_accept import accepted_choice
from knowhub.providers.llm.local_context_text import (
    Turn,
    content_words,
    has_cjk,
    is_acknowledgement,
    split_sentences,
    truncate,
)

__all__ = ["CHUNK_CHARS", "MAX_PIECES", "SPLIT_CHARS", "SWITCHES", "Piece", "assistant_memories", "reply_verdict", "split_message"]

#: The rules' switches, each validated leave one chat out (``benchmarks/tech_chat_bench.py
#: --loo``): ``assistant_memories`` (the whole of this module), ``cite_acceptance`` (a
#: message's summary node also cites the explicit acceptance), ``split_pieces`` (a long
#: message's code blocks and prose runs get nodes of their own), ``lean_summary`` (the
#: whole-message node of a split message keeps only the outline), ``refusal_memory`` (a refused
#: suggestion becomes the user's ``rejected`` memory), ``piece_context`` (the pieces quote
#: the request and the reply too, not only the whole-message node: off, since the quotes
#: spread the chat's words over many nodes and the retriever drops words found in too many),
#: ``accepted_decision`` (a reply that only accepts the proposal is the user's decision memory
#: citing both, and replaces the earlier value: :mod:`.local_context_accept`; off: on the
#: development chats it lost recall in every fold of the leave-one-chat-out check, see
#: docs/benchmarks.md "Issue 19: accepted proposals").
SWITCHES: dict[str, bool] = {"assistant_memories": True, "cite_acceptance": False, "split_pieces": True,
                             "refusal_memory": True, "piece_context": False, "lean_summary": True,
                             "accepted_decision": False}

#: Prose paragraphs of one message are packed into pieces of about this many characters.
CHUNK_CHARS = 600
_ABSTRACT = 220

# ---------------------------------------------------------------------- accepted or not

#: A refusal at the start of the reply (its first sentence).
_REJECT_EN = re.compile(
    r"^(?:no(?! (?:problem|worries|doubt)\b)|nope|nah|not really|hmm,? no)\b|\b(?:let'?s|we'?ll|i'?ll|use)\b[^.!?]*\binstead\b|\b(?:let'?s not|let us not|rather not|i'?d rather|i would rather|"
    r"don'?t (?:want|need|add|use)|do not (?:want|need|add|use)|we won'?t|no need (?:for|to)|skip (?:that|this|it)|"
    r"(?:way )?too (?:much|heavy|complex|complicated)|overkill|not (?:that|this) (?:one|approach|way))\b", re.I)
_REJECT_CN = re.compile(r"^(?:不[，,、 ]|不了|不行|不要|不用|别|算了|不需要|不想|还是不)|(?:不要用|不想用|不需要|太重了|跑不动|用不上|没必要)")
#: An explicit acceptance at the start of the reply.
_ACCEPT_EN = re.compile(
    r"^(?:ok(?:ay)?|yes|yep|yeah|sure|great|perfect|nice|cool|awesome|excellent|agreed|done|thanks|thank you|"
    r"no (?:problem|worries)|"
    r"sounds good|looks good|makes sense|that works|it works|works|worked|love it|good|fine|right|correct|"
    r"let'?s (?:go|do)|go (?:with|ahead))\b", re.I)
_ACCEPT_CN = re.compile(r"^(?:好|行|可以|没问题|对|同意|明白|收到|谢谢|很好|不错|就按|就这么|按这个|嗯)")


#: A refusal that names an alternative ("let's use SQLite instead", "改用 X") refuses the suggestion itself.
_INSTEAD = re.compile(r"\binstead\b", re.I)
_CLAUSE_END = re.compile(r"[,，;；:：.。!?！？、]")
_LATIN_WORD = re.compile(r"[a-z][a-z0-9+#.\-]*[a-z0-9+#]|[a-z0-9]{2,}")


def _names_part_of(phrase: str, suggestion: str) -> bool:
    """Whether ``phrase`` (what a refusal is about: the words right after it) names something
    the suggestion says: one of its first three Latin content words or a CJK character pair
    of its first CJK run occurs in the suggestion."""
    low = suggestion.lower()
    words = [w for w in _LATIN_WORD.findall(phrase.lower()) if w in content_words(w)][:3]
    if any(re.search(rf"(?<![a-z0-9]){re.escape(w)}(?![a-z0-9])", low) for w in words):
        return True
    cjk = "".join(ch if "\u3400" <= ch <= "\u9fff" else " " for ch in phrase).split()[:1]
    return any(run[i:i + 2] in suggestion for run in cjk for i in range(min(len(run), 6) - 1))


def _refuses(first: str, suggestion: str | None) -> bool:
    """A refusal in the reply's first sentence. At its start (at most one word before it,
    "Actually, I'd rather …") or naming an alternative ("… instead") it refuses the
    suggestion. Further in, a phrase such as "不要用 H2" or "I don't want a false alarm"
    may be about something else the user goes on to say, so it counts only when the clause
    it is in names part of the suggestion (when the suggestion is known)."""
    match = _REJECT_EN.search(first) or _REJECT_CN.search(first)
    if match is None:
        return False
    before = first[:match.start()]
    if suggestion is None or len(re.findall(r"\w+", before)) <= 1 or _INSTEAD.search(match.group(0)):
        return True
    end = _CLAUSE_END.search(first, match.end())
    after = first[match.end():end.start() if end else len(first)]
    if not content_words(after):  # "…，太重了": what is refused comes before the phrase
        start = max((m.end() for m in _CLAUSE_END.finditer(first, 0, match.start())), default=0)
        after = first[start:match.start()]
    return _names_part_of(after, suggestion)


def reply_verdict(reply: Turn | None, suggestion: str | None = None) -> str:
    """``rejected``, ``accepted`` (explicitly) or ``no_objection`` for the user's reply to
    ``suggestion`` (the assistant's message; unknown: any refusal phrase counts)."""
    if reply is None:
        return "no_objection"
    sentences = split_sentences(reply.text)
    first = (sentences[0] if sentences else reply.text).strip().lstrip("\"'“‘(")
    if _refuses(first, suggestion):
        return "rejected"
    if _ACCEPT_EN.search(first) or _ACCEPT_CN.search(first):
        return "accepted"
    return "no_objection"


# ---------------------------------------------------------------------- splitting

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+\-.#]*)")
_CONFIG_LANGS = frozenset((
    "yaml", "yml", "toml", "ini", "cfg", "conf", "json", "jsonc", "env", "dotenv", "properties", "nginx", "apache",
    "cron", "crontab", "dockerfile", "docker-compose", "systemd", "hcl", "tf", "xml"))
_CONFIG_FILE = re.compile(r"\.(?:ya?ml|toml|ini|cfg|conf|json|env|properties|service|timer|socket|xml|tf)\b|"
                          r"\b(?:Dockerfile|docker-compose|crontab|nginx|sites-available|\.github/workflows)\b", re.I)
_FILE_COMMENT = re.compile(r"^\s*(?:#|//|--|;|/\*)\s*([\w./\-]+\.[\w]+|[\w./\-]*/[\w.\-]+)(?:\s|$|（|\()")


@dataclass
class Piece:
    """One part of an assistant message: a code block or a run of prose."""

    kind: str  # "code" or "prose"
    text: str
    lang: str = ""
    intro: str = ""  # the prose sentence that introduces a code block
    after: str = ""  # the prose sentence right after it


def _paragraphs(lines: list[str]) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        if line.strip():
            current.append(line.rstrip())
        elif current:
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


#: A message longer than this is split into pieces (below it, one node holds it all). The
#: index cuts texts at this length before embedding them (``Projector.max_embed_chars``);
#: splitting the dev chats' shorter messages (up to 2,300 characters) cost recall in every
#: fold of the leave-one-chat-out check, so only messages past this bound are split.
SPLIT_CHARS = 4000
#: At most this many pieces per message: a very long answer packs its prose coarser.
MAX_PIECES = 12


def split_message(raw: str) -> list[Piece]:
    """Code blocks (fenced) and prose runs of a message, in order; an unclosed fence runs
    to the end. Prose paragraphs are packed up to :data:`CHUNK_CHARS` (more per piece
    when the message would otherwise give more than :data:`MAX_PIECES`)."""
    chunk = CHUNK_CHARS
    while True:
        pieces = _split(raw, chunk)
        if len(pieces) <= MAX_PIECES or chunk > len(raw):
            return pieces
        chunk *= 2


def _split(raw: str, chunk_chars: int) -> list[Piece]:
    pieces: list[Piece] = []
    prose: list[str] = []
    code: list[str] | None = None
    fence = ""
    lang = ""

    def flush_prose() -> None:
        packed = ""
        for para in _paragraphs(prose):
            if packed and len(packed) + len(para) > chunk_chars:
                pieces.append(Piece("prose", packed))
                packed = ""
            packed = f"{packed}\n\n{para}" if packed else para
        if packed:
            pieces.append(Piece("prose", packed))
        prose.clear()

    for line in raw.split("\n"):
        if code is not None:
            if line.strip().startswith(fence):
                pieces.append(Piece("code", "\n".join(code), lang))
                code = None
            else:
                code.append(line)
            continue
        opened = _FENCE.match(line)
        if opened:
            flush_prose()
            fence, lang, code = opened.group(1)[0] * 3, opened.group(2).lower(), []
            continue
        prose.append(line)
    if code is not None:
        pieces.append(Piece("code", "\n".join(code), lang))
    flush_prose()
    for i, piece in enumerate(pieces):
        if piece.kind != "code":
            continue
        if i > 0 and pieces[i - 1].kind == "prose":
            piece.intro = _last_sentence(pieces[i - 1].text)
        if i + 1 < len(pieces) and pieces[i + 1].kind == "prose":
            piece.after = _first_sentence(pieces[i + 1].text)
    return [p for p in pieces if p.text.strip()]


def _sentences(text: str) -> list[str]:
    return [s.strip(" -*#>\t") for s in split_sentences(text.replace("\n", " \n")) if s.strip(" -*#>\t")]


def _last_sentence(text: str) -> str:
    lines = [ln for ln in text.split("\n") if ln.strip()]
    sentences = _sentences(lines[-1]) if lines else []
    return sentences[-1] if sentences else ""


def _first_sentence(text: str) -> str:
    sentences = _sentences(text)
    return sentences[0] if sentences else ""


def _descriptive(sentence: str) -> bool:
    """A sentence that says something (not "Here it is:")."""
    if has_cjk(sentence):
        return sum(1 for ch in sentence if "\u3400" <= ch <= "\u9fff") >= 6
    return len(content_words(sentence)) >= 3


# ---------------------------------------------------------------------- typing

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fix", re.compile(r"\b(?:the (?:root )?cause|caused by|the fix|to fix|fixed by|the problem is|the issue is|"
                       r"that usually means|this happens because|the reason)\b|原因|解决办法|解决方法|修复|导致|是因为", re.I)),
    ("decision", re.compile(r"\b(?:we decide|decided|let'?s (?:use|go with|switch|keep|add)|i (?:recommend|suggest|would use|'d use)|"
                            r"(?:it is|it'?s) (?:better|simplest)|instead of|rather than|replacing|switch(?:ing)? (?:to|from)|"
                            r"go with|the choice|we (?:will|'ll) use)\b|决定|建议|推荐|改为|改成|换成|统一用|采用|选用|不用.+?用", re.I)),
    ("plan", re.compile(r"\b(?:plan|milestones?|steps?|roadmap|scope|first version|v1|design|layout|architecture)\b|"
                        r"^\s*1[.)]\s|思路|方案|设计|步骤|里程碑|规划|分为|分四块|整体", re.I | re.M)),
)


def _prose_kind(text: str) -> str:
    for kind, pattern in _KINDS:
        if pattern.search(text):
            return kind
    return "fact"


def _code_kind(piece: Piece) -> tuple[str, str]:
    """(``code`` or ``config``, the file name the block's first comment gives)."""
    first = next((ln for ln in piece.text.split("\n") if ln.strip()), "")
    named = _FILE_COMMENT.match(first)
    filename = named.group(1) if named else ""
    is_config = piece.lang in _CONFIG_LANGS or bool(_CONFIG_FILE.search(filename or first))
    return ("config" if is_config else "code"), filename


_IDENT = re.compile(r"\b(?:def|class|func|function|fn|type|struct|interface)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)|"
                    r"^([A-Za-z_][\w.-]*)\s*[:=]", re.M)


def _code_names(code: str, limit: int = 12) -> list[str]:
    """Functions, classes and top-level keys a block defines (they are what questions name)."""
    names: list[str] = []
    for match in _IDENT.finditer(code):
        name = match.group(1) or match.group(2)
        if name and name not in names and len(name) > 2:
            names.append(name)
        if len(names) >= limit:
            break
    return names


def _code_summary(piece: Piece, message_gist: str) -> str:
    for sentence in (piece.intro, piece.after):
        if sentence and _descriptive(sentence):
            return sentence.rstrip(":：")
    return message_gist


def _gist(pieces: list[Piece]) -> str:
    """The message's first statements of prose (a summary never quotes code)."""
    out: list[str] = []
    for piece in pieces:
        if piece.kind != "prose":
            continue
        for sentence in _sentences(piece.text):
            if sentence.rstrip().endswith(("?", "？")) or not _descriptive(sentence):
                continue
            out.append(sentence.rstrip(":："))
            if sum(len(s) for s in out) >= 120:
                return " ".join(out)
    return " ".join(out)


# ---------------------------------------------------------------------- candidates


def _candidate(turn: Turn, key: str, kind: str, abstract: str, overview: list[str], content: str,
               refs: list[str], confidence: float, **extra: Any) -> dict[str, Any]:
    return {
        "category": "events",
        "owner_scope": "user",
        "routing_key": key,
        "abstract": truncate(abstract, _ABSTRACT),
        "overview": "\n".join(overview),
        "content": content,
        "confidence": round(confidence, 3),
        "source_refs": refs,
        "metadata": {"speaker": turn.speaker, "kind": kind, "event_id": key, "event_time": turn.date,
                     "session_time": turn.when_text, "origin": "assistant", **extra},  # extra may override origin
    }


def _accepted_decision(turn: Turn, reply: Turn | None) -> list[dict[str, Any]]:
    """The user's decision memory when a short reply accepts ``turn``'s proposal: it names the
    chosen part and its tools, and cites the reply first (its time is when the value holds
    from) and the proposal (``metadata.decided``: what the timeline reads the claims from)."""
    choice = accepted_choice(turn, reply)
    if choice is None or reply is None:
        return []
    cjk = has_cjk(reply.text)
    topic = "; ".join(f"{cls}: {value}" if value else cls for cls, value in choice.values)
    when = f" ({reply.date})" if reply.date else ""
    if cjk:
        head = f"{reply.speaker_cn}{when}决定采用助手的提议" + (f"（{topic}）" if topic else "")
    else:
        head = f"{reply.speaker}{when} decided" + (f" ({topic})" if topic else "") + ", accepting the assistant's proposal"
    picked = f" option {choice.option}" if choice.option else ""
    overview = [f"- decision{picked}: {truncate(choice.text, 400)}", f"- {reply.speaker} answered: {reply.text}"]
    if topic:
        overview.insert(0, f"- decided: {topic}")
    return [_candidate(
        reply, f"{reply.id}-accepts-{turn.id}", "decision", f"{head}: {truncate(choice.text, 160)}", overview,
        f"{reply.cite()}\n[{turn.id}] proposal: {truncate(choice.text, 800)}", [reply.id, turn.id], 0.75,
        verdict="accepted", origin="user", accepts=turn.id, decided=choice.text,
        decided_values=[value for _, value in choice.values if value], option=choice.option,
        summary=truncate(f"{'决定' if cjk else 'decided'}{' (' + topic + ')' if topic else ''}: {choice.text}", 160))]


def assistant_memories(turns: list[Turn]) -> list[dict[str, Any]]:
    """Typed event candidates for every unnamed assistant turn the user did not reject."""
    out: list[dict[str, Any]] = []
    if not SWITCHES["assistant_memories"]:
        return out
    for position, turn in enumerate(turns):
        if turn.role != "assistant" or turn.extra.get("named") or is_acknowledgement(turn.text):
            continue  # a bare "好的。" / "OK, will do." states nothing
        reply = next((t for t in turns[position + 1:] if t.role == "user"), None)
        asked = next((t for t in reversed(turns[:position]) if t.role == "user"), None)
        raw = str(turn.extra.get("raw") or turn.text)
        verdict = reply_verdict(reply, raw)
        pieces = split_message(raw)
        if not pieces:
            continue
        gist = _gist(pieces) or truncate(turn.text, 160)
        date = f" ({turn.date})" if turn.date else ""
        if verdict == "rejected" and reply is not None and SWITCHES["refusal_memory"]:
            # not the assistant's memory: the user's decision against it, which names what was refused
            when = f" ({reply.date})" if reply.date else ""
            out.append(_candidate(
                reply, f"{reply.id}-rejects-{turn.id}", "rejected",
                f"{reply.speaker}{when} rejected the assistant's suggestion ({truncate(gist, 90)}): {reply.text}",
                [f"- suggested by the assistant: {truncate(gist, 200)}", f"- {reply.speaker} answered: {reply.text}"],
                f"{reply.cite()}\n{turn.cite()}", [reply.id, turn.id], 0.7, verdict=verdict, origin="user"))
        if verdict == "rejected":
            continue
        if SWITCHES["accepted_decision"]:
            out.extend(_accepted_decision(turn, reply))
        context = [f"- asked: \"{truncate(asked.text, 200)}\""] if asked else []
        if reply is not None:
            context.append(f"- user {'accepted' if verdict == 'accepted' else 'went on'}: \"{truncate(reply.text, 160)}\"")
        confidence = 0.75 if verdict == "accepted" else 0.6
        kinds = [(_code_kind(p)[0] if p.kind == "code" else _prose_kind(p.text)) for p in pieces]
        whole_kind = next((k for k in ("decision", "fix", "plan", "code", "config") if k in kinds), kinds[0])
        accepted_by = reply.id if verdict == "accepted" and reply is not None and SWITCHES["cite_acceptance"] else None
        refs = [turn.id] + ([accepted_by] if accepted_by else [])
        outline = [f"- {k}: {truncate(_code_summary(p, gist) if p.kind == 'code' else _gist([p]) or p.text, 160)}"
                   + (f" (defines: {', '.join(_code_names(p.text))})" if p.kind == "code" and _code_names(p.text) else "")
                   for p, k in zip(pieces, kinds, strict=True)]
        # L2 of the summary: the prose, each code block named by its summary (the code itself
        # is the L2 of its own node: one copy, so code words weigh on one node only)
        split = SWITCHES["split_pieces"] and len(pieces) > 1 and len(raw) > SPLIT_CHARS
        if split and SWITCHES["lean_summary"]:  # the pieces hold the text: no second copy of it
            body = "\n".join(outline)
        else:
            body = "\n\n".join(p.text if p.kind == "prose" or not split else f"[{k}: {_code_summary(p, gist)}]"
                                for p, k in zip(pieces, kinds, strict=True))
        out.append(_candidate(
            turn, f"{turn.id}-a", whole_kind, f"Assistant{date} {whole_kind}: {gist}",
            [*outline, *context], f"[{turn.id}] {turn.speaker} ({turn.when_text or turn.date}):\n{body}", refs,
            confidence, verdict=verdict, pieces=len(pieces)))
        if not split:
            continue  # the summary node says it all
        if not SWITCHES["piece_context"]:
            context = []
        for n, (piece, kind) in enumerate(zip(pieces, kinds, strict=True), 1):
            if piece.kind == "code":
                summary = _code_summary(piece, gist)
                _, filename = _code_kind(piece)
                names = _code_names(piece.text)
                head = f"{summary} ({filename})" if filename and filename not in summary else summary
                overview = [f"- {kind}{' ' + filename if filename else ''}{' (' + piece.lang + ')' if piece.lang else ''}: {summary}"]
                if names:
                    overview.append(f"- defines: {', '.join(names)}")
                if piece.after and piece.after != summary:
                    overview.append(f"- note: {truncate(piece.after, 200)}")
                content = f"{piece.intro}\n```{piece.lang}\n{piece.text}\n```".strip()
                out.append(_candidate(turn, f"{turn.id}-a{n}", kind, f"Assistant{date} {kind}: {head}",
                                      [*overview, *context], content, [turn.id], confidence - 0.05,
                                      filename=filename, code_language=piece.lang, names=names))
            else:
                text = " ".join(piece.text.split())
                summary = _gist([piece]) or truncate(text, 160)
                out.append(_candidate(turn, f"{turn.id}-a{n}", kind, f"Assistant{date} {kind}: {summary}",
                                      [f"- {truncate(text, 600)}", *context], piece.text, [turn.id],
                                      confidence - 0.05))
    return out
