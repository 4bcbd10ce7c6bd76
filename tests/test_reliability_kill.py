"""Kills: SIGKILL a real child process in the middle of an ingest and of an ablation.

The child (tests/support/kill_child.py) holds the database while it works,
so the parent follows its progress lines on stdout and kills it at a random
moment. Afterwards the database must open, and hold each write wholly or not
at all: an ingested run has 0 or all of its samples, an earlier run is
untouched, an ablation's progress count equals its stored results.
(tests/test_resume.py shows a resumed ablation ends equal to an
uninterrupted one; here the point is the database after the kill.)
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import random
import signal
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import AblationSpec, plan
from lib.store import Store
from tests.support import kill_child
from tests.support.reliability_support import copy_db, mini_demo, mini_demo_run_ids

N_SAMPLES = 20_000
KILL_ROUNDS_ANYWHERE = 1     # killed at a random moment of the whole child's life
KILL_ROUNDS_IN_WRITE = 2     # killed at a random moment after it announced the write transaction
N_SMALLER = 12_000           # the replacing round re-ingests run "whole" from the first 12,000 lines


# Children are forked from one fork server per test process that imported lib once (kill_child.PRELOAD): a child
# is still its own process holding the database, SIGKILLed by its pid, and no longer pays about 1 CPU s of imports.
_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload(["tests.support.kill_child", *kill_child.PRELOAD])


class Child:
    """A kill_child process whose progress lines are collected by a thread as they come."""

    def __init__(self, *args: str) -> None:
        lines, self._conn = _FORKS.Pipe(duplex=False)
        self.proc = _FORKS.Process(target=kill_child.serve, args=(list(args), self._conn), daemon=True)
        self.proc.start()
        self._conn.close()   # the child holds the writing end: the reader sees EOF when the child is gone
        self.lines: queue.Queue[tuple[float, list[str]]] = queue.Queue()
        self.seen: list[list[str]] = []
        self._error = ""
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()

    def _read(self, conn: Connection) -> None:
        while True:
            try:
                line = conn.recv()
            except (EOFError, OSError):
                return
            if line.startswith("error "):
                self._error = line
            self.lines.put((time.monotonic(), line.split()))

    def wait_for(self, word: str, timeout: float = 120.0) -> float:
        """Block until the child says `word`; returns when (parent's clock)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                at, words = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"child never said {word!r}; saw {self.seen}; error: {self.stderr()}") from None
            self.seen.append(words)
            if words and words[0] == word:
                return at

    def kill(self) -> None:
        """SIGKILL this child (by its pid) and reap it."""
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.join(timeout=30)
        assert self.proc.exitcode is not None, "the killed child is still running"

    def exit_code(self, timeout: float = 60) -> int | None:
        self.proc.join(timeout=timeout)
        return self.proc.exitcode

    def said(self, word: str) -> bool:
        self.proc.join(timeout=30)
        time.sleep(0.05)
        while not self.lines.empty():
            self.seen.append(self.lines.get()[1])
        return any(w and w[0] == word for w in self.seen)

    def stderr(self) -> str:
        return self._error


# -- ingest -----------------------------------------------------------------------------------------
def _write_big_jsonl(path: Path, n: int, rng: random.Random) -> None:
    words = "retention export webhook snapshot invoice token bucket pipeline ticket sensor daily weekly".split()

    def text(k: int) -> str:
        return " ".join(rng.choice(words) for _ in range(k)) + "."

    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"sample_id": f"big-{i:05d}", "question": text(10), "answer": text(25),
                                 "contexts": [text(20), text(20), text(20)], "ground_truth": text(12),
                                 "faithfulness": round(rng.random(), 4), "context_recall": None}) + "\n")


@dataclass
class Counts:
    runs: int
    samples: int
    scores: int
    metrics: int


def _counts(store: Store, run_id: str) -> Counts:
    cur = store.cursor()
    one = [cur.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).fetchone()[0]
           for t in ("runs", "samples", "sample_scores", "run_metrics")]
    return Counts(*one)


def _assert_whole_or_absent(store: Store, run_id: str, n: int) -> bool:
    """True if the run is there (whole); False if absent; fails if partial."""
    c = _counts(store, run_id)
    if c == Counts(0, 0, 0, 0):
        return False
    assert c == Counts(1, n, 2 * n, 2), f"run {run_id} is half-written: {c}"
    return True


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kill") / "big.jsonl"
    _write_big_jsonl(path, N_SAMPLES, random.Random(20))
    return path


def _earlier_run() -> RunRecord:
    samples = [EvalSample(f"e{i}", "What?", "This.", ("This.",), "This.") for i in range(5)]
    return RunRecord("earlier", datetime(2026, 1, 1), {"k": 1}, {MAIN: samples},
                     [MetricRecord("faithfulness", [SampleResult(s.sample_id, OK, 1.0) for s in samples], "m", None,
                                   None)])


