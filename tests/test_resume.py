"""An ablation killed halfway (a real process, SIGKILL) resumes to exactly the result of an uninterrupted run."""

from __future__ import annotations

import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from lib.core.calls import JudgeReply, JudgeRequest
from lib.core.records import MAIN
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.diagnosis.ablation import plan as make_plan
from lib.diagnosis.trends import lint_status
from lib.judging import OfflineJudge
from lib.store import Store
from tests.support.ablate_child import make_judge, resume_spec

ROOT = Path(__file__).resolve().parent.parent
KEY = ["metric", "arm", "rep", "sample_id"]


class CountingJudge:
    concurrency = 1
    cacheable = False

    def __init__(self, inner: OfflineJudge) -> None:
        self._inner = inner
        self.model = inner.model
        self.calls = 0

    def complete(self, request: JudgeRequest) -> JudgeReply:
        self.calls += 1
        return self._inner.complete(request)


def leaky_run(db: Path) -> str:
    """A run whose faithfulness template lints with ground_truth (so the result has a LEAK to reproduce)."""
    with Store(db) as store:
        lint = lint_status(store)
        flagged = set(lint.loc[lint["findings"] != "", "prompt_hash"])
        history = store.metric_history(suite=MAIN, metrics=["faithfulness"])
    return history.loc[history["prompt_hash"].isin(flagged), "run_id"].iloc[0]


def planned_units(store: Store, spec: AblationSpec) -> list[tuple[str, str, int, str]]:
    """Every (metric, arm, repeat, sample) of the spec, in the order a one-at-a-time judge works through them (the
    arms the plan measures: the spec's, and the judge's floor arm when it is judged as one of its own)."""
    ids = [s.sample_id for s in store.samples(spec.run_id, spec.suite)][: spec.limit]
    p = make_plan(store, spec)
    return [(m, arm, rep, sid) for m in spec.metrics for arm in p.measured_arms(m) for rep in range(spec.repeats)
            for sid in ids]


def keys(frame: pd.DataFrame) -> list[tuple[str, str, int, str]]:
    return [(m, a, int(r), s) for m, a, r, s in frame[KEY].itertuples(index=False)]


def start_and_kill_midway(db: Path, run_id: str) -> int:
    """Run the child on `db`, SIGKILL it once it reports a quarter done; return the last reported count."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.support.ablate_child", str(db), run_id, "--sleep", "0.001"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    reported = 0
    try:
        while True:
            line = lines.get(timeout=60)
            if line is None:
                pytest.fail(f"the child ended before it was killed: {child.stderr.read()}")  # type: ignore[union-attr]
            if line.startswith("progress"):
                _, done, total = line.split()
                reported = int(done)
                if 4 * reported >= int(total):
                    child.kill()  # SIGKILL: no cleanup, no final flush
                    break
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)
    assert child.returncode == -9
    return reported


def test_an_ablation_killed_halfway_resumes_to_the_uninterrupted_result(demo_db: Path, tmp_path: Path) -> None:
    run_id = leaky_run(demo_db)
    killed, whole = tmp_path / "killed.duckdb", tmp_path / "whole.duckdb"
    shutil.copy(demo_db, killed)
    shutil.copy(demo_db, whole)
    spec = resume_spec(run_id)

    reported = start_and_kill_midway(killed, run_id)

    with Store(killed) as store:  # reopens after the kill
        row = store.ablation(spec.ablation_id)
        assert row is not None and row["status"] == "running"
        partial = store.ablation_results(spec.ablation_id)
        # everything reported was durable, and the run was really cut short
        assert reported <= len(partial) < row["total"]
        assert row["done"] == len(partial)
        assert not partial.duplicated(KEY).any()
        # no holes: what is stored is exactly the first units of the plan
        units = planned_units(store, spec)
        assert len(units) == row["total"]
        assert set(keys(partial)) == set(units[: len(partial)])

        judge = CountingJudge(make_judge())
        resumed = run_ablation(store, spec, judge)
        final = store.ablation_results(spec.ablation_id)
        assert store.ablation(spec.ablation_id)["status"] == "done"  # type: ignore[index]

    assert resumed is not None
    assert len(final) == row["total"] and not final.duplicated(KEY).any()
    # finished samples were not redone: every call made now belongs to a result stored now
    done_before = set(keys(partial))
    fresh = final[[k not in done_before for k in keys(final)]]
    assert judge.calls == int(fresh["calls"].sum())
    assert len(fresh) == row["total"] - len(partial)

    with Store(whole) as store:
        uninterrupted = run_ablation(store, spec, make_judge())
        expected = store.ablation_results(spec.ablation_id)
    assert uninterrupted is not None

    assert [(v.metric, v.arm, v.kind) for v in resumed.verdicts] == [
        (v.metric, v.arm, v.kind) for v in uninterrupted.verdicts]
    assert "LEAK" in {v.kind for v in resumed.verdicts}
    for got, want in zip(resumed.verdicts, uninterrupted.verdicts, strict=True):
        for name in ("delta", "lo", "hi", "noise", "baseline", "ablated"):
            assert getattr(got, name) == pytest.approx(getattr(want, name), abs=1e-12)
    assert resumed.four is not None and uninterrupted.four is not None
    assert resumed.four.as_wired == pytest.approx(uninterrupted.four.as_wired, abs=1e-12)
    cols = [*KEY, "status", "score", "verdicts"]
    pd.testing.assert_frame_equal(final[cols].reset_index(drop=True), expected[cols].reset_index(drop=True),
                                  check_exact=False, atol=1e-12)


def test_a_stopped_ablation_keeps_its_work_and_resumes_without_redoing_it(demo_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "d.duckdb"
    shutil.copy(demo_db, db)
    with Store(db) as store:
        spec = AblationSpec(store.run_ids()[0], ("faithfulness",), ("contexts",), repeats=2, limit=30,
                            sequential=False)
        judge = CountingJudge(make_judge())
        assert run_ablation(store, spec, judge, should_stop=lambda: judge.calls >= 50) is None
        first = judge.calls
        kept = store.ablation_results(spec.ablation_id)
        # (baseline, contexts, the positive control) x 2 x 30; the joint arm's prompts do not change
        assert 0 < len(kept) < 3 * 2 * 30
        again = CountingJudge(make_judge())
        result = run_ablation(store, spec, again)
        final = store.ablation_results(spec.ablation_id)
    assert result is not None
    assert len(final) == 3 * 2 * 30
    assert first + again.calls == int(final["calls"].sum())
