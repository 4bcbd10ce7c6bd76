"""The Ablation, Canary and Review pages, run with AppTest on the demo database: the pages that only read it read
the session's demo (the module shares its cached reads, as one dashboard's sessions do); an ablation writes to a
private copy."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from lib.app import trust, ui
from lib.app.ui import job_runner, load_settings
from lib.core.records import CANARY
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.diagnosis.ablation._lead import sentences
from lib.diagnosis.trends import canary_status, find_jumps
from lib.presentation import review
from lib.store import Store
from tests.support.polling import rerun_until

APP = Path(__file__).resolve().parents[1] / "app.py"
WAIT = 30.0   # seconds an offline ablation of 240 judgings may take on a busy machine


@pytest.fixture(scope="module")
def _demo_closed_after(demo_db: Path) -> Iterator[None]:
    """The read-only pages open the demo through the process-wide store cache; close it when this module is done."""
    yield
    ui.open_store(str(demo_db)).close()
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def demo(demo_db: Path, monkeypatch: pytest.MonkeyPatch, _demo_closed_after: None) -> Path:
    """The session's demo, named by EVALDRIFT_DB, for a page that only reads it: every test of the module reads
    one store, so a page's first run finds the sidebar's and the pages' frames cached (about 1.5 CPU s a test)."""
    monkeypatch.setenv("EVALDRIFT_DB", str(demo_db))
    return demo_db


