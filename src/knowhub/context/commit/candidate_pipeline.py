"""CandidatePipeline: runs the extractors concurrently and cleans their output (seed 004 §6.2 step 2).

Extractors run in a :class:`~concurrent.futures.ThreadPoolExecutor` capped at
``concurrency`` (``settings.context.extractor_concurrency``). A failing extractor is logged
and skipped; the others' candidates still commit (the commit is then ``partial``).
Results are returned in extractor order, so the output is deterministic.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from knowhub.context.commit.policies import norm_text, union
from knowhub.context.core.enums import AGENT_CATEGORIES, MemoryCategory
from knowhub.context.core.objects import CandidateMemory, SessionArchive
from knowhub.context.core.uri import CtxLike, slugify
from knowhub.context.extraction.base import CandidateExtractor
from knowhub.context.extraction.extractors import default_extractors
from knowhub.errors import InvalidInputError
from knowhub.providers.llm import LLMClient

__all__ = ["CandidatePipeline"]

log = logging.getLogger(__name__)

_ABSTRACT_MAX = 300
_KEY_WORDS = 6
_STOP = frozenset(["a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "is", "are", "was", "were", "be", "i", "you", "my", "your", "me", "it", "this", "that"])


def _key_phrase(candidate: CandidateMemory) -> str:
    """Routing key for a candidate that has none: its title or first content words."""
    title = candidate.metadata.get("title") or candidate.metadata.get("topic")
    if isinstance(title, str) and title.strip():
        return title.strip()
    words = [w for w in re.findall(r"[\w'\-]+", candidate.abstract) if w.lower() not in _STOP]
    if words and any("\u3400" <= ch <= "\u9fff" for ch in candidate.abstract):
        return candidate.abstract.strip()[:12]
    return " ".join(words[:_KEY_WORDS]) or candidate.abstract[:40]


class CandidatePipeline:
    """Seed 004 §10.4: ``extract_candidates`` and ``normalize_candidates``.

    Args:
        extractors: the extractors to run (default: the four of seed 004 §6.3 with ``llm``).
        llm: model for the default extractors (None: offline rules).
        concurrency: maximum extractors running at once.
        min_confidence: candidates below it are dropped by :meth:`normalize_candidates`.
    """

    def __init__(
        self,
        extractors: Sequence[CandidateExtractor] | None = None,
        llm: LLMClient | None = None,
        *,
        concurrency: int = 4,
        min_confidence: float = 0.0,
    ) -> None:
        if concurrency < 1:
            raise InvalidInputError("extractor concurrency must be at least 1")
        self.extractors: list[CandidateExtractor] = list(extractors) if extractors is not None else list(default_extractors(llm))
        self.concurrency = concurrency
        self.min_confidence = min_confidence

    def extract_with_report(
        self, ctx: CtxLike, archive: SessionArchive | None, messages: Sequence[dict[str, Any]], only: Sequence[str] | None = None
    ) -> tuple[list[CandidateMemory], dict[str, str]]:
        """Candidates of every extractor (in extractor order) and ``{extractor: error}``."""
        extractors = [e for e in self.extractors if only is None or e.name in only]
        if not extractors:
            return [], {}
        results: list[list[CandidateMemory]] = [[] for _ in extractors]
        errors: dict[str, str] = {}
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(extractors)), thread_name_prefix="extractor") as pool:
            futures = [pool.submit(e.extract, messages, archive, ctx) for e in extractors]
            for i, (extractor, future) in enumerate(zip(extractors, futures, strict=True)):
                try:
                    found = future.result()
                    results[i] = [c for c in found if isinstance(c, CandidateMemory)]
                    for candidate in results[i]:
                        candidate.extractor = candidate.extractor or extractor.name
                except Exception as exc:  # one broken extractor must not lose the others' memories
                    log.warning("extractor %s failed: %s", extractor.name, exc, exc_info=True)
                    errors[extractor.name] = f"{type(exc).__name__}: {exc}"
        return [c for found in results for c in found], errors

    def extract_candidates(self, ctx: CtxLike, archive: SessionArchive | None, messages: Sequence[dict[str, Any]]) -> list[CandidateMemory]:
        """All extractors' candidates; failing extractors are logged and skipped."""
        return self.extract_with_report(ctx, archive, messages)[0]

    def normalize_candidates(self, ctx: CtxLike, candidates: Sequence[CandidateMemory]) -> list[CandidateMemory]:
        """Trim texts, clamp confidence, fix owner scope, fill routing keys, drop empties,
        and merge duplicates of one batch (same category, routing key and abstract)."""
        out: list[CandidateMemory] = []
        index: dict[tuple[str, str, str], int] = {}
        for raw in candidates:
            try:
                category = MemoryCategory.parse(raw.category)
            except InvalidInputError:
                log.warning("dropping candidate with unknown category %r", raw.category)
                continue
            abstract = " ".join((raw.abstract or "").split())
            if not abstract:
                continue
            if len(abstract) > _ABSTRACT_MAX:
                abstract = abstract[: _ABSTRACT_MAX - 1].rstrip() + "…"
            try:
                confidence = max(0.0, min(1.0, float(raw.confidence)))
            except (TypeError, ValueError):
                confidence = 0.5
            if confidence != confidence or confidence < self.min_confidence:
                continue
            candidate = CandidateMemory(
                category=category.value,
                owner_scope="agent" if category in AGENT_CATEGORIES else "user",
                routing_key=" ".join((raw.routing_key or "").split()),
                abstract=abstract,
                overview=(raw.overview or "").strip(),
                content=(raw.content or "").strip(),
                confidence=confidence,
                source_refs=union(raw.source_refs),
                metadata=dict(raw.metadata or {}),
                extractor=raw.extractor,
            )
            if not candidate.routing_key and category not in (MemoryCategory.EVENTS, MemoryCategory.CASES, MemoryCategory.PROFILE):
                candidate.routing_key = _key_phrase(candidate)
            key = (category.value, slugify(candidate.routing_key) if candidate.routing_key else "", norm_text(abstract))
            if key in index:
                kept = out[index[key]]
                kept.source_refs = union(kept.source_refs, candidate.source_refs)
                kept.confidence = max(kept.confidence, candidate.confidence)
                continue
            index[key] = len(out)
            out.append(candidate)
        return out + _fact_nodes(out)


