"""The shared layers import no engine or face (ARCHITECTURE "The house": arrows point down)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import knowhub

SRC = Path(knowhub.__file__).resolve().parent
SHARED = ["index", "providers", "storage", "text", "scope.py", "config.py", "errors.py"]
UPPER = ("tree", "knowledge", "context", "server", "cli", "mcp")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement names, at any depth (lazy imports included)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.extend([(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__"):
            out.extend((node.lineno, arg.value) for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str))
    return out


def test_shared_layers_import_no_engine_or_face() -> None:
    offenders = []
    for name in SHARED:
        root = SRC / name
        files = [root] if root.is_file() else sorted(root.rglob("*.py"))
        for path in files:
            for line, module in _imported_modules(path):
                if module == "knowhub" or any(module == f"knowhub.{u}" or module.startswith(f"knowhub.{u}.") for u in UPPER):
                    offenders.append(f"{path.relative_to(SRC)}:{line}: {module}")
    assert offenders == []


def test_importing_index_loads_no_engine() -> None:
    code = ("import sys, knowhub.index, knowhub.index.events, knowhub.index.projector;"
            f"print([m for m in sys.modules if m.split('.')[1:2] and m.split('.')[1] in {UPPER!r}])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_context_core_reexports_the_same_classes() -> None:
    import knowhub.context.core as core
    import knowhub.context.core.enums as enums
    import knowhub.context.core.objects as objects
    import knowhub.context.core.outbox as outbox
    import knowhub.index as index
    import knowhub.index.events as events

    for name in ("OutboxEvent", "OutboxEventType", "OutboxStatus", "IndexBatchResult", "MoveProjection",
                 "OutboxSink", "OutboxStore", "new_event_id"):
        assert getattr(core, name) is getattr(events, name), name
    assert objects.OutboxEvent is events.OutboxEvent and enums.OutboxStatus is events.OutboxStatus
    assert outbox.OutboxStore is events.OutboxStore and index.OutboxEvent is events.OutboxEvent
    event = core.make_event("UPSERT_CONTEXT", "ctx://a/users/u/memories/events/e1",
                            type("Ctx", (), {"account_id": "a", "user_id": "u"})())
    assert isinstance(event, events.OutboxEvent) and events.OutboxEvent.from_dict(event.to_dict()) == event