def test_an_ingest_killed_at_any_moment_is_wholly_there_or_wholly_absent(big_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "ingest.duckdb"
    smaller = tmp_path / "smaller.jsonl"    # a new copy of run "whole", for the replacing round
    with open(big_file, encoding="utf-8") as src, open(smaller, "w", encoding="utf-8") as dst:
        for _ in range(N_SMALLER):
            dst.write(src.readline())
    with Store(db) as store:
        store.record_run(_earlier_run())
        before = store.counts()

    # One uninterrupted ingest: how long each phase takes on this machine, and the whole result.
    child = Child("ingest", str(db), str(big_file), "whole")
    t_ready = child.wait_for("ready")
    t_writing = child.wait_for("writing")
    t_done = child.wait_for("committed")
    assert child.exit_code() == 0, child.stderr()
    write_time, life = t_done - t_writing, t_done - t_ready
    with Store(db) as store:
        assert _assert_whole_or_absent(store, "whole", N_SAMPLES)

    rng = random.Random(7)
    plan = [("anywhere", f"killed-{k}", rng.uniform(0, 1.1 * life)) for k in range(KILL_ROUNDS_ANYWHERE)]
    plan += [("in-write", f"killed-{k + KILL_ROUNDS_ANYWHERE}", rng.uniform(0.05, 0.8) * write_time)
             for k in range(KILL_ROUNDS_IN_WRITE)]
    plan.append(("replace", "whole", rng.uniform(0.05, 0.5) * write_time))
    outcomes: list[tuple[str, float, bool, bool]] = []
    whole_n = N_SAMPLES
    for when, run_id, delay in plan:
        replacing = when == "replace"
        child = Child("ingest", str(db), str(smaller if replacing else big_file), run_id)
        child.wait_for("ready" if when == "anywhere" else "writing")
        time.sleep(delay)
        child.kill()
        committed = child.said("committed")
        # The database opens after the kill (DuckDB replays its write-ahead log) and is consistent.
        with Store(db) as store:
            if replacing:   # the old copy whole, or the new copy whole: never a mix, never neither
                c = _counts(store, "whole")
                assert c in (Counts(1, N_SAMPLES, 2 * N_SAMPLES, 2), Counts(1, N_SMALLER, 2 * N_SMALLER, 2)), c
                present = c.samples == N_SMALLER
                whole_n = c.samples
            else:
                present = _assert_whole_or_absent(store, run_id, N_SAMPLES)
                assert _assert_whole_or_absent(store, "whole", whole_n)
            assert _counts(store, "earlier") == Counts(1, 5, 5, 1)
            assert store.samples("earlier") == _earlier_run().samples[MAIN]
        if committed:
            assert present, "the child said it committed, but its write is gone"
        outcomes.append((when, round(delay, 3), committed, present))

    killed_inside = [o for o in outcomes if o[0] != "anywhere" and not o[2]]
    assert len(killed_inside) >= 2, f"fewer than 2 kills landed inside the write transaction: {outcomes}"
    assert any(not o[3] for o in outcomes), f"every killed ingest survived: {outcomes}"
    with Store(db) as store:
        after = store.counts()
        survivors = sum(_assert_whole_or_absent(store, run_id, N_SAMPLES) for _, run_id, _ in plan[:-1])
    assert after["runs"] == before["runs"] + 1 + survivors
    assert after["samples"] == before["samples"] + whole_n + survivors * N_SAMPLES


# -- ablation ---------------------------------------------------------------------------------------
def test_an_ablation_killed_repeatedly_leaves_a_consistent_database_that_resumes(tmp_path: Path) -> None:
    db = copy_db(mini_demo(), tmp_path / "demo.duckdb")
    run_id = mini_demo_run_ids()[1]
    # every sample judged: the kills are checked against the plan's fixed total
    spec = AblationSpec(run_id, ("faithfulness", "context_recall"), ("ground_truth", "contexts"), repeats=3,
                        sequential=False)
    with Store(db) as store:
        total = plan(store, spec).total   # every arm whose prompts blanking changes, in every repeat
    with Store(db) as store:
        before = store.counts()
    rng = random.Random(11)
    stored_after_kill = []
    for _ in range(3):
        child = Child("ablate", str(db), json.dumps(spec.to_dict()))
        child.wait_for("ready")
        child.wait_for("progress")
        time.sleep(rng.uniform(0.0, 0.3))
        child.kill()
        with Store(db) as store:                      # opens after the kill
            row = store.ablation(spec.ablation_id)
            assert row is not None and row["status"] == "running" and row["total"] == total
            results = store.ablation_results(spec.ablation_id)
            assert row["done"] == len(results), "progress count and stored results disagree"
            assert not results.duplicated(["metric", "arm", "rep", "sample_id"]).any()
            assert set(results["status"]) <= {"ok", "excluded"}
            ok = results[results["status"] == "ok"]
            assert ok["score"].between(0, 1).all()
            assert len(results) < total
            after = store.counts()
            for table in ("runs", "samples", "sample_scores", "run_metrics", "prompts"):
                assert after[table] == before[table], f"{table} changed under a killed ablation"
            stored_after_kill.append(len(results))
    assert stored_after_kill == sorted(stored_after_kill), "a killed ablation lost stored results"
    assert stored_after_kill[-1] > stored_after_kill[0] or stored_after_kill[0] > 0

    child = Child("ablate", str(db), json.dumps(spec.to_dict()))
    child.wait_for("finished", timeout=300)
    assert child.exit_code() == 0, child.stderr()
    with Store(db) as store:
        row = store.ablation(spec.ablation_id)
        assert row is not None and row["status"] == "done" and row["done"] == total
        results = store.ablation_results(spec.ablation_id)
        assert len(results) == total and not results.duplicated(["metric", "arm", "rep", "sample_id"]).any()
