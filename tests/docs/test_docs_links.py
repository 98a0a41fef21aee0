"""The docs hang together: the docs map lists every page, links and anchors resolve, and
the Python examples import names that exist."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.docs.markdown import DOCS, REPO, anchors, code_blocks, links, read, section

PAGES = [REPO / "README.md", *sorted(REPO.glob("README.*.md")), *sorted(DOCS.rglob("*.md"))]
#: Pages for users, whose Python examples must be real code (docs/dev/ holds signatures).
USER_PAGES = [page for page in PAGES if DOCS / "dev" not in page.parents]


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def test_the_docs_map_lists_every_page() -> None:
    docs_map = section(read(DOCS / "index.md"), "Docs map")
    listed = {target.split("#")[0] for target in links(docs_map)}
    pages = {p.name for p in DOCS.glob("*.md") if p.name != "index.md"}
    missing = sorted(pages - listed)
    assert not missing, f"docs/index.md's 'Docs map' has no line for: {missing}"
    # one line per page
    for line in docs_map.splitlines():
        if line.startswith("- "):
            assert len(links(line)) >= 1 and " — " in line, f"docs map line without a description: {line}"


def test_the_index_names_the_three_engines_and_the_quickstart() -> None:
    index = read(DOCS / "index.md")
    for engine in ("KeywordTree", "KnowledgeHub", "ContextEngineService"):
        assert f"`{engine}`" in section(index, "The three engines")
    assert "knowhub serve" in section(index, "Quickstart")


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    problems: list[str] = []
    for target in links(read(page)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            problems.append(f"{target}: {dest} does not exist")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(read(dest)):
            problems.append(f"{target}: no heading with anchor #{anchor} in {_rel(dest)}")
    assert not problems, f"broken links in {_rel(page)}:\n" + "\n".join(problems)


def _python_blocks(page: Path) -> list[ast.Module]:
    modules = []
    for lang, lines in code_blocks(read(page)):
        if lang not in {"python", "py"}:
            continue
        source = "\n".join(lines)
        try:
            tree = compile(source, f"<python example in {_rel(page)}>", "exec",
                           flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
        except SyntaxError as exc:
            pytest.fail(f"{_rel(page)}: a python example does not parse: {exc}")
        assert isinstance(tree, ast.Module)
        modules.append(tree)
    return modules


@pytest.mark.parametrize("page", USER_PAGES, ids=_rel)
def test_python_examples_import_what_exists(page: Path) -> None:
    problems: list[str] = []
    for tree in _python_blocks(page):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "knowhub":
                module = importlib.import_module(node.module or "")
                problems += [
                    f"from {node.module} import {alias.name}"
                    for alias in node.names
                    if alias.name != "*" and not hasattr(module, alias.name)
                ]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "knowhub":
                        importlib.import_module(alias.name)
    assert not problems, f"{_rel(page)} imports names that do not exist: {problems}"
