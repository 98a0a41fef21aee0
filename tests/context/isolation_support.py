"""Shared pieces of the multi-principal isolation suites (HTTP: test_bola_http.py, MCP:
tests/mcp/test_context_bola_mcp.py): the keys, alice's chat, what must never leak, the
URIs an attacker guesses, and a tally that counts every attempt and every leak."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

ACCOUNT = "default"

#: name → (key, principal, memberships). alice and bob share a team but no agent; mallory
#: has no scope at all; carol and dave are configured to share the agent space "helper".
KEYS: dict[str, tuple[str, str, list[str]]] = {
    "alice": ("bola-alice-key-0123456789", "user:alice", ["team:t1"]),
    "bob": ("bola-bob-key-0123456789", "user:bob", ["team:t1"]),
    "mallory": ("bola-mallory-key-0123456789", "user:mallory", []),
    "carol": ("bola-carol-key-0123456789", "user:carol", ["agent:helper"]),
    "dave": ("bola-dave-key-0123456789", "user:dave", ["agent:helper"]),
}

ATTACKERS = ("bob", "mallory")


def auth_keys() -> list[dict[str, Any]]:
    """``settings.auth.keys`` for :data:`KEYS`."""
    return [{"key": k, "principal": p, "memberships": m} for k, p, m in KEYS.values()]


def auth_toml() -> str:
    """The same keys as TOML (for a server started as a subprocess)."""
    blocks = []
    for key, principal, memberships in KEYS.values():
        blocks.append(f'[[auth.keys]]\nkey = "{key}"\nprincipal = "{principal}"\nmemberships = {json.dumps(memberships)}\n')
    return "\n".join(blocks)


#: Per user: (salary, hiding place, fix) — the texts nobody else may ever receive.
VARIANTS: dict[str, tuple[str, str, str]] = {
    "Alice": ("123456", "blue notebook", "compressed air"),
    "Carol": ("654321", "green folder", "thermal paste"),
    "Dave": ("777888", "red drawer", "vacuum cleaner"),
}


def chat(who: str) -> list[dict[str, Any]]:
    """A chat with a tool call, a tool result, a habit and a case (problem + fix)."""
    salary, place, fix = VARIANTS[who]
    return [
        {"id": "m1", "role": "user", "name": who, "content": "Please look up my salary record.",
         "timestamp": "2024-05-08T10:00:00Z"},
        {"id": "m2", "role": "assistant", "content": None, "timestamp": "2024-05-08T10:00:05Z",
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "lookup_salary", "arguments": json.dumps({"employee": who.lower()})}}]},
        {"id": "m3", "role": "tool", "tool_call_id": "call_1", "content": f"{who.lower()} salary is {salary}",
         "timestamp": "2024-05-08T10:00:06Z"},
        {"id": "m4", "role": "user", "name": who, "content": f"I always keep my diary password in the {place}.",
         "timestamp": "2024-05-08T10:01:00Z"},
        {"id": "m5", "role": "user", "name": who, "content": "My laptop kept overheating during video calls.",
         "timestamp": "2024-05-08T10:02:00Z"},
        {"id": "m6", "role": "assistant", "content": f"The fix was cleaning the clogged fan vent with {fix}.",
         "timestamp": "2024-05-08T10:02:30Z"},
    ]


def secrets(who: str) -> tuple[str, ...]:
    """Text of ``who``'s chat that no other principal may ever receive (case-insensitive;
    no other chat of the suite contains it, so finding it in another's answer is a leak)."""
    return VARIANTS[who]


SECRETS = secrets("Alice")
#: What the owner must still find, by query → a text her memories hold.
OWN_FINDS = {
    "salary 123456": "123456",
    "diary password blue notebook": "blue notebook",
    "laptop overheating fix": "compressed air",
}
QUERIES = (*OWN_FINDS, "lookup_salary tool", "alice", "always keep")

#: What a mallory commit writes, trying to land in alice's nodes (same session, ids, tool).
MALLORY_MARK = "mallorymark"


