"""A support agent with long-term memory: the OpenAI Agents SDK on knowhub, offline.

Day 1, the user introduces themself; the conversation is kept in a ``KnowhubSession`` and
committed into the user's memory after the answer. Day 2, in a new session, the agent looks
the user up with the ``search_memory`` tool before answering.

    pip install 'knowhub[openai-agents]'
    python examples/openai_agents/agent.py                      # in-process, temp data dir
    python examples/openai_agents/agent.py --data-dir ./kh      # keep the memory
    python examples/openai_agents/agent.py --server http://127.0.0.1:8765   # `knowhub serve`, no keys
    python examples/openai_agents/agent.py --server URL --api-key KEY [--user mei]

With ``--server`` the memory belongs to the key's own principal (``user:local`` on a server
without keys); ``--user`` names an end user instead, which needs a key whose ``act_for``
covers that user (docs/http-api.md, "One key for many end users").

The model is a scripted stand-in (scripted_model.py) so that this runs with no API key;
with a real one, drop ``model=`` from the Agent and set OPENAI_API_KEY.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from knowhub.client import KnowhubClient, LocalKnowhub
from knowhub.errors import KnowhubError
from knowhub.integrations.openai_agents import KnowhubSession, knowhub_tools

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripted_model import ScriptedModel

INSTRUCTIONS = (
    "You are a helpful support agent. Before answering a question that may depend on who the "
    "user is or what they told you before, call search_memory."
)


async def run(knowhub: Any, model_url: str, user: str | None) -> None:
    model = OpenAIResponsesModel(model="scripted", openai_client=AsyncOpenAI(base_url=model_url, api_key="offline"))
    agent = Agent(name="support", instructions=INSTRUCTIONS, model=model, tools=knowhub_tools(knowhub, user_id=user))

    day1 = KnowhubSession("support-day-1", knowhub, user_id=user)
    said = "Hi, I'm Mei. My laptop is a ThinkPad X1 Carbon and I live in Shanghai."
    print(f"[day 1] user: {said}")
    print(f"[day 1] agent: {(await Runner.run(agent, said, session=day1)).final_output}")
    for result in day1.last_commits:
        print(f"[day 1] committed to memory: {result.archive.archive_uri} ({len(result.write_results)} nodes written)")

    # memory search is eventually consistent: the index catches up a moment after a commit
    me = knowhub.with_user(user) if user and hasattr(knowhub, "with_user") else knowhub
    deadline = time.monotonic() + 10
    while not me.context.search_memory("laptop ThinkPad").blocks and time.monotonic() < deadline:
        time.sleep(0.1)

    day2 = KnowhubSession("support-day-2", knowhub, user_id=user)
    asked = "My laptop won't charge any more, what should I try?"
    print(f"[day 2] user: {asked}")
    print(f"[day 2] agent: {(await Runner.run(agent, asked, session=day2)).final_output}")
    print(f"[day 2] session items kept: {len(await day2.get_items())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", help="knowhub data dir for in-process use (default: a temp dir)")
    parser.add_argument("--server", help="URL of a running `knowhub serve` instead of in-process engines")
    parser.add_argument("--api-key", help="API key for --server")
    parser.add_argument("--user", help="end user id (default: mei in-process; with --server, the key's own "
                        "principal: naming a user needs a key allowed to act for it)")
    args = parser.parse_args()
    set_tracing_disabled(True)  # offline: no trace export
    with ScriptedModel() as model:
        try:
            if args.server:
                with KnowhubClient(args.server, args.api_key) as remote:
                    asyncio.run(run(remote, model.base_url, args.user))  # None: the key's principal
                return
            data_dir = args.data_dir or tempfile.mkdtemp(prefix="knowhub-oai-example-")
            with LocalKnowhub(data_dir) as local:
                asyncio.run(run(local, model.base_url, args.user or "mei"))
        except KnowhubError as exc:  # a refused key or user, a server that is down: one line
            sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
