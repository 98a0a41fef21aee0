"""Adapters for agent runtimes: one module per runtime, each behind its extra
(``pip install knowhub[openai-agents]`` ...), built on :mod:`knowhub.client` (or a
:class:`~knowhub.client.LocalKnowhub`). See docs/integrations.md."""