def mallory_chat() -> list[dict[str, Any]]:
    """mallory's forgery: same session id, message ids and tool name as alice's chat."""
    return [
        {"id": "m1", "role": "user", "name": "Alice", "content": f"Please look up my salary record {MALLORY_MARK}.",
         "timestamp": "2024-05-08T10:00:00Z"},
        {"id": "m2", "role": "assistant", "content": None, "timestamp": "2024-05-08T10:00:05Z",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup_salary", "arguments": "{}"}}]},
        {"id": "m3", "role": "tool", "tool_call_id": "call_1", "content": f"alice salary is 0 {MALLORY_MARK}"},
        {"id": "m4", "role": "user", "name": "Alice", "content": f"I always keep my diary password in the {MALLORY_MARK} box."},
        {"id": "m5", "role": "user", "name": "Alice", "content": "My laptop kept overheating during video calls."},
        {"id": "m6", "role": "assistant", "content": f"The fix was sending the laptop to {MALLORY_MARK}."},
    ]


def guessed_uris(victim: str, victim_uris: list[str]) -> list[str]:
    """URIs an attacker tries: the victim's own, the same paths in every agent space it could
    guess (the old shared ``agents/default`` included), and the roots of those spaces."""
    spaces = [f"ctx://{ACCOUNT}/users/{victim}", f"ctx://{ACCOUNT}/agents/private-{victim}",
              f"ctx://{ACCOUNT}/agents/default", f"ctx://{ACCOUNT}/agents/helper"]
    out = list(victim_uris)
    for uri in victim_uris:
        if "/agents/" in uri:
            tail = uri.split("/agents/", 1)[1].split("/", 1)[1]
            out += [f"ctx://{ACCOUNT}/agents/default/{tail}", f"ctx://{ACCOUNT}/agents/helper/{tail}"]
    return list(dict.fromkeys(out + spaces))


def listing_roots(victim: str) -> list[str]:
    """Containers an attacker lists (recursively) hoping to see the victim's nodes."""
    return [f"ctx://{ACCOUNT}", f"ctx://{ACCOUNT}/users", f"ctx://{ACCOUNT}/agents",
            f"ctx://{ACCOUNT}/users/{victim}", f"ctx://{ACCOUNT}/agents/private-{victim}",
            f"ctx://{ACCOUNT}/agents/default", f"ctx://{ACCOUNT}/agents/default/tools",
            f"ctx://{ACCOUNT}/agents/default/memories"]


def victim_spaces(victim: str) -> tuple[str, ...]:
    """URI prefixes of everything the victim owns."""
    return (f"ctx://{ACCOUNT}/users/{victim}/", f"ctx://{ACCOUNT}/agents/private-{victim}/")


@dataclass
class Tally:
    """Counts attempts of one face and the leaks among them.

    A read attempt leaks when the answer contains any of the victim's secret texts (in any
    status), or a successful answer names a URI of the victim's spaces (an error may echo
    the URI the attacker sent). Callers pass what the server *found* (a search's blocks, not
    its echo of the query). A write attempt leaks when it changed what the victim finds.
    """

    face: str
    attempts: int = 0
    writes: int = 0
    leaks: list[str] = field(default_factory=list)

    def read(self, what: str, ok: bool, body: str, secrets: tuple[str, ...], spaces: tuple[str, ...]) -> None:
        self.attempts += 1
        low = body.casefold()
        found = [s for s in secrets if s.casefold() in low]
        if ok:
            found += [p for p in spaces if p in body]
        if found:
            self.leaks.append(f"{what}: {found}")

    def write(self, what: str, changed: bool) -> None:
        self.attempts += 1
        self.writes += 1
        if changed:
            self.leaks.append(f"{what}: changed what the victim finds")

    def line(self) -> str:
        by_writes = sum(1 for leak in self.leaks if leak.endswith("changed what the victim finds"))
        return (f"BOLA {self.face}: {self.attempts} attempts ({self.writes} writes), "
                f"{len(self.leaks)} leaks ({by_writes} by writes)")
