"""Shared fixtures: a clean environment, the demo database built once, small demo stores, fresh files, a loopback
judge server, the browser (tests/support/browser.py). A test file never defines one of these again
(tests/test_shared_fixtures.py)."""

from __future__ import annotations

import fcntl
import functools
import gc
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest
from _pytest import unraisableexception

from tests.support import browser as browser_support
from tests.support import tool_runs as _tool_paths  # noqa: F401  (reads the paths CI exported before tests clear them)
from tests.support.browser import (  # noqa: F401  (fixtures: `browser`, `tabs`, `page`)
    _module_tab,
    module_browser,
    module_tabs,
    tab_page,
)
from tests.support.cpu_profile import pytest_runtest_protocol  # noqa: F401  (a hook: EVALDRIFT_CPU_PROFILE)
from tests.support.openai_server import OpenAIServer

if TYPE_CHECKING:
    from lib.store import Store

ENV_PREFIXES = ("OPENAI_", "EVALDRIFT_")
ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("EVALDRIFT_TEST_CACHE") or Path(tempfile.gettempdir()) / "evaldrift-test-cache")


def _scan_components_once() -> None:
    """Each new AppTest has Streamlit read the metadata of every installed distribution, looking for custom
    components (0.13 CPU s here; 79 AppTests a run). What is installed does not change while the tests run, so
    one scan serves a process. The dashboard's own server scans once at start, as it always has."""
    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


@pytest.fixture(scope="session", autouse=True)
def _components_scanned_once() -> None:
    """In the processes that run tests: xdist's controller imports this file too, and runs none (lib and Streamlit
    are imported where a fixture or test needs them, not here: 1.6 CPU s of the controller's, 0.35 s left)."""
    _scan_components_once()


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test can reach a real service or the developer's database through the environment."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIXES):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _fresh_output_modes() -> Iterator[None]:
    """Each test probes its servers' output modes afresh: a loopback port reused by a later test's server is
    another server, whatever the process-wide book remembers about the port. So is the concurrency it
    sustained (lib.judging.pacing.LIMITS)."""
    from lib.judging.pacing import LIMITS
    from lib.judging.structured import BOOK

    BOOK.clear()
    LIMITS.clear()
    yield
    BOOK.clear()
    LIMITS.clear()


