"""Bundled sample data: the bilingual tree outline of ``knowhub tree demo`` and the small
knowledge base that ``knowhub serve`` loads into an empty data directory."""