def _fact_nodes(candidates: Sequence[CandidateMemory]) -> list[CandidateMemory]:
    """One profile *fact node* candidate per profile fact (``metadata.fact_node``): the
    profile node keeps every fact, and each fact also gets a small node of its own that
    cites only its message, so that "where does the user live?" finds the fact itself and
    a superseded value stays a block of its own (:mod:`.timeline`)."""
    out: list[CandidateMemory] = []
    seen: set[str] = set()
    for candidate in candidates:
        if candidate.category != MemoryCategory.PROFILE.value or candidate.metadata.get("fact_node"):
            continue
        for fact in candidate.metadata.get("facts") or []:
            if not isinstance(fact, dict) or not fact.get("value") or not fact.get("attribute"):
                continue
            key = slugify(f"{fact.get('subject') or ''} {fact['attribute']} {fact['value']}")
            if key in seen:
                continue
            seen.add(key)
            out.append(CandidateMemory(
                category=candidate.category, owner_scope=candidate.owner_scope,
                routing_key=f"{fact.get('subject') or ''} {fact['attribute']}".strip(),
                abstract=candidate.abstract, overview=candidate.overview, content=candidate.content,
                confidence=candidate.confidence, source_refs=union(fact.get("source_refs") or candidate.source_refs),
                metadata={**candidate.metadata, "facts": [fact], "fact_node": True}, extractor=candidate.extractor,
            ))
    return out
