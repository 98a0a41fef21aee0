"""``knowhub.__all__`` is exactly what docs/index.md says under "Python API"."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import knowhub
from tests.docs.markdown import DOCS, REPO, read, section


def _documented() -> dict[str, str]:
    """name → module from the table of the "Python API" section of docs/index.md."""
    rows: dict[str, str] = {}
    for line in section(read(DOCS / "index.md"), "Python API").splitlines():
        match = re.match(r"^\|\s*`([^`]+)`\s*\|\s*`([^`]+)`\s*\|", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def test_all_is_what_the_docs_list() -> None:
    documented = _documented()
    assert documented, "no table of names under 'Python API' in docs/index.md"
    undocumented = sorted(set(knowhub.__all__) - set(documented))
    stale = sorted(set(documented) - set(knowhub.__all__))
    assert not undocumented, f"in knowhub.__all__ but not in docs/index.md 'Python API': {undocumented}"
    assert not stale, f"listed in docs/index.md 'Python API' but not in knowhub.__all__: {stale}"


def test_each_name_comes_from_the_module_the_docs_name() -> None:
    for name, module in _documented().items():
        exported = getattr(knowhub, name)
        assert getattr(importlib.import_module(module), name) is exported, (
            f"docs/index.md says {name} comes from {module}"
        )


def test_star_import_gives_every_name() -> None:
    namespace: dict[str, object] = {}
    exec("from knowhub import *", namespace)
    assert set(knowhub.__all__) <= set(namespace)


def test_importing_knowhub_does_not_import_the_engines() -> None:
    # docs/index.md promises that `import knowhub` stays cheap (engines load lazily)
    code = (
        "import sys, knowhub; "
        "print(sorted(m for m in ('knowhub.tree', 'knowhub.knowledge', 'knowhub.context') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=REPO, check=True)
    assert done.stdout.strip() == "[]"


def test_the_readmes_import_only_public_names() -> None:
    for readme in (REPO / "README.md", REPO / "README.zh-CN.md"):
        for names in re.findall(r"from knowhub import ([\w, ]+)", read(readme)):
            for name in (n.strip() for n in names.split(",")):
                assert name in knowhub.__all__, f"{readme.name} imports {name} from knowhub"
