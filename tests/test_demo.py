"""The demo history: the seeded eval set, and the database the session builds once (read-only here)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from lib.core.prompts import PROJECTED, REPLAY
from lib.core.records import CANARY, MAIN
from lib.jobs._demo import N_CANARY, N_RUNS, N_SAMPLES, build_demo, demo_samples, run_plans
from lib.store import Store

# of the cells below; the CSV digest pinned before it (f1d391dc...ed7831, pandas to_csv of the same frames) and this
# one were read from one demo build (both held): repr'd cells cost 1.0 CPU s where to_csv took 3.0
PINNED_DIGEST = "84a3d45ebd8300476cb64583b51ba3a6bdc8de2f8c282580f9af9aa11254730f"
PINNED_FAITHFULNESS = {0: 0.784984, 44: 0.9208, 89: 0.651603}


@pytest.fixture(scope="module")
def history(demo_db: Path) -> pd.DataFrame:
    """Main-suite metric history, one row per run, one column per metric, indexed by run position."""
    with Store(demo_db) as store:
        frame = store.metric_history(suite=MAIN)
    scores = frame.pivot(index="run_id", columns="metric", values="score").sort_index()
    return scores.reset_index(drop=True)


@pytest.fixture(scope="module")
def faithfulness_rows(demo_db: Path) -> pd.DataFrame:
    with Store(demo_db) as store:
        frame = store.metric_history(suite=MAIN, metrics=["faithfulness"])
    return frame.sort_values("started_at").reset_index(drop=True)


def _changes(values: pd.Series) -> list[int]:
    """Run positions where a value differs from the run before."""
    return [i for i in range(1, len(values)) if values.iloc[i] != values.iloc[i - 1]]


# -- the eval set --------------------------------------------------------------------------

def test_demo_set_has_400_samples_and_12_canaries_with_unique_ids() -> None:
    main, canary = demo_samples()
    assert (len(main), len(canary)) == (400, 12) == (N_SAMPLES, N_CANARY)
    ids = [d.sample.sample_id for d in main] + [s.sample_id for s in canary]
    assert len(set(ids)) == 412


def test_demo_set_is_the_same_for_the_same_seed_and_differs_for_another() -> None:
    assert demo_samples(7) == demo_samples(7)
    assert demo_samples(8)[0][0].sample != demo_samples(7)[0][0].sample


def test_regressed_retrieval_changes_only_contexts() -> None:
    main, _ = demo_samples()
    changed = [d for d in main if d.regressed != d.sample]
    assert 0.2 * N_SAMPLES < len(changed) < 0.4 * N_SAMPLES  # about 30% lose a supporting passage
    for d in changed:
        assert d.regressed.contexts != d.sample.contexts
        assert (d.regressed.question, d.regressed.answer, d.regressed.ground_truth) == (
            d.sample.question, d.sample.answer, d.sample.ground_truth)


def test_run_plans_follow_the_event_table() -> None:
    plans = run_plans()
    assert len(plans) == N_RUNS == 90
    assert [p.faithfulness_binding for p in plans[28:32]] == [PROJECTED, PROJECTED, REPLAY, REPLAY]
    assert plans[74].faithfulness_binding == REPLAY and plans[75].faithfulness_binding == PROJECTED
    assert (plans[57].regressed, plans[58].regressed) == (False, True)
    assert len({p.run_id for p in plans}) == 90


def test_build_demo_returns_timing_figures(tmp_path: Path) -> None:
    timings = build_demo(tmp_path / "one.duckdb", n_runs=1, workers=1)
    # one run judges five metrics over 400 samples, plus faithfulness over 12 canaries
    assert timings["runs"] == 1
    assert timings["judged"] == 5 * 400 + 12
    assert timings["seconds"] > 0
    assert timings["per_second"] == pytest.approx(timings["judged"] / timings["seconds"])
    assert not (tmp_path / "one.duckdb.building").exists()
    with Store(tmp_path / "one.duckdb") as store:
        assert store.counts()["runs"] == 1


# -- the built database ---------------------------------------------------------------------

def test_demo_database_holds_90_runs_of_400_main_and_12_canary_samples(demo_db: Path) -> None:
    with Store(demo_db) as store:
        run_ids = store.run_ids()
        counts = store.counts()
        first, last = run_ids[0], run_ids[-1]
        sizes = [(len(store.samples(r, MAIN)), len(store.samples(r, CANARY))) for r in (first, last)]
    assert len(run_ids) == 90
    assert counts["samples"] == 90 * (400 + 12)
    # five metrics on main, faithfulness on the canaries
    assert counts["run_metrics"] == 90 * 6
    assert sizes == [(400, 12), (400, 12)]


def test_empty_answers_are_excluded_from_answer_metrics_not_scored(faithfulness_rows: pd.DataFrame) -> None:
    # the generator left answers empty for sample ids i with i % 197 == 13 below 400: 13 and 210
    assert set(faithfulness_rows["n_excluded"]) == {2}
    assert set(faithfulness_rows["n"]) == {398}
    assert set(faithfulness_rows["n_failed"]) == {0}


def test_faithfulness_is_flattered_by_the_leak_in_runs_30_to_44(history: pd.DataFrame) -> None:
    faithfulness = history["faithfulness"]
    assert (faithfulness.iloc[:30] < 0.82).all()
    assert (faithfulness.iloc[30:45] > 0.88).all()


def test_faithfulness_falls_below_its_honest_level_once_the_leak_is_fixed(history: pd.DataFrame) -> None:
    faithfulness = history["faithfulness"]
    # the leak masked the retriever regression: fixed wiring shows it
    assert faithfulness.iloc[75:].max() < faithfulness.iloc[:30].min()
    assert faithfulness.iloc[75:].max() < faithfulness.iloc[58:75].min()


def test_the_judge_model_changes_once_at_run_18(faithfulness_rows: pd.DataFrame) -> None:
    assert _changes(faithfulness_rows["judge_model"]) == [18]
    assert faithfulness_rows["judge_model"].iloc[0] == "offline-lexical-v1"
    assert faithfulness_rows["judge_model"].iloc[-1] == "offline-lexical-v2"


def test_the_faithfulness_prompt_hash_changes_at_runs_30_45_and_75(faithfulness_rows: pd.DataFrame) -> None:
    assert _changes(faithfulness_rows["prompt_hash"]) == [30, 45, 75]
    assert _changes(faithfulness_rows["binding"]) == [30, 75]


def test_context_recall_falls_after_the_retriever_regression_at_run_58(history: pd.DataFrame) -> None:
    recall = history["context_recall"]
    assert recall.iloc[:58].mean() - recall.iloc[58:].mean() > 0.1


def test_metrics_the_events_do_not_touch_stay_within_noise(history: pd.DataFrame) -> None:
    for metric in ("answer_relevance", "answer_correctness"):
        assert history[metric].max() - history[metric].min() < 0.05


def test_canary_faithfulness_is_scored_on_every_run(demo_db: Path) -> None:
    with Store(demo_db) as store:
        canary = store.metric_history(suite=CANARY)
    assert len(canary) == 90
    assert set(canary["metric"]) == {"faithfulness"}
    assert set(canary["n"] + canary["n_excluded"] + canary["n_failed"]) == {12}


def _cells(frame: pd.DataFrame, cols: list[str]) -> bytes:
    """Every cell of `cols`, column by column, as its repr (a float's shortest round-trip form, NaN as nan)."""
    return "\x1e".join(c + "\x1f" + "\x1f".join(map(repr, frame[c].tolist())) for c in cols).encode()


def _stored_digest(path: Path) -> tuple[str, dict[str, float]]:
    """A digest of every stored number and verdict of the demo (run metrics and per-sample scores, both
    suites), and the main suite's faithfulness at runs 0, 44 and 89 to read in a failure."""
    digest = hashlib.sha256()
    with Store(path) as store:
        run_ids = store.run_ids()
        for run_id in run_ids:
            for suite in (MAIN, CANARY):
                metrics = store.run_metrics(run_id, suite)
                cols = ["metric", "judge_model", "prompt_hash", "binding", "score", "n", "n_failed", "n_excluded"]
                digest.update(_cells(metrics.sort_values("metric"), cols))
                scores = store.sample_scores(run_id, suite)
                digest.update(_cells(scores, ["metric", "sample_id", "status", "score", "reason", "verdicts"]))
        faith = store.metric_history(suite=MAIN, metrics=["faithfulness"]).set_index("run_id")["score"]
    return digest.hexdigest(), {k: round(float(faith[run_ids[k]]), 6) for k in (0, 44, 89)}


def test_the_demo_stores_the_numbers_it_always_has(demo_db: Path) -> None:
    # Pinned from the build before the offline judge's hot path was cached and the build split over processes
    # (issue 28 item 1): the speed-up changes how the demo is judged, never what.
    digest, faith = _stored_digest(demo_db)
    assert faith == PINNED_FAITHFULNESS
    assert digest == PINNED_DIGEST


# Read from a build before the demo's own process judged a block of runs and the offline judge assembled its
# flipped replies from each verdict's text (6 December 2026); the digest above reads neither of these tables.
PINNED_REJUDGED_AND_LABELS = "7190450996622ede4eb907cd40b86355d99e430cba236e0b505a72e590003c3f"


def test_the_demo_stores_the_rejudged_episode_and_the_labels_it_always_has(demo_db: Path) -> None:
    # the Overview's re-judged series (per run and per sample) and the people's labels shipped with the demo
    digest = hashlib.sha256()
    with Store(demo_db) as store:
        cur = store.cursor()
        for sql in ("SELECT run_id, score, n, n_failed, n_excluded, calls, cached FROM rejudge_runs ORDER BY run_id",
                    "SELECT run_id, sample_id, status, score, reason, verdicts, calls, cached FROM rejudge_scores "
                    "ORDER BY run_id, sample_id",
                    "SELECT seq, sample_id, item, value, content FROM labels ORDER BY seq"):
            for row in cur.execute(sql).fetchall():
                digest.update(repr(row).encode())
    assert digest.hexdigest() == PINNED_REJUDGED_AND_LABELS


def test_the_build_reports_progress_from_the_start_and_run_by_run(tmp_path: Path) -> None:
    # Issue 28 item 1: the first-start bar sat at 0 while spawned workers imported and judged chunks of four runs.
    seen: list[tuple[int, int]] = []
    build_demo(tmp_path / "six.duckdb", n_runs=6, workers=2, start_method="fork",   # as lib.app.demo_start does
               progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, 6) for k in range(7)]   # 0 of 6 before any run is judged, then each run as it is written
    with Store(tmp_path / "six.duckdb") as store:
        assert len(store.run_ids()) == 6


