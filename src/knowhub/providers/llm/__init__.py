"""LLM providers: the narrow protocol, a scripted stub, an OpenAI-compatible client and the
offline LocalAgent, plus the task-message wire format they all share.

Engines depend only on :class:`LLMClient` and build prompts with
:func:`build_task_messages`; which client answers is a deployment choice
(:func:`build_llm` from :class:`knowhub.config.LLMSettings`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from knowhub.errors import ConfigError
from knowhub.providers.llm.base import LLMClient, LLMUsage, estimate_tokens
from knowhub.providers.llm.local import LocalAgent
from knowhub.providers.llm.messages import build_task_messages, extract_json, parse_task_message
from knowhub.providers.llm.stub import ScriptedLLM, StubLLMClient

if TYPE_CHECKING:
    from knowhub.providers.llm.openai_client import OpenAICompatibleLLM

# The openai SDK costs ~0.5 s of CPU to import; only a deployment that names the
# ``openai`` provider pays for it, on first use.
_LAZY = {"OpenAICompatibleLLM": "knowhub.providers.llm.openai_client"}

__all__ = [
    "LLMClient",
    "LLMUsage",
    "LocalAgent",
    "OpenAICompatibleLLM",
    "ScriptedLLM",
    "StubLLMClient",
    "build_llm",
    "build_task_messages",
    "estimate_tokens",
    "extract_json",
    "parse_task_message",
]


def build_llm(settings: Any, *, embedder: Any | None = None) -> LLMClient:
    """The LLM client that ``settings`` (an :class:`~knowhub.config.LLMSettings`) names.

    ``local`` → :class:`LocalAgent` (offline, optionally with an embedder for vector
    similarity); ``openai`` → :class:`OpenAICompatibleLLM`.
    """
    provider = getattr(settings, "provider", "local")
    if provider == "local":
        return LocalAgent(embedder=embedder)
    if provider == "openai":
        from knowhub.providers.llm.openai_client import OpenAICompatibleLLM

        return OpenAICompatibleLLM.from_settings(settings)
    raise ConfigError(f"unknown LLM provider {provider!r}", provider=str(provider))


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'knowhub.providers.llm' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
