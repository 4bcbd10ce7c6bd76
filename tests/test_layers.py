"""The packages of lib/ import one way (issue 15): each imports only itself and the packages below it.

core < store < intake < judging < diagnosis < presentation < app, cli. An import
made only for type checking (under `if TYPE_CHECKING:`) does not count. The
pages hold no store calls and no SQL: they read through lib.app.loaders.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["core", "store", "intake", "judging", "diagnosis", "presentation", "app", "cli"]
ALLOWED = {pkg: set(ORDER[:i + 1]) for i, pkg in enumerate(ORDER)}
ALLOWED["cli"] = set(ORDER)   # the CLI, like the dashboard, uses the job runner and the job log in lib.app


def _runtime_imports(path: Path) -> set[str]:
    """The lib packages a module imports at run time (module level or inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + ([f"{node.module}.{a.name}" for a in node.names] if node.module == "lib" else [])
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "lib" and len(parts) > 1 and parts[1] in ORDER:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("package", ORDER)
def test_a_package_imports_only_itself_and_the_packages_below_it(package: str) -> None:
    wrong = {str(p.relative_to(ROOT)): sorted(_runtime_imports(p) - ALLOWED[package])
             for p in sorted((ROOT / "lib" / package).rglob("*.py"))}
    assert {k: v for k, v in wrong.items() if v} == {}


@pytest.mark.parametrize("page", [*sorted(p.name for p in (ROOT / "pages").glob("*.py")), "../app.py"])
def test_a_page_reads_through_lib_and_never_the_store_itself(page: str) -> None:
    text = (ROOT / "pages" / page).read_text(encoding="utf-8")
    assert "open_store(" not in text and ".execute(" not in text and "lib.store" not in text
    assert re.search(r"\bstore\.\w+\(", text) is None   # no store method called from a page


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lib.store import Store\n"
                      "def f():\n    from lib.diagnosis import verdicts\n")
    assert _runtime_imports(module) == {"diagnosis"}
