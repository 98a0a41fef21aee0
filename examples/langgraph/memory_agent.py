"""A LangGraph agent whose long-term memory is knowhub (runs offline, no model needed).

Each run is one turn of a conversation. The graph remembers facts the user states
("remember ...") in the store that ``graph.compile(store=...)`` injects, and recalls the
relevant ones on every other turn; the "model" is a scripted reply built from what was
recalled, so the example needs no API key. Memories outlive the process: run it twice.

    pip install 'knowhub[langgraph]'
    python examples/langgraph/memory_agent.py --user alice "remember I prefer green tea"
    python examples/langgraph/memory_agent.py --user alice "which tea do I prefer?"

By default the memories live in a local data dir (``--data-dir``, else knowhub's usual
one), owned by the principal ``user:<--user>``; ``--server URL --api-key KEY`` keeps them
on a running ``knowhub serve`` instead, owned by the key's principal.
"""

from __future__ import annotations

import argparse
import hashlib
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from knowhub.client import KnowhubClient, LocalKnowhub
from knowhub.integrations.langgraph import KnowhubStore


class Turn(TypedDict, total=False):
    user: str
    message: str
    memories: list[str]
    reply: str


def remember(state: Turn, *, store: BaseStore) -> Turn:
    """Store a stated fact under the user's namespace (the key is the fact's hash, so
    saying the same thing twice keeps one memory)."""
    message = state["message"].strip()
    if message.lower().startswith("remember "):
        fact = message[len("remember ") :].strip()
        key = hashlib.sha256(fact.encode("utf-8")).hexdigest()[:16]
        store.put(("memories", state["user"]), key, {"text": fact, "kind": "fact"})
    return {}


def recall(state: Turn, *, store: BaseStore) -> Turn:
    """The user's memories, most relevant to this message first (knowhub's ranking)."""
    found = store.search(("memories", state["user"]), query=state["message"], limit=3)
    return {"memories": [item.value["text"] for item in found if item.score is not None]}


def respond(state: Turn) -> Turn:
    """The scripted model: acknowledge a fact, or answer from the recalled memories."""
    if state["message"].lower().startswith("remember "):
        return {"reply": "Noted."}
    if state["memories"]:
        return {"reply": "From memory: " + "; ".join(state["memories"])}
    return {"reply": "I don't remember anything about that yet."}


def build(store: BaseStore) -> Any:
    graph = StateGraph(Turn)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_node("respond", respond)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", "respond")
    graph.add_edge("respond", END)
    return graph.compile(store=store)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("message")
    parser.add_argument("--user", default="alice", help="end user (the memory namespace)")
    parser.add_argument("--data-dir", help="local knowhub data dir")
    parser.add_argument("--server", help="a knowhub serve URL instead of a local data dir")
    parser.add_argument("--api-key")
    args = parser.parse_args(argv)
    # locally each user is a knowhub principal of its own; on a server, the key's principal
    # (a key with act_for may pass user_id=args.user to act for each end user)
    knowhub: Any = (
        KnowhubClient(args.server, args.api_key)
        if args.server
        else LocalKnowhub(args.data_dir, principal=args.user)
    )
    with knowhub:
        app = build(KnowhubStore(knowhub))
        out = app.invoke({"user": args.user, "message": args.message})
        print(f"{args.user}> {args.message}")
        print(f"agent> {out['reply']}")


if __name__ == "__main__":
    main()
