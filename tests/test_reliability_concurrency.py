"""Concurrency: the dashboard owns the database while a nightly recorder, in another process, records runs.

The approach (README, "Reliability"): one process owns a DuckDB file. A
recorder that finds it held writes its run into the inbox folder; the owner
drains the inbox on each page load (lib.app.ui.sidebar calls lib.intake.inbox.drain).
This test runs it all at once, for real: `streamlit run app.py` on a copy of
a demo database, three Chromium sessions loading pages, one of them running
an ablation from the Ablation page, and two recorder processes (`python -m
lib record` and `python -m lib ingest`) started meanwhile.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import datetime, timedelta
from pathlib import Path

from playwright.sync_api import Page

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult
from lib.core.samples import EvalSample
from lib.intake import inbox
from lib.intake.runjson import run_to_json
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_samples
from lib.store import Store
from tests.support.browser import StreamlitServer, exceptions_shown, wait_for_app
from tests.support.reliability_support import LOCK_WORDS, ROOT, child_env, copy_db, mini_demo

RECORDED = "nightly-recorded-by-cron"
INGESTED = "nightly-ingested-by-cron"


def _recorded_run(started: datetime) -> RunRecord:
    samples = [EvalSample(f"cron-{i:02d}", f"How long are item {i} logs kept?", f"Item {i} logs are kept {i} days.",
                          (f"Item {i} logs are kept {i} days.",), f"{i} days.") for i in range(20)]
    inst = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
    judge = OfflineJudge()
    return RunRecord(RECORDED, started, {"retriever": {"top_k": 3}}, {MAIN: samples},
                     [MetricRecord("faithfulness", score_samples(samples, inst, judge), judge.model, inst.template,
                                   PROJECTED)], label="recorded while the dashboard was open")


def _recorder(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lib", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _check_page(page: Page, where: str, texts: list[str]) -> str:
    text = page.inner_text("body")
    assert exceptions_shown(page) == [], f"{where}: an exception reached the page"
    assert "Page not found" not in text, where
    for word in LOCK_WORDS:
        assert word.lower() not in text.lower(), f"{where}: {word!r} shown to the user"
    texts.append(text)
    return text


def test_a_recorder_hands_runs_over_while_the_dashboard_serves_sessions_and_an_ablation(tmp_path: Path,
                                                                                          page: Page) -> None:
    db = copy_db(mini_demo(), tmp_path / "evaldrift.duckdb")
    inbox_dir = tmp_path / "inbox"
    with Store(db) as store:
        demo_runs = store.run_ids()
        latest = store.runs()["started_at"].max().to_pydatetime()
    run_file = tmp_path / "cron.run.json"
    run_file.write_text(run_to_json(_recorded_run(latest + timedelta(days=2))), encoding="utf-8")
    jsonl = tmp_path / "cron.jsonl"
    jsonl.write_text("".join(json.dumps({"sample_id": f"j{i}", "question": "Q?", "answer": f"A {i}.",
                                         "contexts": [f"A {i}."], "ground_truth": f"A {i}.",
                                         "faithfulness": 1.0}) + "\n" for i in range(30)), encoding="utf-8")
    env = child_env(EVALDRIFT_DB=str(db), EVALDRIFT_INBOX=str(inbox_dir))
    texts: list[str] = []

    # three sessions: the module's tab and two more in its browser context (a tab is a Streamlit session of its own;
    # the context's caches spare each a first load's compiling, about 2.5 CPU s of Chromium in a new context)
    sessions = [page, page.context.new_page(), page.context.new_page()]
    ablate, run_page, overview = sessions
    with StreamlitServer(db, env={"EVALDRIFT_INBOX": str(inbox_dir)}, log_dir=tmp_path / "server") as server:

        # First, the other way round: a job holds the database when the dashboard's first page opens.
        holder = Store(db)
        try:
            overview.goto(server.url + "/")   # the Overview is the default page
            overview.get_by_text("Another process (a nightly job or the command line) is writing to this "
                                 "database right now").wait_for(timeout=90_000)
            _check_page(overview, "overview while a job holds the database", texts)
        finally:
            holder.close()
        overview.get_by_text(f"{len(demo_runs)} runs; latest").wait_for()   # it opens by itself once free
        wait_for_app(overview)
        _check_page(overview, "overview once the job let go", texts)

        for tab, path in ((ablate, "/ablation"), (run_page, "/run")):
            tab.goto(server.url + path)
        for tab, name in ((ablate, "ablation"), (run_page, "run"), (overview, "overview")):
            wait_for_app(tab)
            _check_page(tab, name, texts)

        # Session 1 launches an ablation of the latest run (the dashboard's worker writes its results).
        limit = ablate.get_by_role("spinbutton", name="Sample limit")
        limit.fill("150")
        limit.press("Enter")
        wait_for_app(ablate)
        ablate.get_by_role("button", name="Launch ablation").click()
        ablate.get_by_text("Judging:").or_(ablate.get_by_text("judge calls")).first.wait_for(timeout=60_000)

        # Meanwhile two nightly jobs, in their own processes, record runs: the database is held.
        recorders = [_recorder("record", "--db", str(db), str(run_file), env=env),
                     _recorder("ingest", "--db", str(db), "--run-id", INGESTED, "--started-at",
                               (latest + timedelta(days=1)).isoformat(), str(jsonl), env=env)]
        # Sessions 2 and 3 keep loading pages while the recorders and the ablation work: two rounds at most (each
        # reload costs Chromium about 1.5 CPU s; on a loaded machine the recorders' start took many rounds more).
        for _ in range(2):
            for tab, name in ((run_page, "run"), (overview, "overview")):
                tab.reload()
                wait_for_app(tab)
                _check_page(tab, name, texts)
            if all(r.poll() is not None for r in recorders):
                break
        outputs = [r.communicate(timeout=120) for r in recorders]
        for r, (out, err) in zip(recorders, outputs, strict=True):
            assert r.returncode == 0, (out, err)
            assert "held by another process, so run" in out and "handed over through the inbox" in out, out
            assert "Traceback" not in err and "lock" not in err.lower(), err

        # The next refresh drains the inbox, here in all three sessions at once (each page load drains):
        # the new runs appear (the Run page keeps the run its URL names, so look in its run picker; the
        # Overview names the latest run).
        for tab in sessions:
            tab.reload(wait_until="commit")
        for tab, name in ((ablate, "ablation"), (run_page, "run"), (overview, "overview")):
            wait_for_app(tab)
            _check_page(tab, f"{name} on the refresh after the hand-over", texts)
        assert not list(inbox_dir.glob("*.run.json")), "the inbox was not drained"
        assert not (inbox_dir / "rejected").exists()
        assert f"{len(demo_runs) + 2} runs; latest {RECORDED}" in texts[-1]
        run_page.locator('[data-testid="stMain"] [data-testid="stSelectbox"]').first.click()
        options = run_page.get_by_role("option").all_inner_texts()
        run_page.keyboard.press("Escape")
        assert options[0].startswith(RECORDED) and options[1].startswith(INGESTED), options

        # The ablation, running all along, finishes and is shown in words.
        ablate.get_by_text("judge calls").first.wait_for(timeout=180_000)
        wait_for_app(ablate)
        text = _check_page(ablate, "ablation result", texts)
        assert "wiring leak" in text or "LEAK" in text or "invariant" in text, text[:2000]
        for tab in sessions[1:]:
            tab.close()

    log = server.stdout() + server.stderr()
    assert "Traceback" not in log and "lock" not in log.lower(), log[-3000:]

    # After the dashboard stops, every run is in the database: nothing lost.
    with Store(db) as store:
        assert set(store.run_ids()) == {*demo_runs, RECORDED, INGESTED}
        assert len(store.samples(RECORDED)) == 20 and len(store.samples(INGESTED)) == 30
        assert len(store.sample_scores(RECORDED)) == 20 and len(store.sample_scores(INGESTED)) == 30
        [abl] = store.ablations().to_dict("records")
        assert abl["status"] == "done" and abl["done"] == abl["total"] > 0
        assert len(store.ablation_results(abl["ablation_id"])) == abl["total"]


def _small_run(i: int) -> RunRecord:
    samples = [EvalSample(f"s{j}", "Q?", "A.", ("A.",), "A.") for j in range(40)]
    return RunRecord(f"dropped-{i:02d}", datetime(2026, 3, 1) + timedelta(hours=i), {}, {MAIN: samples},
                     [MetricRecord("faithfulness", [SampleResult(s.sample_id, OK, 1.0) for s in samples], "m",
                                   None, None)])


def test_sessions_draining_the_inbox_at_once_record_each_run_exactly_once(tmp_path: Path) -> None:
    """Every page load drains the inbox, so two sessions loading at once drain it together."""
    folder = tmp_path / "inbox"
    for i in range(24):
        inbox.drop(folder, _small_run(i))
    errors: list[BaseException] = []
    recorded: list[list[str]] = []
    with Store(tmp_path / "owner.duckdb") as store:
        def session() -> None:
            try:
                recorded.append(inbox.drain(store, folder))
            except BaseException as exc:  # collected and asserted on below
                errors.append(exc)

        threads = [threading.Thread(target=session) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert errors == []
        ids = [r for batch in recorded for r in batch]
        assert sorted(ids) == [f"dropped-{i:02d}" for i in range(24)]   # each once: none lost, none twice
        assert store.counts()["runs"] == 24 and store.counts()["samples"] == 24 * 40
    assert not list(folder.glob("*.run.json")) and not (folder / "rejected").exists()
