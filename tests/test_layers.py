"""The packages of lib/ import one way (issue 15): each imports only itself and the packages below it.

core < store < intake < judging < diagnosis < jobs < presentation < app, cli: the two front ends, the
dashboard (app) and the command line (cli), sit side by side on what both run (jobs) and never import each
other. An import
made only for type checking (under `if TYPE_CHECKING:`) does not count for the
layers; relative imports do, and so does the body of `if not TYPE_CHECKING:`.
Inside a package, no module imports one that imports it back, however lazily.
A module named with a leading underscore (lib/diagnosis/ablation/_plan.py) is private to its package: code
elsewhere in lib, and the pages, import the package's public face (its __init__). Tests may reach inside.
One package convention (issue 42.2, lib/README.md): every name has one import path. An __init__.py is a face
(docstring, imports, __all__); a name it lists is imported from it, any other from its public module.
The Store class grows no part and no method: a new part of the database is a module of functions.
The pages hold no store calls and no SQL: they read through lib.app.loaders.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["core", "store", "intake", "judging", "diagnosis", "jobs", "presentation", "app", "cli"]
ALLOWED = {pkg: set(ORDER[:i + 1]) for i, pkg in enumerate(ORDER)}
ALLOWED["cli"] -= {"app"}   # a front end beside the dashboard: what both run is in lib.jobs


_TREES: dict[tuple[Path, str], ast.Module] = {}


def _parse(path: Path) -> ast.Module:
    """`path`'s syntax tree, parsed once a module for each text it has (the rules below walk lib/ six times over:
    one parse of it is 0.5-0.8 CPU s). The rules only read a tree."""
    text = path.read_text(encoding="utf-8")
    tree = _TREES.get((path, text))
    if tree is None:
        tree = _TREES[(path, text)] = ast.parse(text)
    return tree


@pytest.fixture(scope="module", autouse=True)
def _trees_dropped() -> Iterator[None]:
    """The trees (tens of MB) are freed once this module's tests are done: the worker runs other files after."""
    yield
    _TREES.clear()


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _typing_only(tree: ast.AST) -> set[int]:
    """The nodes only a type checker runs: the body of `if TYPE_CHECKING:`, the else of `if not TYPE_CHECKING:`."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = ast.unparse(node.test).replace("typing.", "")
            branch = node.body if test == "TYPE_CHECKING" else node.orelse if test == "not TYPE_CHECKING" else []
            skip |= {id(n) for b in branch for n in ast.walk(b)}
    return skip


def _imported(path: Path, root: Path = ROOT, *, typing: bool = False) -> set[str]:
    """The modules (dotted names) a module imports, relative imports resolved; with `typing`, type-only ones too.

    `from a.b import c` names a.b.c when that is a module of the tree, else a.b.
    """
    tree = _parse(path)
    skip = set() if typing else _typing_only(tree)
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                is_module = (root / Path(*sub.split("."))).with_suffix(".py").is_file() or \
                    (root / Path(*sub.split(".")) / "__init__.py").is_file()
                found.add(sub if is_module else base)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found - {name}


def _runtime_imports(path: Path, root: Path = ROOT) -> set[str]:
    """The lib packages a module imports at run time (module level or inside functions)."""
    found = set()
    for name in _imported(path, root):
        parts = name.split(".")
        if parts[0] == "lib" and len(parts) > 1 and parts[1] in ORDER:
            found.add(parts[1])
    return found


def _circles(root: Path, package: str) -> list[list[str]]:
    """Import circles among a package's modules, counting lazy and type-only imports (Tarjan's components)."""
    paths = {_module_name(p, root): p for p in sorted((root / Path(*package.split("."))).rglob("*.py"))}
    graph = {m: sorted(_imported(p, root, typing=True) & set(paths)) for m, p in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(part) > 1:
                circles.append(sorted(part))

    for module in graph:
        if module not in index:
            visit(module)
    return circles


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


@pytest.mark.parametrize("package", ORDER)
def test_no_import_circle_inside_a_package(package: str) -> None:
    """A lazy import or a type-only one does not make a circle acceptable: it hides it."""
    assert _circles(ROOT, f"lib.{package}") == []


def _private_reaches(path: Path, root: Path = ROOT) -> list[str]:
    """Our private modules (a `_name` part) a module imports from outside the package that holds them. Another
    tool's privates (inspect_ai's, in the worker that runs in Inspect's environment) are that tool's business."""
    here = _module_name(path, root)
    found = []
    for name in sorted(_imported(path, root, typing=True)):
        parts = name.split(".")
        if parts[0] != "lib":
            continue
        private = [i for i, p in enumerate(parts) if p.startswith("_") and not p.startswith("__")]
        if private and not (here + ".").startswith(".".join(parts[:private[0]]) + "."):
            found.append(name)
    return found


@pytest.mark.parametrize("where", ["lib", "pages"])
def test_code_outside_a_package_imports_only_its_public_face(where: str) -> None:
    """lib.diagnosis.ablation, not lib.diagnosis.ablation._plan: a package's private modules can then be split,
    merged or renamed without touching its users, and sibling packages cannot import each other in a circle
    through a back door (their faces would make the circle, which the test above sees)."""
    files = [*sorted((ROOT / where).rglob("*.py")), *([ROOT / "app.py"] if where == "pages" else [])]
    found = {str(p.relative_to(ROOT)): _private_reaches(p) for p in files}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_public_face_rule_catches_a_reach_inside(tmp_path: Path) -> None:
    for part in ("lib/diagnosis/ablation", "lib/diagnosis/trends", "lib/app"):
        (tmp_path / part).mkdir(parents=True)
        (tmp_path / part / "__init__.py").write_text("")
    (tmp_path / "lib/diagnosis/ablation/_plan.py").write_text("BASELINE = 'baseline'\n")
    (tmp_path / "lib/diagnosis/ablation/_engine.py").write_text("from ._plan import BASELINE\n")
    inside = tmp_path / "lib/diagnosis/ablation/_engine.py"
    sibling = tmp_path / "lib/diagnosis/trends/_noise.py"
    sibling.write_text("def f():\n    from lib.diagnosis.ablation._plan import BASELINE\n")
    outside = tmp_path / "lib/app/x.py"
    outside.write_text("from lib.diagnosis.ablation import _plan\nfrom lib.diagnosis.ablation import BASELINE\n")
    assert _private_reaches(inside, tmp_path) == []
    assert _private_reaches(sibling, tmp_path) == ["lib.diagnosis.ablation._plan"]
    assert _private_reaches(outside, tmp_path) == ["lib.diagnosis.ablation._plan"]


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lib.store import Store\n"
                      "def f():\n    from lib.diagnosis import verdicts\n")
    assert _runtime_imports(module, tmp_path) == {"diagnosis"}


def test_the_rule_sees_relative_imports_and_not_type_checking(tmp_path: Path) -> None:
    (tmp_path / "lib" / "store").mkdir(parents=True)
    module = tmp_path / "lib" / "store" / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nfrom ..app import ui\nif not TYPE_CHECKING:\n"
                      "    from ..cli import parser\nelse:\n    from ..judging import base\n")
    assert _runtime_imports(module, tmp_path) == {"app", "cli"}


def test_the_rule_catches_a_circle_hidden_by_a_lazy_or_type_only_import(tmp_path: Path) -> None:
    package = tmp_path / "lib" / "diagnosis"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from lib.diagnosis.b import x\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import y\n")
    (package / "c.py").write_text("def f():\n    from lib.diagnosis import a\n")
    (package / "d.py").write_text("from . import a\n")
    assert _circles(tmp_path, "lib.diagnosis") == [["lib.diagnosis.a", "lib.diagnosis.b", "lib.diagnosis.c"]]


_SQL = re.compile(r"\b(?:SELECT\b.*\bFROM|INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
                  r"|CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+)?(?:TABLE|VIEW|SCHEMA)|ALTER\s+TABLE|DROP\s+(?:TABLE|VIEW))\b",
                  re.DOTALL)
_RUNS_SQL = {"execute", "executemany", "sql", "query"}   # the DuckDB connection methods that run SQL text


def _sql_in(path: Path) -> list[str]:
    """Where a module holds SQL text or runs SQL on a connection: 'line: what'."""
    tree = _parse(path)
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
    """Every query lives in lib/store (lib/README.md, lib/store/README.md): anywhere else, SQL text or a
    connection's execute is a query the migrations, the Parquet export and the reviewers of lib/store never see."""
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