@functools.cache
def _code_key() -> str:
    """A hash of what builds the databases below (lib/ and the DuckDB version): same key, same files. Read once
    per session, so a file edited while tests run does not make the session build a second demo."""
    digest = hashlib.sha256(duckdb.__version__.encode())
    for path in sorted((ROOT / "lib").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _drop_stale(entries: Iterable[Path]) -> None:
    """Remove the cache entries unused for 2 hours. Other processes (xdist workers, another checkout's tests) clean
    the same folder, each under its own entry's lock: an entry listed here may be gone when it is read or removed,
    which is what was wanted (tests/test_test_cache.py)."""
    for stale in entries:
        try:
            if time.time() - stale.stat().st_mtime > 7_200:
                shutil.rmtree(stale) if stale.is_dir() else stale.unlink(missing_ok=True)
        except FileNotFoundError:
            continue


def built_once(name: str, build: Callable[[Path], None]) -> Path:
    """`build(path)`'s database, made once for this code and shared: by every test session on this machine and
    every xdist worker (a file lock: one builds, the others wait and copy). Never open the returned file: copy it.

    The cache lives in EVALDRIFT_TEST_CACHE (default: <tmp>/evaldrift-test-cache); entries unused for 2 hours go.
    """
    CACHE.mkdir(parents=True, exist_ok=True)
    target = CACHE / f"{name}-{_code_key()}.duckdb"
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not target.exists():
                _drop_stale([*CACHE.glob("*.duckdb"), *CACHE.glob("*.building.lock")])
                building = target.with_suffix(f".building-{os.getpid()}")
                building.unlink(missing_ok=True)
                build(building)
                building.rename(target)
                Path(f"{building}.building.lock").unlink(missing_ok=True)   # build_demo's, for this path only
            os.utime(target)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target


def _private_copy(source: Path, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    path = tmp_path_factory.mktemp(name) / "demo.duckdb"
    shutil.copy(source, path)
    return path


def _build_demo(path: Path, **options: int) -> None:
    from lib.jobs._demo import build_demo

    build_demo(path, **options)


def _rejudge_all(path: Path, demo: Path) -> None:
    from lib.diagnosis.rejudge import RejudgeSpec, run_rejudge, trusted_instrument
    from lib.judging import OfflineJudge
    from lib.store import Store

    shutil.copy(demo, path)
    with Store(path) as store:
        trusted = trusted_instrument(store, "faithfulness")
        spec = RejudgeSpec("faithfulness", tuple(store.run_ids()), trusted.template, trusted.binding,
                           label=trusted.source)
        run_rejudge(store, spec, OfflineJudge("offline-lexical-v2", noise=0.03))


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The full demo database, built once (built_once) and copied for this session. Read-only: open with Store,
    close after."""
    return _private_copy(built_once("demo", _build_demo), tmp_path_factory, "demo")


SMALL_MAX = 6   # the largest small demo a test asks for (test_browser_history); a smaller one is its first runs


def _first_runs(path: Path, n_runs: int) -> None:
    """The demo's first `n_runs` nightly runs, cut from the SMALL_MAX-run build: a run is judged with its own seed
    whatever follows it, and so few runs hold no episode to re-judge, so the cut holds what build_demo(n_runs=...)
    would (every stored value but timestamps and copy ids, compared 6 December 2026) without judging them again."""
    from lib.jobs._demo import run_plans

    shutil.copy(_small_build(SMALL_MAX), path)
    keep = [p.run_id for p in run_plans(n_runs)]
    with duckdb.connect(str(path)) as con:
        for table in ("sample_scores", "samples", "run_metrics", "runs"):
            con.execute(f"DELETE FROM {table} WHERE run_id NOT IN (SELECT unnest(?::VARCHAR[]))", [keep])


def _small_build(n_runs: int) -> Path:
    return built_once(f"demo-{n_runs}-runs", lambda path: _build_demo(path, n_runs=n_runs, workers=1))


def small_demo(n_runs: int, dest: Path) -> Path:
    """A copy at `dest` of the demo's first `n_runs` nightly runs (what build_demo(n_runs=...) writes), made once per
    code (built_once) for every file and session that asks for the same size; `dest` is the caller's to write."""
    source = (built_once(f"demo-first-{n_runs}-runs", lambda path: _first_runs(path, n_runs)) if n_runs < SMALL_MAX
              else _small_build(n_runs))
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, dest)
    return dest


@pytest.fixture
def small_demo_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store on a private copy of the demo's first nightly runs (small_demo): as many as the test module's
    `SMALL_RUNS` says (default 4), for a test that re-judges or ablates a whole history and must stay cheap."""
    from lib.store import Store

    with Store(small_demo(getattr(request.module, "SMALL_RUNS", 4), tmp_path / "small.duckdb")) as store:
        yield store


@pytest.fixture(scope="session")
def rejudged_demo_db(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo with faithfulness re-judged over all 90 runs by its trusted instrument (the fixed,
    projected template), built once like the demo. Read-only: copy it before writing."""
    source = built_once("rejudged", lambda path: _rejudge_all(path, built_once("demo", _build_demo)))
    return _private_copy(source, tmp_path_factory, "rejudged")


@pytest.fixture
def fresh_db(tmp_path: Path) -> Path:
    """A path for a new DuckDB file (not yet created)."""
    return tmp_path / "evaldrift.duckdb"


def offline_responder(body: dict) -> str:
    """Answer a chat.completions body the way the offline judge answers the same messages."""
    from lib.core.calls import JudgeRequest, Message
    from lib.judging import OfflineJudge

    judge = OfflineJudge()
    request = JudgeRequest(
        model=judge.model,
        messages=tuple(Message(m["role"], m["content"]) for m in body["messages"]),
        temperature=float(body.get("temperature") or 0.0),
        seed=body.get("seed"),
    )
    return judge.complete(request).text


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A loopback OpenAI-compatible server whose model is the offline judge."""
    server = OpenAIServer(offline_responder).start()
    try:
        yield server
    finally:
        server.stop()


# -- files the real tools write, once per session (tests/support/tool_runs.py) ----------------------------------
@pytest.fixture(scope="session")
def tool_judge() -> Iterator[OpenAIServer]:
    """The loopback judge every tool run is pointed at (answering models and graders)."""
    from tests.support.tool_runs import respond_all

    with OpenAIServer(respond_all) as server:
        yield server


def _tool_outputs(kind: str, tmp_path_factory: pytest.TempPathFactory, server: OpenAIServer) -> dict[str, Path]:
    from tests.support import tool_runs

    where, build = {"inspect": (tool_runs.INSPECT_PYTHON, tool_runs.build_inspect),
                    "promptfoo": (tool_runs.PROMPTFOO_DIR, tool_runs.build_promptfoo),
                    "ragas": (tool_runs.RAGAS_PYTHON, tool_runs.build_ragas)}[kind]
    env = tool_runs.tool_env(*where)
    return _files_once_per_run(kind, tmp_path_factory, lambda out: build(env, server.base_url, out),
                               key=tool_runs.build_key(env))


def _files_once_per_run(kind: str, tmp_path_factory: pytest.TempPathFactory,
                        build: Callable[[Path], dict[str, Path]], key: str = "") -> dict[str, Path]:
    """`_once_per_run` for a build that returns its files by name."""
    paths = _once_per_run(kind, tmp_path_factory, lambda out: {k: str(v) for k, v in build(out).items()}, key)
    return {k: Path(v) for k, v in paths.items()}


def _once_per_run(kind: str, tmp_path_factory: pytest.TempPathFactory, build: Callable[[Path], dict],
                  key: str = "") -> dict:
    """`build(folder)`'s result (JSON: the paths of the files it wrote), made once and shared read-only: with a
    `key` (tests/support/tool_runs.py build_key: the sources that make the files and the tool's environment), once
    per machine for that key, by every test run and xdist worker (the first to ask builds, under a file lock, the
    others wait and read the same files; the five tools' runs cost about 42 CPU s and 9 minutes of wall time at
    load 20, 6 December 2026); without, once per test run under xdist, else in this session's temporary folder."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")   # the same in every xdist worker of one test run
    if not (key or run):
        return build(tmp_path_factory.mktemp(f"{kind}-runs"))
    name = f"{kind}-{key or run}"
    folder = CACHE / "tool-runs"
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / f"{name}.json"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not (manifest.exists() and any(folder.glob(f"{name}-*"))):   # never built, or its files removed
                _drop_stale(folder.iterdir())
                out = folder / f"{name}-{os.getpid()}"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                manifest.write_text(json.dumps(build(out)), encoding="utf-8")
            for used in (manifest, *folder.glob(f"{name}-*")):   # in use: not stale (_drop_stale)
                os.utime(used)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    result: dict = json.loads(manifest.read_text(encoding="utf-8"))
    return result


@pytest.fixture(scope="session")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory, tool_judge: OpenAIServer) -> dict[str, Path]:
    """Logs the real Inspect AI wrote, once per machine for their key (tests/support/tool_runs.py INSPECT_RUNS)."""
    return _tool_outputs("inspect", tmp_path_factory, tool_judge)


@pytest.fixture(scope="session")
def promptfoo_results(tmp_path_factory: pytest.TempPathFactory, tool_judge: OpenAIServer) -> dict[str, Path]:
    """results.json files the real promptfoo wrote in this session."""
    return _tool_outputs("promptfoo", tmp_path_factory, tool_judge)


@pytest.fixture(scope="session")
def ragas_results(tmp_path_factory: pytest.TempPathFactory, tool_judge: OpenAIServer) -> dict[str, Path]:
    """CSV files the real Ragas evaluate() wrote in this session."""
    return _tool_outputs("ragas", tmp_path_factory, tool_judge)


# -- DeepEval and MLflow, once per session (tests/support/more_tools.py) -----------------------------------------
@pytest.fixture(scope="session")
def more_tools_judge() -> Iterator[OpenAIServer]:
    """The loopback judge the DeepEval and MLflow runs are pointed at (their graders' prompts, and all others)."""
    from tests.support.more_tools import respond_more

    with OpenAIServer(respond_more) as server:
        yield server


@pytest.fixture(scope="session")
def deepeval_runs(tmp_path_factory: pytest.TempPathFactory, more_tools_judge: OpenAIServer) -> dict[str, Path]:
    """Test run files the real DeepEval wrote in this session (tests/support/more_tools.py DEEPEVAL_RUNS)."""
    from tests.support import more_tools, tool_runs

    python = tool_runs.tool_env(*more_tools.DEEPEVAL_PYTHON)
    return _files_once_per_run("deepeval", tmp_path_factory,
                               lambda out: more_tools.build_deepeval(python, more_tools_judge.base_url, out),
                               key=tool_runs.build_key(python))


@pytest.fixture(scope="session")
def mlflow_runs(tmp_path_factory: pytest.TempPathFactory, more_tools_judge: OpenAIServer
                ) -> tuple[Path, dict[str, str]]:
    """The SQLite tracking store the real mlflow.genai.evaluate wrote in this session, and its runs' ids by name
    (tests/support/more_tools.py MLFLOW_RUNS)."""
    from tests.support import more_tools, tool_runs

    python = tool_runs.tool_env(*more_tools.MLFLOW_PYTHON)

    def build(out: Path) -> dict:
        store, ids = more_tools.build_mlflow(python, more_tools_judge.base_url, out)
        return {"store": str(store), "ids": ids}

    built = _once_per_run("mlflow", tmp_path_factory, build, key=tool_runs.build_key(python))
    return Path(built["store"]), dict(built["ids"])


# -- the order files run in ----------------------------------------------------------------------------------------
# The files that take longest (measured: browser and `streamlit run` files, real tool runs), longest first. .ci/run
# hands whole files to the two xdist workers in collection order (--dist loadfile --no-loadscope-reorder), so
# these start at once and the short files fill in behind them, instead of a long file starting last on one
# worker while the other idles. A file not listed runs after these, in its usual order.
HEAVY_FIRST = (
    "test_e2e.py", "test_reliability_concurrency.py", "test_browser_links.py", "test_security.py",
    "test_first_start.py", "test_browser_history.py", "test_login.py", "test_ragas_scorer.py",
    "test_pages_journeys.py", "test_import_page.py", "test_tool_imports.py",
    "test_browser_labels.py", "test_cli_while_dashboard.py", "test_reliability_kill.py", "test_databases.py",
    "test_import_page_more_tools.py", "test_tool_ablations.py", "test_more_tool_imports.py", "test_ablation.py",
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cold_ragas: run the Ragas adapter on the Ragas Python itself, not a warm one")
    browser_support.KEPT = browser_support._Kept()   # one Chromium a test process, kept from module to module
    browser_support.WARM_SERVERS = True   # dashboards forked from one warm interpreter a test process (1.2 CPU s less)
    # The cyclic collector's youngest generation runs every 50,000 allocations instead of 700: the tests build
    # pandas frames and results by the hundred thousand, and six CPU-heavy files took 54 CPU s against 59 s. The test
    # processes only: the dashboards and CLI processes the tests start keep Python's defaults.
    gc.set_threshold(50_000, 20, 100)
    unraisableexception.gc_collect_harder = _collect_until_none_freed


def _collect_until_none_freed(iterations: int) -> None:
    """pytest ends each test process with 5 full collections (to surface exceptions raised in finalizers); on a test
    process's heap each costs about 150 ms of CPU, and after one that frees nothing the next finds nothing either."""
    for _ in range(iterations):
        if not gc.collect():
            return


def pytest_sessionfinish(session: pytest.Session) -> None:
    if browser_support.KEPT is not None:
        browser_support.KEPT.close()
    browser_support.end_warm_python()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the HEAVY_FIRST files first, each file's tests still together and in their own order."""
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    order = {id(item): n for n, item in enumerate(items)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), order[id(item)]))
