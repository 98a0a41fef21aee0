"""Providers: LLMs, embedders, vector indexes, rerankers and graph stores behind narrow protocols."""
