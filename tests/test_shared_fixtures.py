"""Tests share their fixtures rather than copy them (issue 42): a browser, a small demo store, a poll.

The shared ones are the fixtures of tests/conftest.py and tests/support/browser.py (`browser`, `tabs`, `page`,
`small_demo_store`, `demo_db`, ...) and the helpers of tests/support/polling.py (`wait_for`, `rerun_until`). A test
file that defines one of those names again, or launches Chromium itself (Playwright's `sync_playwright`,
`launch_chromium`, a fixture of its own around `chromium()`), fails here: a copy drifts from the original (the
kept Chromium, the reduced-motion context, the tab reuse measured in tests/README.md are the original's).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SHARED = (TESTS / "conftest.py", TESTS / "support" / "browser.py", TESTS / "support" / "polling.py")
# tests/test_browser_settle.py tests the launcher itself: it opens chromium() blocks to see the kept browser at work
LAUNCHER_TESTS = {"test_browser_settle.py"}
LAUNCHES = {"sync_playwright", "launch_chromium", "launch_persistent_context", "connect_over_cdp"}


def _fixture_name(node: ast.FunctionDef) -> str | None:
    """The name a function is offered under as a fixture (its `name=`, else its own), or None."""
    for deco in node.decorator_list:
        call = deco if isinstance(deco, ast.Call) else None
        target = ast.unparse(call.func if call else deco)
        if target in {"pytest.fixture", "fixture"}:
            named = [k.value for k in (call.keywords if call else []) if k.arg == "name"]
            return str(ast.literal_eval(named[0])) if named else node.name
    return None


def shared_names(paths: tuple[Path, ...] = SHARED) -> tuple[set[str], set[str]]:
    """The fixtures the shared files offer, and the public helpers of the polling module."""
    fixtures, helpers = set(), set()
    for path in paths:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                fixture = _fixture_name(node)
                if fixture:
                    fixtures.add(fixture)
                elif path.name == "polling.py" and not node.name.startswith("_"):
                    helpers.add(node.name)
    return fixtures, helpers


def copies_in(path: Path, shared: tuple[set[str], set[str]]) -> list[str]:
    """'line: what' for each shared fixture or helper a test file defines again and each browser it launches."""
    fixtures, helpers = shared
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            name = _fixture_name(node)
            if (name or "") in fixtures or (name is None and node.name in helpers):
                found.append(f"{node.lineno}: defines {name or node.name} (shared)")
            if name and any(isinstance(n, ast.Call) and ast.unparse(n.func).endswith("chromium")
                                           for n in ast.walk(node)):
                found.append(f"{node.lineno}: fixture {name} opens chromium() (use the `browser` fixture)")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = ast.unparse(node.func)
            if func.rpartition(".")[2] in LAUNCHES or func.endswith("chromium.launch"):
                found.append(f"{node.lineno}: launches a browser ({func})")
    return found


def test_no_test_file_copies_a_shared_fixture_or_launches_its_own_browser() -> None:
    shared = shared_names()
    assert {"browser", "tabs", "page", "small_demo_store"} <= shared[0] and {"wait_for", "rerun_until"} <= shared[1]
    found = {p.name: copies_in(p, shared) for p in sorted(TESTS.glob("test_*.py")) if p.name not in LAUNCHER_TESTS}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_rule_catches_a_copied_browser_fixture_a_launch_and_a_poll(tmp_path: Path) -> None:
    planted = tmp_path / "test_planted.py"
    planted.write_text(
        "import pytest\nfrom playwright.sync_api import sync_playwright\n"
        "from tests.support.browser import chromium\n"
        "@pytest.fixture(scope='module')\ndef browser():\n    with chromium() as b:\n        yield b\n"
        "@pytest.fixture(name='chrome')\ndef my_browser():\n    with chromium() as b:\n        yield b\n"
        "def wait_for(check, timeout):\n    return check()\n"
        "def test_x():\n    with sync_playwright() as pw:\n        pw.chromium.launch()\n"
        "def test_y(browser):\n    with chromium() as b:\n        pass\n"   # a test borrowing it: allowed
        "def page(db):\n    return db\n")                                # a helper named like a fixture: allowed
    assert copies_in(planted, shared_names()) == [
        "5: defines browser (shared)", "5: fixture browser opens chromium() (use the `browser` fixture)",
        "9: fixture chrome opens chromium() (use the `browser` fixture)", "12: defines wait_for (shared)",
        "15: launches a browser (sync_playwright)", "16: launches a browser (pw.chromium.launch)"]