_JUDGEISH = re.compile(r"judge|\blive\b")   # the names a judge goes by in lib (judge, self._judge, live)


def _judge_lookups(path: Path) -> list[str]:
    """A judge's ability asked for by name (getattr/hasattr on a judge), or a judge-like class (one with a
    `complete`) that forwards every attribute through __getattr__: both invisible to mypy and to a reader."""
    found = []
    for node in ast.walk(_parse(path)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"getattr", "hasattr"}
                and node.args and _JUDGEISH.search(ast.unparse(node.args[0]))):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ClassDef):
            methods = {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
            if {"complete", "__getattr__"} <= methods:
                found.append(f"{node.lineno}: class {node.name} forwards through __getattr__")
    return found


def test_a_judges_abilities_are_typed_never_looked_up_by_name() -> None:
    """Optional abilities are protocols in lib/judging/base.py (HasEndpoint, Stoppable, ReportsOutputMode,
    ChoosesJsonMode, Paced), asked for with isinstance, so mypy checks every use."""
    found = {str(p.relative_to(ROOT)): _judge_lookups(p) for p in sorted((ROOT / "lib").rglob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_judge_rule_catches_a_lookup_and_a_forwarder(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('def stop_of(judge):\n    return getattr(judge, "stop", None)\n'
                      'class Wrapper:\n    def complete(self, request):\n        return request\n'
                      '    def __getattr__(self, name):\n        return 1\n'
                      'def width(settings):\n    return getattr(settings, "concurrency", 1)\n')
    assert sorted(f.split(":")[0] for f in _judge_lookups(module)) == ["2", "3"]


SDK_CALLERS = {"lib.judging.openai_judge", "lib.judging.transport"}   # the only modules that import openai


def test_only_the_modules_that_call_a_paid_judge_import_the_openai_sdk() -> None:
    # The SDK costs 0.4 s to import: every start of the dashboard and of the command line paid it when the batch
    # path (which the pages import) imported the SDK and the live judge at module level.
    names = sorted(_module_name(p) for p in (ROOT / "lib").rglob("*.py"))
    assert set(names) >= SDK_CALLERS
    # then, in the same process (one interpreter and one import of lib, not two: 0.6 CPU s), a caller: the check
    # can see the SDK arrive
    code = ("import importlib, sys\n"
            f"for name in {[n for n in names if n not in SDK_CALLERS]!r}:\n"
            "    importlib.import_module(name)\n"
            "    if 'openai' in sys.modules:\n"
            "        sys.exit(name)\n"
            "import lib.judging.openai_judge\n"
            "print('openai' in sys.modules)\n")
    found = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 0, f"importing {found.stderr.strip() or found.stdout} imported the SDK"
    assert found.stdout.strip() == "True"   # the check can see the SDK arrive


# -- one package convention (issue 42.2) ---------------------------------------------------------------------------
# Every name has one import path. A package's __init__.py is its face: a docstring, imports and `__all__`, nothing
# else (no function, class or constant: the code a reader looks for lives in a module named for it). Outside a
# package, a name its face lists in `__all__` is imported from the face, never from the module behind it; a name
# the face does not list comes from the public module that defines it; a `_module` never (above). A face lists
# only its own package's names, so a name never has two public homes.
def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test).replace("typing.", "") == "TYPE_CHECKING"


def _listed(body: list[ast.stmt]) -> list[str]:
    """The names an __init__'s `__all__` lists."""
    for node in body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            return list(ast.literal_eval(node.value))
    return []


def _logic_in_init(path: Path) -> list[str]:
    """What an __init__.py holds beyond a docstring, imports of the names its `__all__` lists, `__all__` and
    type-only imports: 'line: what'."""
    body = _parse(path).body
    found = []
    for i, node in enumerate(body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            continue
        if isinstance(node, ast.ImportFrom) and (node.module == "__future__" or ast.unparse(node) ==
                                                 "from typing import TYPE_CHECKING"):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            hidden = [a.asname or a.name for a in node.names if (a.asname or a.name) not in _listed(body)]
            found += [f"{node.lineno}: {name} imported, not in __all__ (a second path to it)" for name in hidden]
            continue
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if [ast.unparse(t) for t in targets] == ["__all__"]:
            continue
        if _is_type_checking(node) and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in node.body):
            continue
        found.append(f"{node.lineno}: {ast.unparse(node).splitlines()[0][:60]}")
    return found


def test_an_init_holds_only_a_docstring_imports_and_all() -> None:
    found = {str(p.relative_to(ROOT)): _logic_in_init(p) for p in sorted((ROOT / "lib").rglob("__init__.py"))}
    assert {k: v for k, v in found.items() if v} == {}


def _faces(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """Each package with an `__all__`: each name it lists -> the module it imports that name from (the package
    itself for a submodule it lists, e.g. lib.jobs.job_log)."""
    faces = {}
    for init in sorted((root / "lib").rglob("__init__.py")):
        tree = _parse(init)
        listed = _listed(tree.body)
        if not listed:
            continue
        package = _module_name(init, root)
        source: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                for alias in node.names:
                    source[alias.asname or alias.name] = base
        faces[package] = {name: source.get(name, "") for name in listed}
    return faces


def _reaches_past_a_face(path: Path, root: Path = ROOT, faces: dict[str, dict[str, str]] | None = None) -> list[str]:
    """`from P.m import n` in a module outside package P, where P's face lists n: 'module: name (face)'.

    `faces`: _faces(root), read once by a caller that checks many modules (read per module, it was 1.3 CPU s of
    parsing every __init__ again for each of lib's modules)."""
    faces = _faces(root) if faces is None else faces
    here = _module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(_parse(path)):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
            base = ".".join([*up, *([node.module] if node.module else [])])
        for face, listed in faces.items():
            if base.startswith(face + ".") and not (here + ".").startswith(face + "."):
                found += [f"{base}: {a.name} ({face})" for a in node.names if a.name in listed]
    return found


@pytest.mark.parametrize("where", ["lib", "pages"])
def test_a_name_a_face_lists_is_imported_from_the_face(where: str) -> None:
    """lib.presentation.views.PAGE_TRENDS, not lib.presentation.views.common.PAGE_TRENDS: one path a name."""
    files = [*sorted((ROOT / where).rglob("*.py")), *([ROOT / "app.py"] if where == "pages" else [])]
    faces = _faces()
    found = {str(p.relative_to(ROOT)): _reaches_past_a_face(p, faces=faces) for p in files}
    assert {k: v for k, v in found.items() if v} == {}


def test_a_face_lists_only_its_own_packages_names() -> None:
    """A face re-exporting another package's name gives that name two homes (lib.judging.JudgeReply beside
    lib.core.calls.JudgeReply): which one a reader meets is chance."""
    found = {face: sorted(n for n, src in listed.items() if not (src + ".").startswith(face + "."))
             for face, listed in _faces().items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_face_rules_catch_logic_a_reach_past_and_a_borrowed_name(tmp_path: Path) -> None:
    views = tmp_path / "lib" / "presentation" / "views"
    views.mkdir(parents=True)
    (tmp_path / "lib" / "app").mkdir()
    (views / "__init__.py").write_text('"""Face."""\nfrom typing import TYPE_CHECKING\n'
                                       "from lib.presentation.views.common import PAGE_RUN, PAGE_TRENDS\n"
                                       "if TYPE_CHECKING:\n    from lib.core.calls import Message\n"
                                       "__all__ = ['PAGE_RUN', 'PAGE_TRENDS']\n")
    (views / "common.py").write_text("PAGE_RUN = 'run'\nPAGE_TRENDS = 'trends'\nOTHER = 1\n")
    (views / "run.py").write_text("from lib.presentation.views.common import PAGE_RUN\n")
    (tmp_path / "lib" / "app" / "ui.py").write_text("from lib.presentation.views.common import OTHER, PAGE_TRENDS\n"
                                                   "from lib.presentation.views import PAGE_RUN\n")
    assert _logic_in_init(views / "__init__.py") == []
    assert _reaches_past_a_face(tmp_path / "lib" / "app" / "ui.py", tmp_path) == [
        "lib.presentation.views.common: PAGE_TRENDS (lib.presentation.views)"]
    assert _reaches_past_a_face(views / "run.py", tmp_path) == []   # inside the package: its own modules
    (views / "__init__.py").write_text("from lib.core.calls import Message, Usage\n__all__ = ['Message']\n"
                                       "def __getattr__(name):\n    raise AttributeError(name)\nKNOWN = ('a',)\n")
    assert [f.split(":")[0] for f in _logic_in_init(views / "__init__.py")] == ["1", "3", "5"]   # Usage unlisted
    assert _faces(tmp_path) == {"lib.presentation.views": {"Message": "lib.core.calls"}}


# -- the store's face (issue 42.2) ---------------------------------------------------------------------------------
# One style for the store: `Store` (lib/store/store.py) opens, migrates and locks the database and holds the parts it
# had when this rule was written, each a mixin; every other part of the database is a module of functions that take
# the store first (`from lib.store import history as hs; hs.series(store, series_id)`: history, batches, watch,
# snapshot, copy, ...). So the class grows no mixin and no method: a new query is a function in its part's module, and
# two branches that each add a part never meet on the class's line. The list below may only shrink (a mixin moved to
# functions takes its names out).
STORE_PARTS = ("RunsMixin", "RecordingMixin", "ArchiveMixin", "CallCacheMixin", "AblationsMixin", "LabelsMixin",
               "StoreBase")
STORE_FACE = frozenset({
    # opening and writing (store.py, base.py)
    "close", "cursor", "flush_cache", "lake", "on_close", "transaction",
    # runs, read (runs.py)
    "chance_scores", "counts", "data_version", "filtered_sample_ids", "has_run", "instrument", "latest_scored",
    "metric_history", "paired_steps", "previous_run", "prompt", "prompt_scorers", "prompt_usage", "prompts",
    "replayable_instrument", "resolve_run", "run", "run_fields", "run_ids", "run_metrics", "run_notes", "runs",
    "sample_count", "sample_scores", "samples", "samples_frame",
    "scores_without_passages", "suites", "supported_evidence",
    # runs, recorded, replaced and restored (recording.py, archive.py)
    "archived_runs", "conflicts", "delete_run", "purge_archived", "record_prepared", "record_run", "record_run_parts",
    "record_runs_bulk", "restore_run", "run_footprint",
    # the judge call cache (calls.py)
    "get", "put", "replies",
    # ablations (ablations.py)
    "ablation", "ablation_done_keys", "ablation_failures", "ablation_results", "ablations", "add_ablation_batches",
    "add_ablation_results", "finish_ablation", "forget_results", "job_note", "record_job_note", "run_copy",
    "set_ablation_total", "start_ablation",
    # people's labels (labels.py)
    "add_labels", "calibration_version", "label_history", "labelled_judgings", "labels", "latest_samples",
    "sample_ids_by_content",
})


def _grown(cls: type) -> list[str]:
    """What a store class has beyond the frozen face: its public names not listed, and parts not listed."""
    mro = [c.__name__ for c in cls.__mro__[1:] if c is not object]
    extra_parts = [f"part {name}" for name in mro if name not in (*STORE_PARTS, "Store")]
    return extra_parts + sorted(n for n in dir(cls) if not n.startswith("_") and n not in STORE_FACE)


def _store_not_first(path: Path) -> list[str]:
    """Module-level public functions of a lib/store module that take a store but not as their first argument."""
    found = []
    for node in _parse(path).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            kinds = [ast.unparse(a.annotation) if a.annotation else "" for a in args]
            if any("Store" in k for k in kinds) and "Store" not in kinds[0]:
                found.append(f"{node.lineno}: {node.name}")
    return found


def test_the_store_class_grows_no_part_and_no_method_and_its_functions_take_the_store_first() -> None:
    from lib.store import Store
    from lib.store.parquet import ParquetStore

    assert _grown(Store) == [] and _grown(ParquetStore) == []
    found = {str(p.relative_to(ROOT)): _store_not_first(p) for p in sorted((ROOT / "lib" / "store").glob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_store_rule_catches_a_new_method_a_new_part_and_a_store_taken_second(tmp_path: Path) -> None:
    from lib.store import Store

    class SeriesMixin:
        def series_list(self) -> None: ...

    class Grown(Store, SeriesMixin):
        def series(self) -> None: ...

    assert _grown(Grown) == ["part SeriesMixin", "series", "series_list"]
    module = tmp_path / "history.py"
    module.write_text("def series(series_id: str, store: Store) -> None: ...\n"
                      "def series_list(store: Store, metric: str) -> None: ...\n")
    assert _store_not_first(module) == ["1: series"]
