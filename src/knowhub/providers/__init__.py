"""Providers: LLMs, embedders, vector indexes and graph stores behind narrow protocols."""