@pytest.fixture
def app_db(demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the demo (ablations write to it), named by EVALDRIFT_DB."""
    path = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, path)
    if Path(f"{demo_db}.wal").exists():
        shutil.copy(f"{demo_db}.wal", f"{path}.wal")
    monkeypatch.setenv("EVALDRIFT_DB", str(path))
    return path


@pytest.fixture(scope="module")
def leak_run(demo_db: Path) -> str:
    """The run where the demo's harness refactor started leaking ground_truth (its first faithfulness jump)."""
    with Store(demo_db) as store:
        return next(j.run_id for j in find_jumps(store) if j.metric == "faithfulness")


def open_page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page(page)
    at.query_params.update(params)
    return at.run()


def texts(elements) -> list[str]:
    return [e.value for e in elements]


def after_its_job(at: AppTest) -> AppTest:
    """`at` once the ablation it launched has ended. The page's jobs run in this process (AppTest): waiting on the
    page's own runner spares re-rendering the whole page (1-2 CPU s on the demo) again and again while the
    ablation it waits for competes with those renders for the CPU."""
    runner = job_runner(str(load_settings().db_path))   # the page's own (st.cache_resource: one per process)
    assert runner.known(at.query_params["ablation"]), "not the page's runner"
    runner.wait(timeout=WAIT)
    return at


def has_leak(at: AppTest) -> bool:
    return any(t.startswith("LEAK") for t in texts(at.error))


def test_the_ablation_page_renders_on_the_demo(demo: Path) -> None:
    # the Canary and Review pages' plain first runs are checked the same way in their own tests below
    at = open_page("pages/ablation.py")
    assert not at.exception, [e.value for e in at.exception]
    assert at.title


def test_an_ablation_launched_from_the_page_yields_a_leak_and_a_second_launch_is_answered_from_the_store(
        app_db: Path, leak_run: str) -> None:
    at = open_page("pages/ablation.py", run=leak_run, metric="faithfulness", blank="ground_truth")
    assert at.selectbox(key="abl_run").value == leak_run
    assert at.multiselect(key="abl_metrics").value == ["faithfulness"]
    assert at.multiselect(key="abl_blanks").value == ["ground_truth"]
    at.number_input(key="abl_repeats").set_value(2)
    at.number_input(key="abl_limit").set_value(60)
    at.button(key="abl_launch").click().run()
    assert not at.exception, [e.value for e in at.exception]
    aid = at.query_params["ablation"]
    assert aid == AblationSpec(leak_run, ("faithfulness",), ("ground_truth",), repeats=2, limit=60).ablation_id

    rerun_until(after_its_job(at), has_leak, timeout=WAIT)
    assert has_leak(at), texts(at.error) + texts(at.warning)
    assert any("wiring leak: faithfulness" in t for t in texts(at.error))      # the summary, in words
    # issue 46 item 2: one sentence first, to the cells' three places, and the caveats once, in small print
    banner = next(t for t in texts(at.error) if "wiring leak: faithfulness" in t).replace("\\_", "_")
    cell = next(t for t in texts(at.error) if t.startswith("LEAK: faithfulness moves")).replace("\\_", "_")
    moved = re.search(r"moves ([+-]\d\.\d{3})", cell)
    assert moved and f"moves {moved.group(1)} when ground_truth is blanked" in banner, (banner, cell)
    assert len(sentences(banner)) == 1 and "cell(s)" not in banner, banner
    small = [t for t in texts(at.caption) if "Judged sequentially" in t]
    assert len(small) == 1, texts(at.caption)
    # issue 46 item 1: the next step, where the verdict stands: the incident, the run on Trends, the Review week
    links = [(link.proto.page, link.proto.label) for link in at.get("page_link")]
    with Store(app_db) as store:
        latest = review.default_range(store)
    assert latest
    for words in ("The incident it answers, on the Overview: faithfulness", f"{leak_run} on Trends",
                  f"to {latest[1]}, which carries it"):
        assert any(words in label.replace("\\", "") for _, label in links), links
    assert "Metrics x fields" in texts(at.subheader)
    assert "Per-sample changes" in texts(at.subheader)
    assert not any("Answered from stored results" in t for t in texts(at.info))

    at.button(key="abl_launch").click().run()
    assert any(t.startswith("Answered from stored results") for t in texts(at.info))
    assert at.query_params["ablation"] == aid
    assert has_leak(at)
    # the run's ablation list links to it
    assert any(aid in link.label for link in at.get("page_link"))


def test_a_deep_link_to_a_finished_ablation_shows_its_result_and_the_form_follows_it(
        app_db: Path, leak_run: str) -> None:
    # finished as the page's runner finishes it (run_ablation with the server's judge for the spec); a launch from
    # the page is the test above
    spec = AblationSpec(leak_run, ("faithfulness",), ("ground_truth", "contexts"), repeats=2, limit=40)
    with Store(app_db) as store:
        assert run_ablation(store, spec, trust.server_judge(spec, load_settings())) is not None

    fresh = open_page("pages/ablation.py", ablation=spec.ablation_id)
    assert not fresh.exception
    assert has_leak(fresh)
    assert fresh.selectbox(key="abl_run").value == leak_run
    assert fresh.multiselect(key="abl_blanks").value == ["ground_truth", "contexts"]
    assert "The four readings" in texts(fresh.subheader)
    assert any("independent channels" in t for t in texts(fresh.info))
    # a widget's options are plain text: the Markdown escape showed as "faithfulness with ground\_truth blanked"
    assert "faithfulness with ground_truth blanked" in fresh.selectbox(key="abl_cell").options


def test_a_stalled_ablation_offers_resume_and_resuming_finishes_it(app_db: Path, leak_run: str) -> None:
    spec = AblationSpec(leak_run, ("faithfulness",), ("ground_truth",), repeats=2, limit=30)
    with Store(app_db) as store:   # a row left 'running' by a process that died
        store.start_ablation(spec.ablation_id, spec.run_id, spec.suite, spec.to_dict(), spec.judge, 120)

    at = open_page("pages/ablation.py", ablation=spec.ablation_id)
    assert any("stopped at 0 of 120" in t for t in texts(at.warning))
    at.button(key="abl_resume").click().run()
    rerun_until(after_its_job(at), has_leak, timeout=WAIT)
    assert has_leak(at)


def test_an_unknown_ablation_id_is_said_plainly(demo: Path) -> None:
    at = open_page("pages/ablation.py", ablation="abl-<b>nope</b>")
    assert not at.exception
    assert any("No ablation with this id" in t for t in texts(at.warning))


def test_canary_page_shows_the_alarm_history_and_the_canary_set(demo: Path, leak_run: str) -> None:
    at = open_page("pages/canary.py")
    assert not at.exception, [e.value for e in at.exception]
    assert at.title
    assert any("alarmed on 45 earlier run(s)" in t for t in texts(at.warning))
    spells = [t for t in texts(at.markdown) if t.startswith("Canary alarmed on")]
    assert len(spells) == 1 and leak_run in spells[0]
    assert at.get("plotly_chart")
    with Store(demo) as store:
        status = canary_status(store)
        samples = store.samples_frame(str(status.frame.iloc[-1]["run_id"]), CANARY)
    assert not at.table   # "Every alarm run", closed, is not drawn
    at.session_state["canary_alarms_open"] = True   # the user opens it (on_change="rerun")
    alarms = at.run().table[0].value   # every alarm run, in the expander
    assert list(alarms.columns) == ["run_id", "started", "canary faithfulness"]
    assert list(alarms["run_id"]) == list(status.alarm_runs) and len(alarms) == 45
    # every canary sample of the latest run, its question, answer and reference each as plain text
    shown = texts(at.text)
    assert len(samples) == 12
    for row in samples.itertuples(index=False):
        assert f"{row.sample_id} · {row.question}" in shown
        assert row.answer in shown and row.ground_truth in shown
    assert not at.dataframe   # no data grid for a fresh browser session to load (issue 28 item 8)


def test_review_page_shows_the_leak_jump_and_exports_markdown(demo: Path, leak_run: str) -> None:
    with Store(demo) as store:
        day = store.run(leak_run).started_at.date()
        expected = review.review_markdown(review.review(store, day - timedelta(days=3), day + timedelta(days=3)))
    at = open_page("pages/review.py", **{"from": str(day - timedelta(days=3)), "to": str(day + timedelta(days=3))})
    assert not at.exception, [e.value for e in at.exception]
    assert at.date_input(key="rev_range").value == (day - timedelta(days=3), day + timedelta(days=3))
    jumps = [t for t in texts(at.error) if "faithfulness" in t and "instrument change" in t]
    assert len(jumps) == 1 and "+0.1" in jumps[0]
    assert any("canary alarmed" in t for t in texts(at.error))
    assert at.download_button(key="rev_download").label == "Download the review as Markdown"
    assert at.download_button(key="rev_download_text").label == "Download as plain text"
    assert not at.code   # the preview, closed, is not drawn: no syntax highlighter for the browser to load
    at.session_state["rev_preview"] = True   # the user opens it (on_change="rerun")
    assert at.run().code[-1].value.strip() == expected.strip()   # st.code drops the final newline
    assert "## What moved beyond noise" in expected


def test_review_page_defaults_to_the_last_week_and_steps_back_a_week(demo: Path) -> None:
    at = open_page("pages/review.py")
    assert not at.exception, [e.value for e in at.exception]
    assert at.title
    start, end = at.date_input(key="rev_range").value
    assert (end - start).days == 6
    assert at.query_params["to"] == str(end)
    at.button(key="rev_prev").click().run()
    assert at.date_input(key="rev_range").value == (start - timedelta(days=7), end - timedelta(days=7))
    assert at.query_params["from"] == str(start - timedelta(days=7))


def test_a_link_to_another_week_opened_in_the_same_session_shows_that_week(demo: Path) -> None:
    """The Review already showing a week follows a link to another (one of the dashboard's own, in the same
    session), as Trends and Run follow theirs: before, it kept the week it had and wrote it back to the address."""
    at = open_page("pages/review.py")
    start, end = at.date_input(key="rev_range").value
    week = (start - timedelta(days=14), end - timedelta(days=14))
    at.query_params.update({"from": str(week[0]), "to": str(week[1])})
    at.run()
    assert at.date_input(key="rev_range").value == week
    assert (at.query_params["from"], at.query_params["to"]) == (str(week[0]), str(week[1]))
    at.button(key="rev_next").click().run()   # then the user's own step is kept, not undone by the link
    assert at.date_input(key="rev_range").value == (week[0] + timedelta(days=7), week[1] + timedelta(days=7))


def test_review_of_a_range_without_runs_says_so(demo: Path) -> None:
    at = open_page("pages/review.py", **{"from": "2020-01-01", "to": "2020-01-07"})
    assert not at.exception
    assert any("No runs started between 2020-01-01 and 2020-01-07" in t for t in texts(at.markdown))
    assert date(2020, 1, 1) == at.date_input(key="rev_range").value[0]
