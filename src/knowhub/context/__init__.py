"""ContextEngine (seed 004): a filesystem-primary memory database for agents.

Packages: :mod:`~knowhub.context.core` (objects, URIs, outbox interface),
:mod:`~knowhub.context.fs` (ContextFS, RelationStore), :mod:`~knowhub.context.extraction`
(candidate extractors), :mod:`~knowhub.context.commit` (session commit pipeline), and the
read side (retrieval, service). See docs/context.md.
"""
