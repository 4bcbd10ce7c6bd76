"""An ablation belongs to the copy of the run it measured: a run recorded again is judged again.

The CI gate's silent wrong this guards against: ablate a run (CLEAN), record it again with a template that
renders the reference, ablate again with the same arguments, and get the old copy's CLEAN back "from the
store". Every file here is made by the test.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.app import ui
from lib.core.records import MetricRecord, RunRecord
from lib.core.results import SampleResult
from lib.core.samples import EvalSample
from lib.presentation.ablation_views import ablation_briefs
from lib.presentation.report import run_report
from lib.presentation.review import review
from lib.store import Store
from lib.store.schema import MIGRATIONS
from tests.support.cli import run_cli as cli
from tests.support.polling import wait_for

ROOT = Path(__file__).resolve().parent.parent
COLOURS, WOODS = ("red", "blue", "green"), ("oak", "steel", "glass")
# A faithfulness template that also shows the judge the reference: every second claim of each answer below is
# stated only there, so blanking ground_truth halves the score when this template is replayed.
LEAKY = """Decide whether each claim of an answer is supported by the retrieved passages.
CONTEXT:
{contexts}

REFERENCE:
{ground_truth}

CLAIMS:
{items}

Return only a JSON object whose "verdicts" list holds an object for every item above, each with "item" (the \
item's number), "verdict" and "evidence".
Verdict words: "supported" or "unsupported". Evidence: the sentence that decided it, copied exactly, or "".
"""
ABLATE = ("--metric", "faithfulness", "--blank", "ground_truth")


def _samples(n: int) -> list[dict[str, object]]:
    return [{"id": f"s{i:02d}", "question": f"How long does the K{i} kettle take to boil?",
             "answer": f"The K{i} kettle boils in {i + 2} minutes. The K{i} kettle has a {COLOURS[i % 3]} handle "
                       f"made of {WOODS[i % 3]}.",
             "contexts": [f"The K{i} kettle boils in {i + 2} minutes."],
             "ground_truth": f"{i + 2} minutes; the K{i} kettle has a {COLOURS[i % 3]} handle made of "
                             f"{WOODS[i % 3]}."} for i in range(1, n + 1)]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Twelve samples, the same run cut to one sample, the leaky template, and a database path."""
    out = {"db": tmp_path / "evals.duckdb", "twelve": tmp_path / "twelve.jsonl", "one": tmp_path / "one.jsonl",
           "leaky": tmp_path / "leaky.txt"}
    out["twelve"].write_text("".join(json.dumps(r) + "\n" for r in _samples(12)), encoding="utf-8")
    out["one"].write_text(json.dumps(_samples(1)[0]) + "\n", encoding="utf-8")
    out["leaky"].write_text(LEAKY, encoding="utf-8")
    return out


def _score(files: dict[str, Path], source: str = "twelve", *extra: object) -> None:
    proc = cli("score", "--db", files["db"], files[source], "--run-id", "r1", "--metrics", "faithfulness", *extra)
    assert proc.returncode == 0, proc.stderr


def _ablate(files: dict[str, Path], *extra: object):
    return cli("ablate", "--db", files["db"], "--run", "r1", *ABLATE, *extra)


def test_a_run_recorded_again_with_a_leaky_template_is_judged_again_and_fails_the_gate(
        files: dict[str, Path]) -> None:
    _score(files)
    first = _ablate(files)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "CLEAN" in first.stdout and "LEAK" not in first.stdout
    _score(files, "twelve", "--template", f"faithfulness={files['leaky']}", "--binding", "replay")
    again = _ablate(files)
    assert "answered from the store" not in again.stdout
    assert again.returncode == 1, again.stdout + again.stderr
    assert "LEAK: faithfulness moves" in again.stdout
    # the same arguments once more: now the stored answer is this copy's
    third = _ablate(files)
    assert third.returncode == 1 and "answered from the store" in third.stdout and "LEAK" in third.stdout


def test_a_one_sample_recording_does_not_get_the_twelve_sample_verdict(files: dict[str, Path]) -> None:
    _score(files)
    assert "all 12 prompts" in _ablate(files).stdout
    _score(files, "one")
    again = _ablate(files)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "answered from the store" not in again.stdout
    assert "all 1 prompt" in again.stdout and "12" not in again.stdout


def test_report_review_and_the_list_read_only_the_stored_copy_s_ablations(files: dict[str, Path]) -> None:
    _score(files)
    first = json.loads(_ablate(files, "--json").stdout)["ablation_id"]
    _score(files, "twelve", "--template", f"faithfulness={files['leaky']}", "--binding", "replay")
    today = date.today()
    with Store(files["db"]) as store:
        assert [b.ablation_id for b in ablation_briefs(store, "r1")] == []
        assert first not in run_report(store, "r1")
        assert review(store, today - timedelta(days=1), today + timedelta(days=1)).ablations == ()
        assert store.ablation(first) is None                       # not this copy's: nothing answers from it
        kept = store.ablation(first, any_copy=True)
        assert kept is not None and not kept["current"]
        [archived] = store.archived_runs("r1")
    leak = json.loads(_ablate(files, "--json").stdout)
    assert leak["ablation_id"] == first and leak["exit_code"] == 1   # the spec's id now holds this copy's verdict
    with Store(files["db"]) as store:
        assert [b.ablation_id for b in ablation_briefs(store, "r1")] == [first]
        assert "LEAK" in run_report(store, "r1")
        store.restore_run(archived.archive_id)                      # the first copy back: its CLEAN is its own again
        [brief] = ablation_briefs(store, "r1")
        assert brief.ablation_id.startswith(first + "~") and "CLEAN" in brief.summary
        assert "LEAK" not in run_report(store, "r1")


def test_ablations_stored_before_copies_were_told_apart_match_no_copy(files: dict[str, Path]) -> None:
    """A database from before the migration: its run gets a copy id, its ablation none, so it is judged again."""
    import duckdb

    _score(files)
    aid = json.loads(_ablate(files, "--json").stdout)["ablation_id"]
    [step] = [m for m in MIGRATIONS if m.name == "run copies and the copy each ablation measured"]
    con = duckdb.connect(str(files["db"]))   # the file as the step before found it, then the step itself
    con.execute("ALTER TABLE ablations DROP COLUMN run_copy")
    con.execute("ALTER TABLE runs DROP COLUMN copy_id")
    con.execute("ALTER TABLE archived_runs DROP COLUMN copy_id")
    for stmt in step.statements:
        con.execute(stmt)
    con.close()
    with Store(files["db"]) as store:
        assert str(store.run_copy("r1")).startswith("c-")
        assert store.ablation(aid) is None and store.ablations().empty
    again = _ablate(files)
    assert again.returncode == 0 and "answered from the store" not in again.stdout


def test_the_page_does_not_show_an_earlier_copy_s_verdict(files: dict[str, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _score(files)
    aid = json.loads(_ablate(files, "--json").stdout)["ablation_id"]
    _score(files, "twelve", "--template", f"faithfulness={files['leaky']}", "--binding", "replay")
    monkeypatch.setenv("EVALDRIFT_DB", str(files["db"]))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.query_params["ablation"] = aid
    at.query_params["run"] = "r1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(str(x.value) for x in (*at.markdown, *at.warning, *at.info, *at.success, *at.error))
    assert "CLEAN" not in shown and "not re-judged" not in shown
    assert any("earlier copy of run r1" in str(w.value) for w in at.warning), [w.value for w in at.warning]
    assert not at.get("plotly_chart")
    at.button(key="abl_launch").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Answered from stored results" in str(i.value) for i in at.info)
    store = ui.open_store(str(files["db"]))   # the dashboard's own connection: its worker judges the new copy
    wait_for(lambda: (store.ablation(aid) or {}).get("status") == "done", timeout=60, pause=0.2)
    [row] = store.ablations("r1").to_dict("records")
    assert row["ablation_id"] == aid and row["status"] == "done" and "LEAK" in row["result"]


@pytest.mark.parametrize(("held", "kept"), [
    (None, False),            # no row: a new one
    ("this copy", True),      # this copy's unfinished ablation: resumed, its judgings kept
    ("another copy", False),  # another copy's: moved aside with its judgings, this one starts from nothing
    ("no copy", False),       # stored before copies were told apart: the same
])
def test_starting_an_ablation_keeps_only_this_copy_s_judgings(tmp_path: Path, held: str | None, kept: bool) -> None:
    sample = EvalSample("s1", "q?", "a.", ("a.",), "a.")
    run = RunRecord("r1", datetime(2026, 12, 1), {}, {"main": [sample]},
                    [MetricRecord("faithfulness", [SampleResult("s1", "ok", 1.0)], "j", None, None)])
    spec = {"run_id": "r1"}
    with Store(tmp_path / "e.duckdb") as store:
        store.record_run(run)
        copy = store.run_copy("r1")
        if held is not None:
            store.start_ablation("abl-x", "r1", "main", spec, "j", 1,
                                 copy={"this copy": copy, "another copy": "c-other", "no copy": None}[held])
            if held == "no copy":   # as the migration leaves an older row
                store.cursor().execute("UPDATE ablations SET run_copy = NULL")
            store.add_ablation_results("abl-x", "faithfulness", "none", 0, [SampleResult("s1", "ok", 1.0)])
        assert (store.ablation("abl-x") is not None) == (held == "this copy")
        store.start_ablation("abl-x", "r1", "main", spec, "j", 1, copy=copy)
        row = store.ablation("abl-x")
        assert row is not None and row["current"] and row["done"] == int(kept)
        aside = [a for (a,) in store.cursor().execute("SELECT ablation_id FROM ablations").fetchall() if a != "abl-x"]
        assert len(aside) == int(held in ("another copy", "no copy"))
        for a in aside:
            assert a.startswith("abl-x~") and store.ablation(a) is None and len(store.ablation_results(a)) == 1
        assert list(store.ablations("r1")["ablation_id"]) == ["abl-x"]
        store.delete_run("r1")   # no stored copy at all: nothing is current
        assert store.ablation("abl-x") is None and store.ablations().empty


def test_restoring_a_copy_changes_the_data_version_the_dashboard_caches_by(tmp_path: Path) -> None:
    """A restore swaps which copy is live without changing the run count or, when a later run was recorded since,
    the newest recording time: the pages' cached history and ablations must still be read again."""
    def run(run_id: str, score: float) -> RunRecord:
        sample = EvalSample("s1", "q?", "a.", ("a.",), "a.")
        return RunRecord(run_id, datetime(2026, 12, 1), {}, {"main": [sample]},
                         [MetricRecord("faithfulness", [SampleResult("s1", "ok", score)], "j", None, None)])

    with Store(tmp_path / "e.duckdb") as store:
        store.record_run(run("r1", 1.0))
        store.record_run(run("r1", 0.0))   # the first copy is kept in the archive
        store.record_run(run("r2", 1.0))   # recorded last: the newest recording time stays r2's
        [kept] = store.archived_runs("r1")
        before = store.data_version()
        store.restore_run(kept.archive_id)
        assert store.metric_history().query("run_id == 'r1'")["score"].tolist() == [1.0]
        assert store.data_version() != before
