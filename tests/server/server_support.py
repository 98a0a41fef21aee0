"""Helpers shared by the server tests (a module with a unique name: importing from
``conftest`` breaks as soon as two test folders have one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from knowhub.config import Settings

#: name → (key, principal, memberships, admin_of). alice, bob and carol share no team;
#: dave is in alice's team without owning her items.
KEYS: dict[str, tuple[str, str, list[str], list[str]]] = {
    "alice": ("key-alice-0123456789", "user:alice", ["team:red"], []),
    "bob": ("key-bob-0123456789", "user:bob", ["team:blue"], []),
    "carol": ("key-carol-0123456789", "user:carol", ["team:green"], []),
    "dave": ("key-dave-0123456789", "user:dave", ["team:red"], []),
    "agent": ("key-agent-0123456789", "agent:research_agent", ["org:cybertogether"], []),
    "pat": ("key-pat-0123456789", "user:pat", ["org:acme"], []),
    "olga": ("key-olga-0123456789", "user:olga", ["org:acme"], []),
    "rita": ("key-rita-0123456789", "user:rita", ["team:red"], []),
}
#: name → further ``auth.keys`` fields. The agent and pat may publish (pat into public and
#: org:acme); olga is in org:acme without the right; rita may only read the keyword tree.
RIGHTS: dict[str, dict[str, Any]] = {
    "agent": {"publish": ["org:cybertogether"]},
    "pat": {"publish": ["public", "org:acme"]},
    "rita": {"tree": "read-only"},
}


def settings_for(data_dir: Path, *, with_keys: bool = True, **server: Any) -> Settings:
    """Settings with the test keys (or none) and data under ``data_dir``."""
    auth: dict[str, Any] = {}
    if with_keys:
        auth["keys"] = [
            {"key": key, "principal": principal, "memberships": members, "admin_of": admin,
             **RIGHTS.get(name, {})}
            for name, (key, principal, members, admin) in KEYS.items()
        ]
    return Settings.load(None, data_dir=data_dir, auth=auth, server=server or None)


def auth_header(name: str) -> dict[str, str]:
    """``Authorization`` header of one of the test principals."""
    return {"Authorization": f"Bearer {KEYS[name][0]}"}


class Api:
    """TestClient wrapper that sends requests as a named principal."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def as_(self, name: str | None) -> _As:
        return _As(self.client, auth_header(name) if name else {})


class _As:
    def __init__(self, client: TestClient, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers

    def __getattr__(self, method: str) -> Any:
        call = getattr(self.client, method)

        def send(url: str, **kwargs: Any) -> Any:
            headers = {**self.headers, **kwargs.pop("headers", {})}
            return call(url, headers=headers, **kwargs)

        return send


def knowledge_body(**overrides: Any) -> dict[str, Any]:
    """A valid POST /api/knowledge body (seed 002's example), with overrides."""
    body: dict[str, Any] = {
        "task": "使用 Selenium 登录某网站并绕过反爬检测",
        "content": "使用 undetected_chromedriver 可以绕过大部分检测。关键点:1) 设置合适的 "
        "user-agent 2) 随机延迟 3) 避免频繁请求",
        "types": ["tool", "strategy"],
        "tags": {"category": "crawler", "domain": "web"},
        "source": {
            "name": "selenium",
            "category": "exp",
            "urls": ["https://example.com"],
            "agent_id": "research_agent",
            "submitted_by": "user@example.com",
            "message_id": "msg-001",
        },
        "score": 4,
    }
    body.update(overrides)
    return body
