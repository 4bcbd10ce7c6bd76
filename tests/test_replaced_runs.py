"""Recording over a run id keeps the replaced copy (issue 23 item 1): said, chosen, allowed, restorable, purged.

The store archives every replaced copy (one run, in parts, in bulk); the
Import page's rules (lib.app.replacing) ask before replacing and allow only
launchers; the CLI says what it replaced and lists, restores and purges.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from lib.app import replacing
from lib.core.errors import InputError
from lib.core.records import MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.core.settings import load
from lib.store import RunBatch, Store
from tests.support.cli import run_cli
from tests.support.polling import wait_for

if TYPE_CHECKING:
    from playwright.sync_api import Page

ROOT = Path(__file__).resolve().parents[1]


def sample(i: int) -> EvalSample:
    return EvalSample(f"s{i}", f"question {i}?", f"answer {i}.", (f"passage {i}.",), f"truth {i}.")


def nightly(n_main: int = 4, n_canary: int = 2, *, metrics: tuple[str, ...] = ("faithfulness", "answer_relevance"),
            run_id: str = "nightly-20261130") -> RunRecord:
    """A run with a main and a canary suite, each scored on `metrics`."""
    suites = {"main": [sample(i) for i in range(n_main)], "canary": [sample(100 + i) for i in range(n_canary)]}
    scored = [MetricRecord(m, [SampleResult(s.sample_id, OK, 0.5) for s in items], "judge-x", None, None, suite=suite)
              for suite, items in suites.items() for m in metrics]
    return RunRecord(run_id, datetime(2026, 11, 30, 2, 0), {"retriever": "v1"}, suites, scored)


def one_row(run_id: str = "nightly-20261130") -> RunRecord:
    return RunRecord(run_id, datetime(2026, 12, 1, 2, 0), {}, {"main": [sample(7)]},
                     [MetricRecord("faithfulness", [SampleResult("s7", OK, 1.0)], "judge-x", None, None)])


def live(store: Store, run_id: str) -> tuple[int, list[str], list[tuple[str, str]]]:
    f = store.run_footprint(run_id)
    return (f.n_samples, [s for s, _ in f.suites], list(f.metrics)) if f else (0, [], [])


# -- the store keeps what it replaces ---------------------------------------------------------------------
def test_recording_over_a_run_keeps_the_replaced_copy_and_restore_brings_it_back(tmp_path: Path) -> None:
    with Store(tmp_path / "e.duckdb") as store:
        assert store.record_run(nightly()) is None            # a new id replaces nothing
        archive_id = store.record_run(one_row())
        assert live(store, "nightly-20261130") == (1, ["main"], [("main", "faithfulness")])
        [kept] = store.archived_runs()
        assert kept.archive_id == archive_id and kept.run_id == "nightly-20261130"
        assert kept.footprint.n_samples == 6 and kept.footprint.suites == (("canary", 2), ("main", 4))
        assert len(kept.footprint.metrics) == 4
        assert kept.footprint.sentence() == ("6 samples in 2 suites (canary 2, main 4); 4 metric scores "
                                             "(canary: answer_relevance, faithfulness; main: answer_relevance, "
                                             "faithfulness)")
        displaced = store.restore_run(archive_id)
        assert live(store, "nightly-20261130")[:2] == (6, ["canary", "main"])
        assert [s.question for s in store.samples("nightly-20261130", "canary")] == ["question 100?",
                                                                                     "question 101?"]
        # the one-row copy the restore displaced is kept in turn; the restored copy left the archive
        assert [a.archive_id for a in store.archived_runs()] == [displaced.archive_id]
        assert displaced.footprint.n_samples == 1
        assert store.purge_archived([displaced.archive_id]) == 1
        assert store.archived_runs() == []
        with pytest.raises(InputError, match="no replaced run is kept"):
            store.restore_run(displaced.archive_id)


def test_a_run_recorded_in_parts_or_in_bulk_keeps_the_copy_it_replaces(tmp_path: Path) -> None:
    with Store(tmp_path / "e.duckdb") as store:
        store.record_run(nightly())
        first, second = one_row(), RunRecord("nightly-20261130", datetime(2026, 12, 1, 2, 0), {}, {"main": [sample(8)]},
                                             [MetricRecord("faithfulness", [SampleResult("s8", OK, 0.0)], "judge-x",
                                                           None, None)])
        assert store.record_run_parts([first, second]) is not None
        assert live(store, "nightly-20261130")[0] == 2
        batch = RunBatch(
            runs=pd.DataFrame({"run_id": ["nightly-20261130"], "started_at": [datetime(2026, 12, 2)], "label": [""],
                               "pipeline": ["{}"]}),
            samples=pd.DataFrame({"run_id": ["nightly-20261130"], "suite": ["main"], "sample_id": ["b1"],
                                  "question": ["q"], "answer": ["a"], "contexts": [["c"]], "ground_truth": ["g"]}),
            sample_scores=pd.DataFrame({"run_id": ["nightly-20261130"], "suite": ["main"], "metric": ["faithfulness"],
                                        "sample_id": ["b1"], "status": ["ok"], "score": [1.0], "reason": [""],
                                        "verdicts": ["[]"]}),
            instruments=pd.DataFrame({"run_id": ["nightly-20261130"], "suite": ["main"], "metric": ["faithfulness"],
                                      "judge_model": ["j"], "prompt_hash": [None], "binding": [None],
                                      "fingerprint": [None]}))
        store.record_runs_bulk([batch])
        assert sorted(a.footprint.n_samples for a in store.archived_runs()) == [2, 6]
        assert live(store, "nightly-20261130")[0] == 1


# -- the page's rules -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("stored", "login", "launchers", "user", "confirmed", "may_record", "refusal"), [
    (False, True, "alice@team.example", "bob@team.example", False, True, None),   # a new id: nothing to ask
    (True, False, "", None, False, False, "tick the box"),                        # taken, not confirmed
    (True, False, "", None, True, True, None),                                    # no login: confirmed is enough
    (True, True, "alice@team.example", "alice@team.example", True, True, None),  # a launcher, confirmed
    (True, True, "alice@team.example", "alice@team.example", False, False, "tick the box"),
    (True, True, "alice@team.example", "bob@team.example", True, False, "may replace a run"),  # a viewer
    (True, True, "", "bob@team.example", True, True, None),                       # no list: every signed-in user
])
def test_recording_over_a_stored_run_needs_a_choice_and_a_launcher(
        tmp_path: Path, stored: bool, login: bool, launchers: str, user: str | None, confirmed: bool,
        may_record: bool, refusal: str | None) -> None:
    settings = load(environ={"EVALDRIFT_ABLATION_USERS": launchers})
    with Store(tmp_path / "e.duckdb") as store:
        if stored:
            store.record_run(nightly())
        choice = replacing.record_choice(store, "nightly-20261130", user=user, settings=settings, login=login)
        assert choice.may_record(confirmed=confirmed) is may_record
        assert (choice.warning() is not None) is stored
        if stored:
            assert "6 samples in 2 suites (canary 2, main 4)" in choice.warning()
        if refusal is None:
            replacing.check_record(store, "nightly-20261130", confirmed=confirmed, user=user, settings=settings,
                                   login=login)
        else:
            with pytest.raises(InputError, match=refusal):
                replacing.check_record(store, "nightly-20261130", confirmed=confirmed, user=user,
                                       settings=settings, login=login)
            assert live(store, "nightly-20261130")[0] == 6      # nothing replaced


def test_only_a_launcher_restores_from_the_page(tmp_path: Path) -> None:
    settings = load(environ={"EVALDRIFT_ABLATION_USERS": "alice@team.example"})
    with Store(tmp_path / "e.duckdb") as store:
        store.record_run(nightly())
        archive_id = store.record_run(one_row())
        with pytest.raises(InputError, match="may restore a replaced run"):
            replacing.restore(store, archive_id, user="bob@team.example", settings=settings, login=True)
        said = replacing.restore(store, archive_id, user="alice@team.example", settings=settings, login=True)
        assert said.startswith("Restored run nightly-20261130 (6 samples") and "kept as a-" in said
        assert live(store, "nightly-20261130")[0] == 6


# -- the CLI ----------------------------------------------------------------------------------------------
def cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args)


def test_cli_says_what_it_replaced_and_lists_restores_and_purges_the_copy(tmp_path: Path) -> None:
    db = tmp_path / "e.duckdb"
    rows = [json.loads(line) for line in (ROOT / "data" / "examples" / "kettle_faq.jsonl").read_text().splitlines()]
    for name, part in (("all.jsonl", rows), ("one.jsonl", rows[:1])):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in part))
    first = cli("ingest", "--db", str(db), str(tmp_path / "all.jsonl"), "--run-id", "nightly-1")
    assert first.returncode == 0, first.stderr
    assert "replaced the earlier copy" not in first.stdout
    again = cli("ingest", "--db", str(db), str(tmp_path / "one.jsonl"), "--run-id", "nightly-1")
    assert again.returncode == 0, again.stderr
    assert f"replaced the earlier copy of run nightly-1 ({len(rows)} samples in 1 suite (main {len(rows)})" \
        in again.stdout
    listed = json.loads(cli("archive", "list", "--db", str(db), "--json").stdout)
    assert [(k["run_id"], k["samples"]) for k in listed] == [("nightly-1", len(rows))]
    archive_id = listed[0]["archive_id"]
    assert f"kept as {archive_id}" in again.stdout
    restored = cli("archive", "restore", archive_id, "--db", str(db))
    assert restored.returncode == 0, restored.stderr
    assert f"restored run nightly-1 from {archive_id} ({len(rows)} samples" in restored.stdout
    with Store(db) as store:
        assert store.run_footprint("nightly-1").n_samples == len(rows)
        [one] = store.archived_runs()
        assert one.footprint.n_samples == 1
    unknown = cli("archive", "restore", "a-nothing", "--db", str(db))
    assert unknown.returncode == 2 and "no replaced run is kept as 'a-nothing'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    purged = cli("archive", "purge", "--all", "--db", str(db))
    assert purged.returncode == 0 and "purged 1 kept copy for good" in purged.stdout
    assert "no replaced runs are kept" in cli("archive", "list", "--db", str(db)).stdout


# -- the Import page in a real browser ----------------------------------------------------------------------
@pytest.mark.e2e
def test_the_import_page_says_what_it_would_replace_asks_keeps_and_restores(tmp_path: Path, page: Page) -> None:
    from tests.support.browser import StreamlitServer, exceptions_shown, main_text, wait_for_app

    db = tmp_path / "e.duckdb"
    with Store(db) as store:
        store.record_run(nightly(400, 20))
    with StreamlitServer(db, log_dir=tmp_path / "server") as server:
        page.goto(f"{server.url}/import")
        wait_for_app(page)
        assert "Replaced runs" not in main_text(page)
        row = {"id": "x1", "question": "q?", "answer": "A.", "contexts": ["A."], "ground_truth": "A.",
               "faithfulness": 1.0}
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
            files=[{"name": "one.jsonl", "mimeType": "application/octet-stream",
                    "buffer": (json.dumps(row) + "\n").encode()}])
        wait_for_app(page)
        box = page.locator(".st-key-imp_run_id input")
        box.fill("nightly-20261130")
        box.press("Enter")
        wait_for_app(page)
        text = main_text(page)
        assert "A run with this id is already stored: 420 samples in 2 suites (canary 20, main 400); 4 metric " \
               "scores" in text, text
        record = page.locator(".st-key-imp_record button")
        assert record.is_disabled()                               # no choice made: nothing can be replaced
        page.locator(".st-key-imp_replace label").first.click()
        wait_for_app(page)
        assert record.is_enabled()
        record.click()
        wait_for_app(page)
        assert "Recorded run nightly-20261130: 1 samples; faithfulness. The copy it replaced is kept" \
            in main_text(page)
        page.goto(f"{server.url}/import")
        wait_for_app(page)
        page.get_by_text("Replaced runs (1 kept)").click()
        wait_for_app(page)
        assert "nightly-20261130, replaced" in main_text(page)
        page.locator(".st-key-imp_archive_go button").click()
        wait_for_app(page)
        # the restore's message can land after the rerun the click asked for (seen once in CI at load 7): poll
        wait_for(lambda: "Restored run nightly-20261130" in main_text(page), timeout=20)
        text = main_text(page)
        assert "Restored run nightly-20261130 (420 samples in 2 suites" in text, text
        assert exceptions_shown(page) == []
    with Store(db) as store:
        assert store.run_footprint("nightly-20261130").n_samples == 420
        assert [a.footprint.n_samples for a in store.archived_runs()] == [1]
