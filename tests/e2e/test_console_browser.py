"""The web console in a real browser: headless Chromium (Selenium + Debian's chromedriver)
against a real ``knowhub serve`` subprocess on a free loopback port, with two API keys.

One server and one browser serve the whole module; the tests run in file order and build
on each other (alice's item and chat are what bob must not see). Every request the browser
sends is recorded from the DevTools log and checked at the end: none may leave the server.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.browser import (
    SKIP_REASON,
    browser_paths,
    network_events,
    sent_requests,
    start_chromium,
)
from tests.e2e.server_process import ALICE_KEY, BOB_KEY, ServerProcess, write_config

if browser_paths() is None:  # one line in the report for the whole module
    pytest.skip(SKIP_REASON, allow_module_level=True)

ALICE_TASK = "Rotate the console deploy key 控制台密钥轮换"
ALICE_CONTENT = "Rotate the staging deploy key every Monday; 每周一轮换预发布环境的部署密钥。"
ALICE_CHAT = ("user: I keep my bonsai tree on the balcony in Hangzhou.\n"
              "assistant: Noted, a balcony bonsai in Hangzhou.\n"
              "user: 我每周六给盆景浇水。")
SECRET = "password=console-e2e-not-a-real-secret"
WAIT_S = 20.0


class Console:
    """The browser and the server, with the URLs the browser requested so far."""

    def __init__(self, driver: Any, server: ServerProcess) -> None:
        self.driver = driver
        self.server = server
        self.events: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []

    def record(self) -> None:
        self.events.extend(network_events(self.driver))
        self.logs.extend(self.driver.get_log("browser"))

    def go(self, fragment: str) -> None:
        self.driver.get(f"{self.server.base_url}/{fragment}")
        self.record()

    def wait(self, condition: Callable[[Any], Any], message: str) -> Any:
        from selenium.webdriver.support.ui import WebDriverWait

        try:
            return WebDriverWait(self.driver, WAIT_S, poll_frequency=0.1).until(condition, message)
        finally:
            self.record()

    def css(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, selector))

    def one(self, selector: str) -> Any:
        return self.wait(lambda _d: (self.css(selector) or [None])[0], f"no element {selector}")

    def text_of(self, selector: str) -> str:
        """Visible text of every match, read in one script (views re-render freely)."""
        return str(self.driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.innerText).join(' ')", selector))

    def wait_text(self, selector: str, needle: str) -> None:
        self.wait(lambda _d: needle in self.text_of(selector), f"{needle!r} never appeared in {selector}: {self.text_of(selector)!r}")

    def attr(self, selector: str, name: str) -> str | None:
        """An attribute of the first match (None without a match), read in one script."""
        found = self.driver.execute_script(
            "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;",
            selector, name)
        return None if found is None else str(found)

    def _retry(self, selector: str, action: Callable[[Any], None]) -> None:
        """Act on the first match, again if the view re-rendered it meanwhile."""
        from selenium.common.exceptions import StaleElementReferenceException

        def attempt(_driver: Any) -> bool:
            try:
                action(self.one(selector))
            except StaleElementReferenceException:
                return False
            return True

        self.wait(attempt, f"could not act on {selector}")

    def click(self, selector: str) -> None:
        self._retry(selector, lambda element: element.click())

    def type(self, selector: str, text: str) -> None:
        def fill_in(element: Any) -> None:
            element.clear()
            element.send_keys(text)

        self._retry(selector, fill_in)

    def sign_in(self, key: str) -> None:
        self.driver.execute_script("sessionStorage.clear(); localStorage.setItem('knowhub.lang', 'en');")
        self.go("#/tree")
        self.driver.refresh()  # a fresh page: nothing of the previous principal is kept
        self.wait(lambda _d: self.attr("#login", "hidden") is None, "the login dialog did not open")
        self.type("[data-testid=login-key]", key)
        self.click("#login-submit")
        self.wait(lambda _d: self.text_of("[data-testid=principal]") != "", "never signed in")


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    workdir: Path = tmp_path_factory.mktemp("console")
    server = ServerProcess(write_config(workdir / "knowhub.toml", workdir / "data"), workdir)
    server.start()
    driver = start_chromium(lang="en-US")
    try:
        yield Console(driver, server)
    finally:
        driver.quit()
        server.kill()


def test_a_key_is_asked_for_and_the_sample_data_appears(console: Console) -> None:
    console.go("")
    console.wait(lambda _d: console.attr("#login", "hidden") is None, "no login dialog without a key")
    console.type("[data-testid=login-key]", "not-a-key")
    console.click("#login-submit")
    console.wait_text("#login-error", "not accepted")
    console.sign_in(ALICE_KEY)
    assert console.text_of("[data-testid=principal]") == "user:alice"
    # the sample tree (shared) and a public sample item (visible to every principal)
    console.wait_text("[data-testid=tree]", "技术")
    console.click("[data-testid=nav-knowledge]")
    console.wait_text("[data-testid=knowledge-list]", "vector database")
    # the UI switches to Chinese and back, and remembers the choice
    console.click("[data-testid=lang]")
    console.wait_text("#nav", "关键词树")
    console.wait_text("[data-testid=knowledge-tabs]", "新建条目")
    console.click("[data-testid=lang]")
    console.wait_text("#nav", "Keyword tree")
    # the key lives in sessionStorage only
    stored = console.driver.execute_script("return [sessionStorage.getItem('knowhub.apiKey'), JSON.stringify(localStorage)]")
    assert stored[0] == ALICE_KEY and ALICE_KEY not in stored[1]


def test_tree_browse_and_search_with_the_agent_trajectory(console: Console) -> None:
    console.go("#/tree")
    console.wait_text("[data-testid=tree]", "技术")
    console.click(".node[data-id=sample-004] [data-testid=toggle]")  # expand 技术
    console.wait_text("[data-testid=tree]", "人工智能")
    console.click(".node[data-id=sample-004] [data-testid=keyword-link]")
    console.wait_text("[data-testid=keyword-detail]", "Technology")
    # a query no name or alias matches exactly: the agent descends, round by round
    console.type("[data-testid=tree-search-input]", "机器学习框架")
    console.click("[data-testid=tree-search-button]")
    console.one("[data-testid=trajectory]")
    rounds = console.css("[data-testid=trajectory-round]")
    assert rounds, "no trajectory round shown"
    first = rounds[0].text
    assert "pick_branch" in first and "Decision" in first and "Reason" in first
    assert console.css("[data-testid=trajectory-round] .cand"), "the candidates shown to the agent are missing"
    assert console.css("[data-testid=trajectory-round] .cand.chosen"), "the agent's choice is not marked"
    # an exact hit needs no agent and says so
    console.type("[data-testid=tree-search-input]", "Python")
    console.click("[data-testid=tree-search-button]")
    console.wait_text("[data-testid=tree-search-result]", "agent was not needed")


def test_tree_create_then_undo_from_history(console: Console) -> None:
    console.go("#/tree")
    console.wait_text("[data-testid=tree]", "技术")
    console.click("aside button.secondary")  # new top-level keyword
    console.type("[data-testid=new-keyword-name]", "盆景 Bonsai")
    console.click("[data-testid=new-keyword-submit]")
    console.wait_text("[data-testid=tree]", "盆景 Bonsai")
    console.wait_text("[data-testid=tree-history]", "create")
    console.click("[data-testid=tree-undo]")  # the newest operation comes first
    console.wait(lambda _d: "盆景 Bonsai" not in console.text_of("[data-testid=tree]"), "undo did not remove the keyword")


def _new_top_keyword(console: Console, name: str) -> None:
    console.click("aside button.secondary")
    console.type("[data-testid=new-keyword-name]", name)
    console.click("[data-testid=new-keyword-submit]")
    console.wait_text("[data-testid=keyword-name]", name)


def test_tree_edit_move_merge_and_delete(console: Console) -> None:
    console.go("#/tree")
    console.wait_text("[data-testid=tree]", "技术")
    _new_top_keyword(console, "Console parent")
    _new_top_keyword(console, "Console child")
    console.click("[data-testid=kw-edit]")
    console.type(".form-area input:nth-of-type(1)", "Console child")
    console.type(".form-area label:nth-of-type(2) input", "CC alias")
    console.click(".form-area button[type=submit]")
    console.wait_text("[data-testid=keyword-detail]", "CC alias")
    console.click("[data-testid=kw-move]")
    console.type(".form-area input", "Console parent")
    console.click(".form-area button[type=submit]")
    console.wait_text("[data-testid=keyword-detail] .crumbs", "Console parent › Console child")
    console.click("[data-testid=kw-merge]")
    console.type(".form-area input", "Console parent")
    console.click(".form-area button[type=submit]")
    console.wait_text("[data-testid=keyword-name]", "Console parent")
    console.wait_text("[data-testid=keyword-detail]", "Console child")  # now an alias
    console.click("[data-testid=kw-delete]")
    console.wait(lambda d: d.switch_to.alert, "no confirmation asked").accept()
    console.wait(lambda _d: "Console parent" not in console.text_of("[data-testid=tree]"), "not deleted")
    console.wait_text("[data-testid=tree-history]", "delete")
    console.click("[data-testid=tree-undo]")  # undo the delete
    console.wait_text("[data-testid=tree]", "Console parent")


def test_knowledge_create_search_feedback_and_undo(console: Console) -> None:
    console.go("#/knowledge")
    console.click("[data-testid=knowledge-tabs] [data-tab=create]")
    console.type("[data-testid=kn-task]", ALICE_TASK)
    console.type("[data-testid=kn-content]", ALICE_CONTENT)
    console.type("[data-testid=kn-scopes]", "user:alice")
    console.click("[data-testid=kn-create-submit]")
    console.wait_text("[data-testid=item-task]", ALICE_TASK)

    console.click("[data-testid=knowledge-tabs] [data-tab=search]")
    console.type("[data-testid=knowledge-search-input]", "deploy key 轮换")
    console.click("[data-testid=knowledge-search-button]")
    console.wait_text("[data-testid=knowledge-search-result]", ALICE_TASK)
    item_id, why, relevance = console.driver.execute_script(
        "const row = Array.from(document.querySelectorAll('[data-testid=search-hit]'))"
        ".find(r => r.innerText.includes(arguments[0]));"
        "return [row.dataset.id, row.querySelector('[data-testid=hit-why]').innerText,"
        " row.querySelector('[data-testid=hit-relevance]').innerText];", ALICE_TASK)
    assert "quality 4 = score 4 + helpful 0" in why and "scope user:alice" in why
    assert float(relevance) > 0
    console.click(f"[data-testid=search-hit][data-id='{item_id}']")
    console.wait_text("[data-testid=item-task]", ALICE_TASK)

    console.type("[data-testid=feedback-note]", "saved a rollout")
    console.click("[data-testid=feedback-helpful]")
    console.wait_text("[data-testid=item-eval]", "helpful 1")
    console.wait_text("[data-testid=feedback-history]", "saved a rollout")
    console.click("[data-testid=knowledge-undo]")  # restore v1, before the feedback
    console.wait_text("[data-testid=item-eval]", "helpful 0")

    console.click("[data-testid=knowledge-tabs] [data-tab=slim]")
    console.click("[data-testid=slim-plan]")  # a plan only: nothing changes before Apply
    console.wait_text("[data-testid=slim-result]", "items scanned")


def test_a_resource_secret_is_masked_until_revealed(console: Console) -> None:
    with console.server.client(ALICE_KEY) as api:
        saved = api.post("/api/resource", json={
            "id": "cred/console-e2e", "title": "Console e2e credential", "body": "login with the bot account",
            "secure_body": SECRET, "content_type": "credential", "scopes": ["user:alice"]})
        assert saved.status_code == 201, saved.text
    console.go("#/knowledge")
    console.click("[data-testid=knowledge-tabs] [data-tab=resources]")
    console.wait_text("[data-testid=resource-list]", "cred/console-e2e")
    console.click("[data-testid=resource-row]")
    console.one("[data-testid=secure-body-masked]")
    assert SECRET not in console.driver.page_source
    console.click("[data-testid=reveal-secret]")
    console.wait_text("[data-testid=secure-body]", SECRET)


def test_a_pasted_chat_is_committed_and_a_node_read_at_L2(console: Console) -> None:
    console.go("#/context")
    console.click("[data-testid=context-tabs] [data-tab=commit]")
    console.type("[data-testid=commit-chat]", ALICE_CHAT)
    console.click("[data-testid=commit-submit]")
    console.one("[data-testid=write-plans]")
    assert "users/alice/" in console.text_of("[data-testid=write-plans]")
    console.click("[data-testid=commit-result] p button.link")  # the archive
    console.wait_text("[data-testid=ctx-uri]", "ctx://default/users/alice/sessions/")
    console.click("[data-testid=level-tabs] [data-tab=L2]")
    console.wait(lambda _d: console.attr("[data-testid=ctx-level]", "data-level") == "L2", "not read at L2")
    console.wait_text("[data-testid=ctx-level]", "我每周六给盆景浇水")
    # the commit audit lists it, with its WritePlans
    console.click("[data-testid=context-tabs] [data-tab=audit]")
    console.wait_text("[data-testid=ctx-audit]", "WritePlan")
    # the browser reaches nodes through the space tree
    console.click("[data-testid=context-tabs] [data-tab=browse]")
    console.wait_text("[data-testid=ctx-tree]", "ctx://default/users/alice")


def test_a_memory_is_edited_then_deleted(console: Console) -> None:
    """Issue 18 §5: the node view edits L0 (with the version check) and deletes the memory."""
    console.go("#/context")
    console.click("[data-testid=context-tabs] [data-tab=search]")
    console.type("[data-testid=ctx-search-input]", "盆景")
    console.click("[data-testid=ctx-search-button]")
    console.one("[data-testid=ctx-blocks]")
    console.click("[data-testid=ctx-blocks] button.link")
    console.click("[data-testid=ctx-edit] summary")
    console.type("[data-testid=ctx-edit-abstract]", "edited in the console 控制台")
    console.click("[data-testid=ctx-edit-save]")
    console.click("[data-testid=level-tabs] [data-tab=L0]")
    console.wait_text("[data-testid=ctx-level]", "edited in the console 控制台")
    console.click("[data-testid=ctx-delete]")
    console.wait(lambda d: d.switch_to.alert, "no confirmation asked").accept()
    console.wait(lambda _d: not console.css("[data-testid=ctx-uri]"), "the deleted memory is still shown")


def test_a_second_principal_sees_none_of_the_first_ones_private_items(console: Console) -> None:
    console.sign_in(BOB_KEY)
    assert console.text_of("[data-testid=principal]") == "user:bob"
    console.go("#/knowledge")
    console.click("[data-testid=knowledge-tabs] [data-tab=items]")
    console.wait_text("[data-testid=knowledge-list]", "vector database")  # public sample: visible
    assert ALICE_TASK not in console.text_of("[data-testid=knowledge-list]")
    console.click("[data-testid=knowledge-tabs] [data-tab=search]")
    console.type("[data-testid=knowledge-search-input]", "deploy key 轮换")
    console.click("[data-testid=knowledge-search-button]")
    console.wait(lambda _d: console.text_of("[data-testid=knowledge-search-result]") != "", "no search answer")
    assert ALICE_TASK not in console.text_of("[data-testid=knowledge-search-result]")
    console.click("[data-testid=knowledge-tabs] [data-tab=resources]")
    console.wait(lambda _d: console.text_of("[data-testid=resource-list]") != "", "no resource list")
    assert "cred/console-e2e" not in console.text_of("[data-testid=resource-list]")
    console.go("#/context")
    console.wait_text("[data-testid=ctx-tree]", "ctx://default/users/bob")
    assert "alice" not in console.text_of("[data-testid=ctx-tree]")
    console.click("[data-testid=context-tabs] [data-tab=search]")
    console.type("[data-testid=ctx-search-input]", "bonsai 盆景")
    console.click("[data-testid=ctx-search-button]")
    console.wait(lambda _d: "Blocks" in console.text_of("[data-testid=ctx-search-result]"), "no context search answer")
    found = console.text_of("[data-testid=ctx-search-result]")
    assert "alice" not in found and "balcony" not in found and "浇水" not in found
    console.click("[data-testid=context-tabs] [data-tab=audit]")
    console.wait_text("[data-testid=ctx-audit]", "No commits yet")
    # operations are for operators only: bob's key has no admin_of = ["public"]
    console.go("#/ops")
    console.wait_text("[data-testid=ops-admin]", "operators only")


def test_api_docs_render_offline(console: Console) -> None:
    console.go("docs")
    console.wait(lambda _d: "knowhub" in console.text_of(".swagger-ui .info"), "Swagger UI did not render")
    console.go("redoc")
    console.wait(lambda _d: "/api/knowledge" in console.driver.page_source and console.css("h1"), "ReDoc did not render")


def test_no_request_went_to_another_host(console: Console) -> None:
    time.sleep(0.2)
    console.record()
    origin = urlsplit(console.server.base_url).netloc
    sent, blocked = sent_requests(console.events)
    pages = [u for u in sent if u.startswith(("http://", "https://", "ws://", "wss://"))]
    assert len(pages) > 50, "the browser log recorded almost nothing"
    elsewhere = sorted({u for u in pages if urlsplit(u).netloc != origin})
    assert not elsewhere, f"the console or the docs requested other hosts: {elsewhere}"
    # ReDoc's bundle shows a logo from its vendor's CDN; the page's policy stops it in the
    # browser (the logo hides itself when it cannot load)
    assert all(urlsplit(u).netloc != origin for u in blocked)


def test_the_pages_raised_no_script_error_and_broke_no_policy(console: Console) -> None:
    console.record()
    script_errors = [log["message"] for log in console.logs if log.get("source") == "javascript"]
    assert not script_errors, script_errors
    violations = [log["message"] for log in console.logs
                  if "Content Security Policy" in log["message"] and "cdn.redoc.ly" not in log["message"]]
    assert not violations, violations
