"""What of each kind of context node is embedded (issue 19 §6).

The E5 default costs ~1.1-1.9 ms of CPU per token and its cost follows the tokens it reads,
so indexing speed is decided by *what* is embedded. A node's vector is one of three signals
of the first-round search (BM25 over abstract + overview + content carries the others),
and not every kind of node needs one. Measured (recall@10 messages, leave one out):

* a session archive (``context_type = session``) is searched only when a query asks for
  sessions (then by BM25); its vector, of the first 64 tokens of a whole session, moved no
  recall;
* an entity node ("PostgreSQL (named entity, mentioned by …): <the sentence>") quotes the
  message its event already embeds; without its vector recall did not move either;
* preferences, instructions and cases did lose recall without theirs (the own technical
  chats: −0.4 points), and so did events cut shorter or without their "Speaker (date):"
  lead on some conversations, so they keep the whole L0 text at the service's budget.

:class:`EmbedPolicy` maps a record to the text its vector is made of and a token budget,
or to no vector at all (the record stays in the lexical index and is found by BM25).
The choices of :data:`DEFAULT_POLICY` were measured leave one conversation out
(``benchmarks/context_embed_kinds.py``; docs/benchmarks.md, "Ingest: what is embedded,
per kind of node").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_POLICY", "EmbedPolicy", "node_kind", "parse_policy"]

#: "Speaker (date[, …]) [label]: " at the start of an L0 text (events, cases, habits,
#: entities), or a Chinese event's "小王（2026-01-05）：" / "2026-01-05：": the speaker and the date
#: are filters and BM25 terms already.
_LEAD = re.compile(r"^[^\n():]{1,80} \([^()\n]{0,80}\)(?: [^\n():]{1,30})?: |^[^\n()（）:：]{1,80}（[^（）\n]{0,80}）："
                   r"|^\d{4}-\d{2}-\d{2}：")
#: " — " that joins a derived memory's statement to the quote of its source message.
_QUOTE = " — "


def node_kind(record: Any) -> str:
    """``session`` for session archives, else the memory category (``events``,
    ``entities``, …), else the context type (``skill``, ``resource``)."""
    ctype = str(getattr(record, "context_type", "") or "")
    if ctype != "memory":
        return ctype or "memory"
    return str(getattr(record, "category", "") or "memory")


def _body(text: str) -> str:
    """``text`` without its "Speaker (date): " lead (unchanged when it has none)."""
    match = _LEAD.match(text)
    return text[match.end():] if match and match.end() < len(text) else text


def _head(text: str) -> str:
    """The statement of a derived memory without the quote of its source message."""
    cut = text.find(_QUOTE)
    return text[:cut] if cut > 0 else _body(text)


def _name(text: str) -> str:
    """What an entity node is about: its name, before " (kind, mentioned by …)"."""
    cut = text.find(" (")
    return text[:cut] if cut > 0 else _head(text)


_TRANSFORMS = {"text": lambda t: t, "body": _body, "head": _head, "name": _name}


@dataclass(frozen=True)
class EmbedPolicy:
    """Per kind of node: a token budget (0: no vector; None: the service's budget) and a
    transform of the text (``text``: whole, ``body``: without the speaker/date lead,
    ``head``: the statement without its quoted source, ``name``: an entity's name). Kinds not named: whole text,
    service budget."""

    kinds: Mapping[str, tuple[str, int | None]] = field(default_factory=dict)

    def __call__(self, record: Any) -> tuple[str, int | None] | None:
        transform, tokens = self.kinds.get(node_kind(record), ("text", None))
        if tokens == 0:
            return None
        return _TRANSFORMS[transform](str(record.text)), tokens

    def describe(self) -> str:
        return ",".join(f"{k}={t}:{'default' if n is None else n}" for k, (t, n) in sorted(self.kinds.items())) or "uniform"


def parse_policy(spec: str) -> EmbedPolicy:
    """``"events=32:body,entities=0,session=0"`` → an :class:`EmbedPolicy` (for benchmarks
    and the ``embed_policy`` setting of a service): ``kind=tokens[:transform]`` with tokens
    ``0`` (no vector), ``d`` (the service's budget) or a number."""
    kinds: dict[str, tuple[str, int | None]] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        kind, _, value = part.partition("=")
        tokens, _, transform = value.partition(":")
        transform = transform or "text"
        if transform not in _TRANSFORMS or not kind or not (tokens == "d" or tokens.isdigit()):
            raise ValueError(f"bad embed policy part {part!r} (kind=tokens[:text|body|head|name])")
        kinds[kind.strip()] = (transform, None if tokens == "d" else int(tokens))
    return EmbedPolicy(kinds)


#: Session archives and entities get no vector: on LoCoMo dev and both sets of own technical
#: chats recall@10 did not move without them (entities +0.3 points on the fresh chats),
#: while preferences, cases and events lost recall when cut (docs/benchmarks.md, "Ingest:
#: what is embedded, per kind of node"). Everything else: whole L0 text, service budget.
DEFAULT_POLICY = EmbedPolicy({"session": ("text", 0), "entities": ("text", 0)})
