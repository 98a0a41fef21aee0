"""The one narrow LLM protocol every engine codes against, and its token accounting.

Seed 001 §5 names the method ``Chat(messages, json_schema) -> dict``; PEP 8 code calls
``chat``. Both names exist on :class:`LLMClient` and each default delegates to the other, so
a subclass written against either name works through both. Seed 004 adds
``complete_json(prompt, schema, ctx=None)``, a one-message convenience over ``chat``.
"""

from __future__ import annotations

import json
import math
import threading
from abc import ABC
from dataclasses import dataclass, field
from typing import Any

from knowhub.errors import LLMError
from knowhub.providers.llm.conform import conform

__all__ = ["LLMClient", "LLMUsage", "estimate_tokens", "is_cjk", "messages_tokens"]

# Unicode blocks whose characters are roughly one token each in common BPE vocabularies.
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x31BF),  # Bopomofo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF00, 0xFFEF),  # half/full-width forms
    (0x20000, 0x2FA1F),  # CJK extensions B-F and supplements
)


def is_cjk(char: str) -> bool:
    """True for one character of a CJK script (Han, kana, Hangul, full-width forms)."""
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def estimate_tokens(text: str) -> int:
    """Approximate token count: each CJK character is one token, other text ~4 chars a token.

    Used when a provider reports no usage (LocalAgent, stubs, some local servers) so that
    benchmarks compare prompt sizes on the same scale for every client.
    """
    if not text:
        return 0
    cjk = 0
    other = 0
    for char in text:
        if char < "\u2e80":  # fast path: everything below the first CJK block
            other += 1
        elif is_cjk(char):
            cjk += 1
        else:
            other += 1
    return cjk + math.ceil(other / 4)


def messages_tokens(messages: list[dict[str, Any]]) -> int:
    """Estimated prompt tokens of a chat message list (contents only, roles are noise)."""
    total = 0
    for message in messages:
        content = message.get("content", "")
        if isinstance(content, str):
            total += estimate_tokens(content)
        elif isinstance(content, list):  # OpenAI content parts
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    total += estimate_tokens(part["text"])
    return total


@dataclass
class LLMUsage:
    """Thread-safe running totals of LLM calls and tokens for one client."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(
        self,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        *,
        calls: int = 1,
        failures: int = 0,
    ) -> None:
        """Record one call (or ``calls`` calls) with its token counts."""
        with self._lock:
            self.calls += calls
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.failures += failures

    def record_failure(self, prompt_tokens: int = 0) -> None:
        """Record a call that raised; its prompt still cost tokens."""
        self.add(prompt_tokens, 0, calls=1, failures=1)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def reset(self) -> None:
        """Zero every counter (benchmarks reset between phases)."""
        with self._lock:
            self.calls = self.prompt_tokens = self.completion_tokens = self.failures = 0

    def as_dict(self) -> dict[str, int]:
        """A consistent snapshot for reports and JSON."""
        with self._lock:
            return {
                "calls": self.calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "failures": self.failures,
            }


class LLMClient(ABC):  # noqa: B024 - abstractness is checked in __init_subclass__
    """An LLM that answers a chat with one JSON object.

    Subclasses override ``chat`` (PEP 8) or ``Chat`` (seed 001 §5); the other name then
    works too. Defining neither is a ``TypeError`` at class creation, because each default
    would call the other forever. Implementations raise :class:`~knowhub.errors.LLMError`
    (or a subclass) on failure; callers fall back as seed 001 §6.2 step 5 says.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.chat is LLMClient.chat and cls.Chat is LLMClient.Chat:
            raise TypeError(f"{cls.__name__} must override chat() or Chat()")

    @property
    def usage(self) -> LLMUsage:
        """Token accounting of this client (created on first use, so subclasses that do
        not call ``super().__init__()`` still have one)."""
        existing = self.__dict__.get("_knowhub_usage")
        if existing is None:
            existing = self.__dict__.setdefault("_knowhub_usage", LLMUsage())
        return existing

    @usage.setter
    def usage(self, value: LLMUsage) -> None:
        self.__dict__["_knowhub_usage"] = value

    def chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        """Answer ``messages`` with a dict matching ``json_schema``.

        The default delegates to a subclass's ``Chat``, records estimated usage (a seed-001
        style client knows nothing about token accounting) and fits the answer to
        ``json_schema`` (:func:`~knowhub.providers.llm.conform.conform`).
        """
        prompt_tokens = messages_tokens(messages)
        try:
            result = self.Chat(messages, json_schema)
        except Exception:
            self.usage.record_failure(prompt_tokens)
            raise
        if not isinstance(result, dict):
            self.usage.record_failure(prompt_tokens)
            raise LLMError(f"{type(self).__name__}.Chat returned {type(result).__name__}, not a dict")
        completion = estimate_tokens(json.dumps(result, ensure_ascii=False))
        self.usage.add(prompt_tokens, completion)
        # A user's client may hand back anything: fit it to the schema like a server answer.
        return conform(result, json_schema).value

    def Chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        """Seed 001 name of :meth:`chat`."""
        return self.chat(messages, json_schema)

    def complete_json(
        self, prompt: str, schema: dict[str, Any], ctx: Any | None = None
    ) -> dict[str, Any]:
        """Seed 004 protocol: one user prompt in, one JSON object out.

        ``ctx`` (a RequestContext) is accepted for interface parity with seed 004; the
        prompt itself must carry everything the model needs.
        """
        del ctx
        return self.chat([{"role": "user", "content": prompt}], schema)
