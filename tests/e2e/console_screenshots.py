"""Screenshots of the console's main views for the docs (``docs/images/console-*.png``).

    python -m tests.e2e.console_screenshots docs/images

Starts ``knowhub serve`` on a free loopback port over a fresh data dir (the sample is
loaded, no API keys), drives headless Chromium at 1280x800 and saves one PNG per view.
Needs what the browser tests need (Chromium, chromedriver, selenium) and no network.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.e2e.browser import start_chromium
from tests.e2e.server_process import ServerProcess

WIDTH, HEIGHT = 1280, 800


def _config(workdir: Path) -> Path:
    path = workdir / "knowhub.toml"
    path.write_text(f'data_dir = "{(workdir / "data").as_posix()}"\n\n[context]\nindex_poll_interval_s = 0.1\n',
                    encoding="utf-8")
    return path


def _until(driver: Any, script: str, *args: Any, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not driver.execute_script(script, *args):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for: {script}")
        time.sleep(0.1)


def _click(driver: Any, selector: str) -> None:
    _until(driver, "return !!document.querySelector(arguments[0])", selector)
    driver.execute_script("document.querySelector(arguments[0]).click()", selector)


def _type(driver: Any, selector: str, text: str) -> None:
    from selenium.webdriver.common.by import By

    _until(driver, "return !!document.querySelector(arguments[0])", selector)
    field = driver.find_element(By.CSS_SELECTOR, selector)
    field.clear()
    field.send_keys(text)


def _has_text(driver: Any, selector: str, text: str) -> None:
    _until(driver, "const e = document.querySelector(arguments[0]); return !!e && e.innerText.includes(arguments[1])",
           selector, text)


def shoot(out_dir: Path) -> list[Path]:
    """Save the screenshots into ``out_dir``; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(_config(Path(tmp)), Path(tmp))
        server.start()
        driver = start_chromium(WIDTH, HEIGHT)
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
        base = server.base_url

        def view(name: str, lang: str, steps: Callable[[], None]) -> None:
            driver.get(f"{base}/#/tree")
            driver.execute_script("localStorage.setItem('knowhub.lang', arguments[0])", lang)
            driver.get(f"{base}/#/{name.split('-')[0]}")
            driver.refresh()
            _until(driver, "return document.getElementById('principal').textContent !== ''")
            steps()
            time.sleep(0.4)
            path = out_dir / f"console-{name}.png"
            driver.save_screenshot(str(path))
            saved.append(path)

        try:
            def tree_search(query: str) -> None:
                _click(driver, ".node[data-id=sample-004] [data-testid=toggle]")
                _has_text(driver, "[data-testid=tree]", "人工智能")
                _click(driver, ".node[data-id=sample-019] [data-testid=toggle]")
                _has_text(driver, "[data-testid=tree]", "机器学习")
                _type(driver, "[data-testid=tree-search-input]", query)
                _click(driver, "[data-testid=tree-search-button]")
                _has_text(driver, "[data-testid=tree-search-result]", "pick_branch")

            def knowledge_search() -> None:
                _click(driver, "[data-testid=knowledge-tabs] [data-tab=search]")
                _type(driver, "[data-testid=knowledge-search-input]", "Python")
                _click(driver, "[data-testid=knowledge-search-button]")
                _until(driver, "return document.querySelectorAll('[data-testid=search-hit]').length > 0")
                _click(driver, "[data-testid=search-hit]")
                _until(driver, "return !!document.querySelector('[data-testid=item-task]')")

            def expand(name: str) -> None:
                script = ("return Array.from(document.querySelectorAll('.node')).some(n => "
                          "n.querySelector('.name') && n.querySelector('.name').textContent === arguments[0])")
                _until(driver, script, name)
                driver.execute_script(
                    "Array.from(document.querySelectorAll('.node')).find(n => n.querySelector('.name')"
                    " && n.querySelector('.name').textContent === arguments[0])"
                    ".querySelector('[data-testid=ctx-toggle]').click()", name)

            def context_node() -> None:
                expand("memories")
                expand("entities")
                _click(driver, "[data-uri$='/entities/python']")
                _until(driver, "return !!document.querySelector('[data-testid=level-tabs]')")
                _click(driver, "[data-testid=level-tabs] [data-tab=L2]")
                _until(driver, "const e = document.querySelector('[data-testid=ctx-level]'); return e && e.dataset.level === 'L2'")

            def context_search() -> None:
                _click(driver, "[data-testid=context-tabs] [data-tab=search]")
                _type(driver, "[data-testid=ctx-search-input]", "数据库迁移")
                _click(driver, "[data-testid=ctx-search-button]")
                _until(driver, "return !!document.querySelector('[data-testid=ctx-plan]')")

            def operations() -> None:
                _until(driver, "return !!document.querySelector('[data-testid=ops-check]')")

            view("tree-search", "en", lambda: tree_search("机器学习框架"))
            view("tree-zh", "zh", lambda: tree_search("深度学习的模型"))
            view("knowledge-search", "en", knowledge_search)
            view("knowledge-zh", "zh", knowledge_search)
            view("context-node", "en", context_node)
            view("context-search", "zh", context_search)
            view("ops", "en", operations)
        finally:
            driver.quit()
            server.kill()
    return saved


if __name__ == "__main__":
    for written in shoot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")):
        print(written)
