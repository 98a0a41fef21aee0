"""A small indexed store for fusion tests: 12 near-identical "release train" notes and two about
invoices, each a node citing one message, searched by a real ``L0Retriever`` (hashing embedder)."""

from __future__ import annotations

from pathlib import Path

from knowhub.context.core import ContextNode
from knowhub.context.fs import ContextFS
from knowhub.context.indexing import ContextRecordShape
from knowhub.context.retrieval import L0Retriever
from knowhub.context.retrieval.l0_retriever import RetrieverConfig
from knowhub.index import EmbeddedIndex, IndexProjector
from knowhub.providers.embedding import HashingEmbedder
from knowhub.scope import RequestContext

U = "ctx://acme/users/alice/memories"


def release_train_retriever(tmp_path: Path, config: RetrieverConfig,
                            speakers: tuple[str, str] | None = None) -> tuple[L0Retriever, RequestContext]:
    """The store and alice's context; ``speakers`` alternate over the nodes when given."""
    fs = ContextFS(tmp_path / "data", durable=False)
    alice = RequestContext("acme", "alice", agent_id="helper")
    emb = HashingEmbedder(dim=64)
    index = EmbeddedIndex(emb.dim)
    projector = IndexProjector(emb, index, shape=ContextRecordShape())
    texts = [f"deploy note {i}: the release train leaves at {i} pm" for i in range(12)]
    texts += ["invoice numbering restarts every fiscal year", "the release train was cancelled for invoices"]
    nodes = []
    for i, text in enumerate(texts):
        metadata = {"source_refs": [f"m{i}"], **({"speakers": [speakers[i % 2]]} if speakers else {})}
        node = ContextNode(uri=f"{U}/events/e{i:02d}", category="events", abstract=text, metadata=metadata)
        fs.write_node(alice, node)
        nodes.append(fs.read_node(alice, node.uri))
    projector.upsert_nodes(nodes)
    return L0Retriever(emb, index, config), alice
