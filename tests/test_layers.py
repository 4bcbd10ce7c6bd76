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
    assert "ctx.store" not in text   # not even handed on: the page calls lib.app, which holds the store
    assert re.search(r"\bstore\.\w+\(", text) is None   # no store method called from a page


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lib.store import Store\n"
                      "def f():\n    from lib.diagnosis import verdicts\n")
    assert _runtime_imports(module) == {"diagnosis"}


_SQL = re.compile(r"\b(?:SELECT\b.*\bFROM|INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
                  r"|CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+)?(?:TABLE|VIEW|SCHEMA)|ALTER\s+TABLE|DROP\s+(?:TABLE|VIEW))\b",
                  re.DOTALL)
_RUNS_SQL = {"execute", "executemany", "sql", "query"}   # the DuckDB connection methods that run SQL text


def _sql_in(path: Path) -> list[str]:
    """Where a module holds SQL text or runs SQL on a connection: 'line: what'."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
            found.append(f"{node.lineno}: SQL text {node.value.strip()[:40]!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RUNS_SQL:
            found.append(f"{node.lineno}: {ast.unparse(node.func)}()")
    return found


def _outside_the_store() -> list[Path]:
    lib = [p for p in sorted((ROOT / "lib").rglob("*.py")) if "store" not in p.relative_to(ROOT / "lib").parts[:1]]
    return [*lib, *sorted((ROOT / "pages").glob("*.py")), ROOT / "app.py"]


def test_no_sql_outside_lib_store() -> None:
    """Every query lives in lib/store (DESIGN.md section 3): anywhere else, SQL text or a connection's execute is
    a query the migrations, the Parquet export and the reviewers of lib/store never see."""
    found = {str(p.relative_to(ROOT)): _sql_in(p) for p in _outside_the_store()}
    assert {k: v for k, v in found.items() if v} == {}


def test_every_table_is_made_by_a_migration() -> None:
    """A table is made in lib/store/schema.py's named migrations, never lazily by the module that uses it."""
    makers = {str(p.relative_to(ROOT)) for p in sorted((ROOT / "lib").rglob("*.py"))
              if re.search(r"CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS", p.read_text(encoding="utf-8"))}
    assert makers == {"lib/store/schema.py"}


def test_the_sql_rule_catches_a_query(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('def n(store):\n    return store.cursor().execute("SELECT count(*) FROM samples").fetchone()\n'
                      'TEXT = "Select a run from the list"\n')
    assert [f.split(":")[0] for f in _sql_in(module)] == ["2", "2"]
