"""Headless Chromium for the console tests, driven by Selenium with Debian's chromedriver.

No browser is ever downloaded: the Chromium binary and its driver must already be installed
(``apt-get install chromium chromium-driver``); the driver path is passed explicitly so that
Selenium Manager never runs. Every request the page makes is recorded through the Chrome
DevTools performance log, so tests can assert that nothing left the test server.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVER_CANDIDATES = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")


def _find(paths: tuple[str, ...], name: str, env: str) -> str | None:
    """``$env`` when set (and only it), else the first installed of ``paths`` or ``name``."""
    chosen = os.environ.get(env)
    if chosen:
        return chosen if Path(chosen).is_file() else None
    return next((p for p in paths if Path(p).is_file()), None) or shutil.which(name)


def browser_paths() -> tuple[str, str] | None:
    """``(chromium, chromedriver)`` when both are installed and selenium imports, else None.

    ``CHROMIUM_PATH`` / ``CHROMEDRIVER_PATH`` name other binaries."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return None
    chromium = _find(CHROMIUM_CANDIDATES, "chromium", "CHROMIUM_PATH")
    driver = _find(DRIVER_CANDIDATES, "chromedriver", "CHROMEDRIVER_PATH")
    return (chromium, driver) if chromium and driver else None


SKIP_REASON = ("browser tests need Chromium, chromedriver and selenium: "
               "apt-get install chromium chromium-driver && pip install -e '.[dev]'")


def start_chromium(width: int = 1280, height: int = 800, lang: str = "en") -> Any:
    """A headless Chromium WebDriver with the performance log enabled."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    paths = browser_paths()
    if paths is None:
        raise RuntimeError(SKIP_REASON)
    chromium, driver = paths
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", f"--lang={lang}", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-default-apps", "--disable-sync", "--hide-scrollbars",
                "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def network_events(driver: Any) -> list[dict[str, Any]]:
    """DevTools ``Network.*`` events logged since the last call (the log is drained)."""
    events: list[dict[str, Any]] = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if str(message.get("method", "")).startswith("Network."):
            events.append(message)
    return events


def sent_requests(events: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """``(sent, blocked)`` URLs. A request the browser refused itself (by the page's Content
    Security Policy, for instance) never reached the network: it is listed as blocked. Only
    the last hop of a redirect chain can be the blocked one."""
    hops: list[tuple[str, str]] = []
    blocked_ids: set[str] = set()
    for event in events:
        params = event.get("params", {})
        if event["method"] == "Network.requestWillBeSent":
            hops.append((params["requestId"], params["request"]["url"]))
        elif event["method"] == "Network.loadingFailed" and params.get("blockedReason"):
            blocked_ids.add(params["requestId"])
    last = {request_id: index for index, (request_id, _) in enumerate(hops)}
    sent, blocked = [], []
    for index, (request_id, url) in enumerate(hops):
        (blocked if request_id in blocked_ids and last[request_id] == index else sent).append(url)
    return sent, blocked
