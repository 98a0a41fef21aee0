"""a3: moving a node keeps the edges of the account pointing at it (.relations.json and graph)."""

from __future__ import annotations

import json
from pathlib import Path

from knowhub.context import ContextEngineService
from knowhub.context.core import ContextNode, RelationEdge, memory_uri
from knowhub.scope import RequestContext

ALICE = RequestContext("acme", "alice")


def _stored_targets(svc: ContextEngineService, uri: str) -> set[str]:
    path = Path(svc.fs.resolve_path(ALICE, uri)) / ".relations.json"
    return {e["to_uri"] for e in json.loads(path.read_text("utf-8"))["edges"]}


def test_move_rewrites_edges_that_pointed_at_the_old_uri(tmp_path: Path) -> None:
    with ContextEngineService(tmp_path, durable=False) as svc:
        a, b, c = (memory_uri(ALICE, "entities", k) for k in ("a", "b", "c"))
        child = b + "/detail"
        for uri in (a, b, c, child):
            svc.fs.write_node(ALICE, ContextNode(uri=uri, abstract=uri))
        svc.relations.upsert_edges(ALICE, a, [RelationEdge(a, b, "mentions"), RelationEdge(a, child, "mentions"),
                                              RelationEdge(a, c, "mentions")])
        svc.relations.upsert_edges(ALICE, b, [RelationEdge(b, a, "mentioned_by"), RelationEdge(b, child, "has_detail")])
        svc.relations.upsert_edges(ALICE, c, [RelationEdge(c, b, "related")])
        svc.flush_index()
        moved = memory_uri(ALICE, "entities", "b-moved")

        svc.move_node(ALICE, b, moved)
        svc.flush_index()

        # other nodes' edges to the moved node and to its subtree follow it
        assert _stored_targets(svc, a) == {moved, moved + "/detail", c}
        assert _stored_targets(svc, c) == {moved}
        # the moved node's own edges: its reverse link stays, its edge into its own subtree follows
        assert _stored_targets(svc, moved) == {a, moved + "/detail"}
        assert {e.to_uri for e in svc.relations.get_edges(ALICE, a)} == {moved, moved + "/detail", c}
        # the graph copy agrees: no edge is left on the old URI
        assert not svc.graph.neighbors(b) and not svc.graph.neighbors(child)
        assert {e.to_uri for e in svc.graph.edges_from(a)} == {moved, moved + "/detail", c}
        assert {e.to_uri for e in svc.graph.edges_from(c)} == {moved}
