"""One tool use is counted once (issue 10 a5): a ``role: tool`` message and a ``used_tools``
entry for the same use are one use, with the entry's outcome and description."""

from __future__ import annotations

from knowhub.context.commit import CommitCoordinator
from knowhub.context.fs import ContextFS
from knowhub.providers.llm import LocalAgent
from knowhub.scope import RequestContext

TOOL_URI = "ctx://acme/agents/helper/tools/web-search"  # the shared agent space
PRIVATE_URI = "ctx://acme/agents/private-alice/tools/web-search"  # the user's own copy


def _session(*tool_outputs: str) -> list[dict[str, str]]:
    messages = [{"id": "u1", "role": "user", "content": "Find the 2025 annual report."}]
    for n, output in enumerate(tool_outputs):
        messages.append({"id": f"t{n}", "role": "tool", "name": "web_search", "content": output})
    messages.append({"id": "a1", "role": "assistant", "content": "Here is the report."})
    return messages


def test_tool_message_and_used_tools_count_once(fs: ContextFS, ctx: RequestContext) -> None:
    coord = CommitCoordinator(fs, None, llm=LocalAgent())
    coord.commit(ctx, _session("3 results: annual-report-2025.pdf"),
                 used_tools=[{"name": "web_search", "success": True, "description": "web search API"}],
                 options={"session_id": "one"})
    for uri in (TOOL_URI, PRIVATE_URI):
        usage = fs.read_node(ctx, uri).metadata["usage"]
        assert usage["count"] == 1 and usage["success"] == 1, uri
    assert fs.read_node(ctx, PRIVATE_URI).metadata["description"] == "web search API"


def test_used_tools_naming_the_session_tool_adds_no_count(tmp_path, ctx: RequestContext) -> None:
    counts = []
    for n, used in enumerate(([], ["web_search"], [{"name": "web_search", "source_refs": ["t1"]}])):
        fs = ContextFS(tmp_path / f"ctx{n}")
        CommitCoordinator(fs, None, llm=LocalAgent()).commit(
            ctx, _session("no results", "2 results"), used_tools=used, options={"session_id": "two"})
        counts.append(fs.read_node(ctx, TOOL_URI).metadata["usage"]["count"])
    assert counts[1] == counts[2] == counts[0]


def test_an_entry_for_another_message_is_its_own_use(fs: ContextFS, ctx: RequestContext) -> None:
    coord = CommitCoordinator(fs, None, llm=LocalAgent())
    coord.commit(ctx, _session("1 result"),
                 used_tools=[{"name": "web_search", "source_refs": ["elsewhere"], "success": False}],
                 options={"session_id": "three"})
    usage = fs.read_node(ctx, TOOL_URI).metadata["usage"]
    assert usage["count"] == 2 and usage["failure"] == 1
