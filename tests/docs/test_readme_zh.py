"""README.zh-CN.md keeps in step with README.md: the same newcomer commands and docs."""

from __future__ import annotations

import ast
import re

from tests.docs.markdown import REPO, code_blocks, read

README = REPO / "README.md"
README_ZH = REPO / "README.zh-CN.md"


def _knowhub_commands(text: str) -> set[str]:
    """``knowhub <sub-commands>`` (no options or arguments) run in the shell blocks."""
    found: set[str] = set()
    for lang, lines in code_blocks(text):
        if lang not in {"", "bash", "sh", "shell", "console"}:
            continue
        for line in lines:
            for match in re.finditer(r"(?:^|&&|;)\s*(knowhub(?: [a-z][a-z-]*)*)", line.split("#")[0]):
                found.add(match.group(1))
    return found


def test_the_chinese_readme_starts_with_the_same_two_newcomer_commands() -> None:
    chinese, english = code_blocks(read(README_ZH)), code_blocks(read(README))
    assert chinese and english, "a README has no code block"
    first = [line for line in chinese[0][1] if line.strip()]
    assert len(first) == 2
    assert first == [line for line in english[0][1] if line.strip()]


def _python_code(text: str) -> list[str]:
    """The Python blocks as ASTs (comments, which are translated, do not count)."""
    return [ast.dump(ast.parse("\n".join(lines))) for lang, lines in code_blocks(text) if lang == "python"]


def test_the_chinese_readme_has_the_same_python_quickstart() -> None:
    assert _python_code(read(README_ZH)) == _python_code(read(README))


def test_the_chinese_readme_mentions_every_command_of_the_english_one() -> None:
    chinese = read(README_ZH)
    missing = sorted(cmd for cmd in _knowhub_commands(read(README)) if cmd not in chinese)
    assert not missing, f"README.md runs {missing}; README.zh-CN.md does not mention them"


def test_the_chinese_readme_points_to_every_doc_the_english_one_does() -> None:
    chinese = read(README_ZH)
    wanted = set(re.findall(r"docs/[\w./-]+\.md", read(README)))
    missing = sorted(doc for doc in wanted if doc not in chinese)
    assert not missing, f"README.md points to {missing}; README.zh-CN.md does not"


def test_the_chinese_readme_links_the_english_one() -> None:
    assert "(README.md)" in read(README_ZH)
