"""The Ablation page offers what the run and the operator allow: the run's own fields, the allowed scorers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.app import ui
from lib.store import Store
from tests.support.polling import wait_for
from tests.test_cli import cli

ROOT = Path(__file__).resolve().parent.parent
SCORER = "tests.support.scorers:constant"


@pytest.fixture(autouse=True)
def close_dashboard_stores(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Close the stores the dashboard opened in this test (each keeps a snapshot thread that copies the file after
    a change): a daemon thread still inside DuckDB when the interpreter exits aborts the process (exit 134)."""
    opened: list[Store] = []
    real = ui.open_store

    def recording(path: str) -> Store:
        opened.append(real(path))
        return opened[-1]

    monkeypatch.setattr(ui, "open_store", recording)
    yield
    for store in opened:
        store.close()


@pytest.fixture
def faith_only_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A database with one run scored from a file that had no ground_truth and no question."""
    rows = [json.loads(line) for line in (ROOT / "data" / "examples" / "kettle_faq.jsonl").read_text().splitlines()]
    source = tmp_path / "mine.jsonl"
    source.write_text("".join(json.dumps({k: r[k] for k in ("id", "answer", "contexts")}) + "\n" for r in rows))
    db = tmp_path / "evals.duckdb"
    proc = cli("score", "--db", db, source, "--run-id", "faith-only", "--metrics", "faithfulness")
    assert proc.returncode == 0, proc.stderr
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    return db


def open_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def ended(store: Store, run_id: str) -> list[dict]:
    """The run's ablations once the first has ended (the page's worker runs it in this process), or as they stand
    after a minute."""
    def rows() -> list[dict]:
        found = store.ablations(run_id).to_dict("records")
        return found if found and found[0]["status"] in ("done", "failed") else []

    return wait_for(rows, timeout=60, pause=0.2) or store.ablations(run_id).to_dict("records")


def test_only_the_fields_the_run_had_are_offered(faith_only_db: Path) -> None:
    at = open_page()
    assert at.multiselect(key="abl_blanks").options == ["contexts"]
    assert at.multiselect(key="abl_blanks").value == []          # the default, ground_truth, is not there
    assert at.multiselect(key="abl_swaps").options == []         # no reference or question to swap


def test_the_scorers_the_operator_allows_are_offered_and_run(faith_only_db: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert open_page().selectbox(key="abl_scorer").options == ["a judge (chosen below)"]
    monkeypatch.setenv("EVALDRIFT_SCORERS", SCORER)
    at = open_page()
    assert at.selectbox(key="abl_scorer").options == ["a judge (chosen below)", SCORER]
    at.selectbox(key="abl_scorer").select(SCORER).run()
    at.multiselect(key="abl_blanks").select("contexts").run()
    at.button(key="abl_launch").click().run()
    assert not at.exception, [e.value for e in at.exception]
    store = ui.open_store(str(faith_only_db))   # the dashboard's own connection (this process owns the file)
    [row] = ended(store, "faith-only")
    assert row["status"] == "done"
    assert json.loads(row["spec"])["scorer"] == SCORER


def test_a_swap_is_offered_counted_and_run_from_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HaluEval right answers with another question's passage, a template that renders the reference: swapping
    the reference on the page names its cost, runs, and shows the swap's row, a LEAK with its sign."""
    from tests.support import synthetic_runs as syn
    from tests.test_arms_public_records import retrieval_misses

    db = tmp_path / "evals.duckdb"
    with Store(db) as store:
        syn.record(store, "h", retrieval_misses(), "faithfulness", syn.LEAKY_FAITHFULNESS, syn.REPLAY)
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    at = open_page()
    assert at.multiselect(key="abl_swaps").options == ["ground_truth", "question"]
    at.multiselect(key="abl_blanks").set_value([]).run()
    at.multiselect(key="abl_swaps").set_value(["ground_truth"]).run()
    assert not at.exception, [e.value for e in at.exception]
    cost = [c.value for c in at.caption if c.value.startswith("Before launch:")]
    assert cost and "swap a field with another sample's" in cost[0] and "the positive control" in cost[0]
    at.button(key="abl_launch").click().run()
    [row] = ended(ui.open_store(str(db)), "h")
    assert row["status"] == "done" and json.loads(row["spec"])["swaps"] == ["ground_truth"]
    at.run()
    shown = " ".join(e.value for e in at.error)
    assert "LEAK: faithfulness moves" in shown and "swapped for another sample's" in shown and "falls" in shown