# -- two builds into one path (issue 40 item 13) -------------------------------------------------------------------
def test_a_second_demo_build_into_one_path_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    """Two `demo` builds into one path shared its .building file and ended in a DuckDB TransactionException."""
    from lib.jobs._demo import building
    from tests.test_cli import assert_usage_error, cli

    db = tmp_path / "demo.duckdb"
    with building(db, wait=False):   # a first build is under way (a lock on one open file: as another process's)
        line = assert_usage_error(cli("demo", "--db", db))
    assert f"another process is building the demo database at {db}" in line
    assert not db.exists() and not Path(f"{db}.building").exists()


def test_the_dashboard_waits_for_a_build_under_way_and_builds_nothing_itself(tmp_path: Path) -> None:
    import threading
    import time

    from lib.jobs._demo import building, ensure_demo

    db = tmp_path / "demo.duckdb"
    held, release = threading.Event(), threading.Event()

    def first_build() -> None:
        with building(db, wait=False):
            held.set()
            release.wait(30)
            with Store(db):   # the first build's file appears whole
                pass

    thread = threading.Thread(target=first_build)
    thread.start()
    held.wait(30)
    threading.Timer(0.5, release.set).start()
    t0 = time.monotonic()
    assert ensure_demo(db) is False   # waited, then found the first build's file: built nothing
    assert time.monotonic() - t0 >= 0.4
    thread.join(30)
    with Store(db) as store:
        assert store.run_ids() == []
