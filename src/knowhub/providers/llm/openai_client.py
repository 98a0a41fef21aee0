"""OpenAI-compatible chat client: OpenAI, DeepSeek, Kimi, OpenRouter, vLLM, Ollama, llama.cpp.

Uses the official ``openai`` SDK with its own retries switched off, because the retry
policy here has to know about knowhub's errors, the structured-output fallback and the
concurrency cap. Structured output is requested as ``json_schema``; a server that rejects
it (400, 422, or a 500 whose message names ``response_format``, as llama-cpp-python's server
answers) gets ``json_object`` carrying the schema (``{"type": "json_object", "schema": ...}``,
which llama-cpp-python turns into a grammar), then plain ``json_object``, and failing that no
``response_format`` at all, relying on the schema in the system prompt. The first mode a
server accepts is remembered for the client's lifetime. The answer is parsed tolerantly with :func:`extract_json`
and then fitted to the schema by :func:`~knowhub.providers.llm.conform.conform` (a field
of the wrong type is repaired or dropped, never the whole answer).
The API key is never logged and is scrubbed from every error message.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import threading
import time
from typing import Any

import openai

from knowhub.errors import LLMError, LLMResponseError, LLMTimeoutError
from knowhub.providers.llm.base import LLMClient, estimate_tokens, messages_tokens
from knowhub.providers.llm.conform import conform
from knowhub.providers.llm.messages import extract_json

__all__ = ["OpenAICompatibleLLM"]

logger = logging.getLogger(__name__)

#: Structured-output modes, tried in this order when a server rejects one.
_MODES: tuple[str, ...] = ("json_schema", "json_object+schema", "json_object", "none")
_PLACEHOLDER_KEY = "not-set"
_FORMAT_HINTS = ("response_format", "json_schema", "json_object", "structured output")
#: Status codes with which servers refuse a ``response_format`` they do not support; 500 is
#: llama-cpp-python's (its request-validation errors come back as internal server errors).
_FORMAT_REJECT_STATUS = frozenset({400, 422, 500})


class OpenAICompatibleLLM(LLMClient):
    """Chat client for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        base_url: endpoint root such as ``http://127.0.0.1:11434/v1``; None means OpenAI.
        model: model name sent with each request.
        api_key: secret key; local servers accept any, so a placeholder is used when None.
        timeout_s: per-attempt timeout.
        max_retries: extra attempts after timeouts, connection errors, 429 and 5xx.
        max_concurrency: requests in flight at once from this client (all threads).
        temperature: sampling temperature; None leaves the server default.
        max_tokens: cap on the answer's tokens (0: none sent). A small model under a JSON
            grammar can fill a list or a string forever; the cap turns that into a cut-off
            answer (an ``LLMResponseError``, so the engine's fallback) instead of a hang.
        backoff_base_s / backoff_max_s: exponential backoff with full jitter between attempts.
    """

    def __init__(
        self,
        base_url: str | None = None,
        model: str = "gpt-4o-mini",
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        max_concurrency: int = 4,
        temperature: float | None = 0.0,
        max_tokens: int = 2048,
        *,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 8.0,
    ) -> None:
        if timeout_s <= 0 or max_retries < 0 or max_concurrency < 1 or max_tokens < 0:
            raise ValueError("timeout_s must be > 0, max_retries >= 0, max_concurrency >= 1, max_tokens >= 0")
        self.base_url = base_url
        self.model = model
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.max_concurrency = int(max_concurrency)
        self.temperature = temperature
        self.max_tokens = int(max_tokens)
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self._api_key = api_key or _PLACEHOLDER_KEY
        self._semaphore = threading.BoundedSemaphore(self.max_concurrency)
        self._mode_lock = threading.Lock()
        self._mode_index = 0
        #: Answers that needed a field dropped or retyped to fit their schema.
        self.repaired_answers = 0
        self._client = openai.OpenAI(
            base_url=base_url, api_key=self._api_key, timeout=self.timeout_s, max_retries=0
        )

    @classmethod
    def from_settings(cls, settings: Any) -> OpenAICompatibleLLM:
        """Build from :class:`knowhub.config.LLMSettings`.

        The key and endpoint fall back to ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, the
        variables every OpenAI-compatible tool already honours.
        """
        secret = getattr(settings, "api_key", None)
        api_key = secret.get_secret_value() if secret is not None else None
        return cls(
            base_url=settings.base_url or os.environ.get("OPENAI_BASE_URL") or None,
            model=settings.model,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or None,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            max_concurrency=settings.max_concurrency,
            max_tokens=settings.max_tokens,
        )

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatibleLLM(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def response_format_mode(self) -> str:
        """Structured-output mode used for the next call: json_schema, json_object or none."""
        with self._mode_lock:
            return _MODES[self._mode_index]

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def __enter__(self) -> OpenAICompatibleLLM:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the call -----------------------------------------------------------------------

    def chat(self, messages: list[dict[str, Any]], json_schema: dict[str, Any]) -> dict[str, Any]:
        prompt_estimate = messages_tokens(messages)
        response: Any = None
        try:
            response = self._create_with_retries(messages, json_schema)
            content = self._content_of(response)
            conformed = conform(extract_json(content), json_schema)
        except Exception:
            # an answer that came back unusable (cut off, not JSON) still cost its tokens
            prompt_tokens, completion_tokens = _reported_usage(response)
            self.usage.add(prompt_tokens if prompt_tokens is not None else prompt_estimate,
                           completion_tokens or 0, failures=1)
            raise
        prompt_tokens, completion_tokens = _reported_usage(response)
        self.usage.add(
            prompt_tokens if prompt_tokens is not None else prompt_estimate,
            completion_tokens if completion_tokens is not None else estimate_tokens(content),
        )
        if conformed.repaired:
            self.repaired_answers += 1
            logger.info("LLM answer repaired to fit its schema: %s", "; ".join(conformed.repairs[:5]))
        return conformed.value

    def _response_format(self, mode: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        if mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": "decision", "schema": schema, "strict": False},
            }
        if mode == "json_object+schema":
            return {"type": "json_object", "schema": schema}
        if mode == "json_object":
            return {"type": "json_object"}
        return None

    def _create_with_retries(self, messages: list[dict[str, Any]], schema: dict[str, Any]) -> Any:
        attempt = 0
        while True:
            with self._mode_lock:
                mode_index = self._mode_index
            request: dict[str, Any] = {"model": self.model, "messages": messages}
            response_format = self._response_format(_MODES[mode_index], schema)
            if response_format is not None:
                request["response_format"] = response_format
            if self.temperature is not None:
                request["temperature"] = self.temperature
            if self.max_tokens:
                request["max_tokens"] = self.max_tokens
            try:
                with self._semaphore:
                    return self._client.chat.completions.create(**request)
            except openai.APIStatusError as exc:
                # llama-cpp-python rejects an unknown response_format with a 500, others 400/422
                if mode_index + 1 < len(_MODES) and self._rejects_format(exc):
                    self._downgrade_mode(mode_index)
                    continue  # not a retry: the request itself changes
                if not isinstance(exc, openai.RateLimitError | openai.InternalServerError):
                    # 400, 401, 403, 404, 422 ...: retrying won't help
                    raise LLMError(self._describe(exc), status=exc.status_code) from exc
                failure: Exception = exc
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                failure = exc
            except openai.OpenAIError as exc:
                raise LLMError(self._describe(exc)) from exc
            if attempt >= self.max_retries:
                raise self._translate(failure) from failure
            delay = self._backoff(attempt, failure)
            logger.warning(
                "LLM call failed (%s), retry %d/%d in %.2fs",
                self._kind(failure), attempt + 1, self.max_retries, delay,
            )
            attempt += 1
            time.sleep(delay)

    def _downgrade_mode(self, seen_index: int) -> None:
        with self._mode_lock:
            if self._mode_index == seen_index:  # another thread may have downgraded already
                self._mode_index += 1
                logger.info(
                    "server rejected response_format %s; using %s from now on",
                    _MODES[seen_index], _MODES[self._mode_index],
                )

    @staticmethod
    def _rejects_format(exc: openai.APIStatusError) -> bool:
        """Whether ``exc`` is a server refusing the ``response_format`` itself."""
        if exc.status_code not in _FORMAT_REJECT_STATUS:
            return False
        text = f"{exc.message} {exc.body!r}".lower()
        return any(hint in text for hint in _FORMAT_HINTS)

    def _backoff(self, attempt: int, exc: Exception) -> float:
        """Full-jitter exponential backoff, honouring a server's Retry-After when given."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2**attempt))
        delay = random.uniform(ceiling / 2, ceiling) if ceiling > 0 else 0.0
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after:
            with contextlib.suppress(ValueError):  # an HTTP date instead of seconds
                delay = max(delay, min(float(retry_after), self.backoff_max_s))
        return delay

    @staticmethod
    def _kind(exc: Exception) -> str:
        if isinstance(exc, openai.APITimeoutError):
            return "timeout"
        if isinstance(exc, openai.APIStatusError):
            return f"HTTP {exc.status_code}"
        return type(exc).__name__

    def _translate(self, exc: Exception) -> LLMError:
        if isinstance(exc, openai.APITimeoutError):
            return LLMTimeoutError(
                f"LLM did not answer within {self.timeout_s:g}s ({self.max_retries + 1} attempts)",
                model=self.model,
            )
        status = exc.status_code if isinstance(exc, openai.APIStatusError) else None
        return LLMError(self._describe(exc), model=self.model, status=status)

    def _describe(self, exc: Exception) -> str:
        """A one-line error text with the API key scrubbed out."""
        kind = self._kind(exc)
        text = f"LLM request failed ({kind}) for model {self.model!r}: {exc}"
        return self._scrub(text)

    def _scrub(self, text: str) -> str:
        if self._api_key and self._api_key != _PLACEHOLDER_KEY:
            text = text.replace(self._api_key, "***")
            if len(self._api_key) > 8:  # servers echo masked keys such as "sk-...abcd"
                text = text.replace(self._api_key[-8:], "***")
        return text

    @staticmethod
    def _content_of(response: Any) -> str:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise LLMResponseError("LLM answer has no choices")
        message = choices[0].message
        content = getattr(message, "content", None)
        if not content:
            refusal = getattr(message, "refusal", None)
            raise LLMResponseError(f"LLM answer is empty{' (refused)' if refusal else ''}")
        text = str(content)
        if getattr(choices[0], "finish_reason", None) == "length" and not _is_whole_json(text):
            # a cut-off object may still hold a complete inner object that would be misread
            raise LLMResponseError("LLM answer was cut off at max_tokens (finish_reason 'length')")
        return text


def _reported_usage(response: Any) -> tuple[int | None, int | None]:
    """``(prompt_tokens, completion_tokens)`` as the server reported them (None: not given)."""
    usage = getattr(response, "usage", None)
    counts = (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
    prompt, completion = (value if isinstance(value, int) else None for value in counts)
    return prompt, completion


def _is_whole_json(text: str) -> bool:
    """Whether ``text`` is one complete JSON value (a grammar may pad it with blanks up to
    the token cap, which is still a whole answer)."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
