"""Seed 003's integration points for any agent runtime: ``on_start``, ``on_goal``,
``on_compaction``, ``on_session_end``, with token and latency budgets, failing open.

Import-light on purpose (stdlib only): hook processes of coding agents import it on
every prompt. The knowhub it is given decides what else is loaded.
"""

from __future__ import annotations

from knowhub.agent.budget import Budgets, estimate_tokens
from knowhub.agent.ledger import LedgerEntry, SessionLedger, default_state_dir, message_key
from knowhub.agent.points import (
    AgentContext,
    CommitReport,
    on_compaction,
    on_goal,
    on_session_end,
    on_start,
)
from knowhub.agent.render import InjectedItem, Injection

__all__ = [
    "AgentContext",
    "Budgets",
    "CommitReport",
    "InjectedItem",
    "Injection",
    "LedgerEntry",
    "SessionLedger",
    "default_state_dir",
    "estimate_tokens",
    "message_key",
    "on_compaction",
    "on_goal",
    "on_session_end",
    "on_start",
]
