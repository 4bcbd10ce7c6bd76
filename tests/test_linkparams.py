"""Deep links and pages that must not crash: an ablation in progress beside one with a result, and query
parameters out of range (issue 9 item 8). Every bad parameter gets a message, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from lib.app import ui
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.judging import OfflineJudge
from lib.presentation import ablation_views, linkparams
from lib.store import Store
from tests.test_validate import good_run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def db_with_ablation_in_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """One ablation done (with a result), another still running (no result yet)."""
    db = tmp_path / "team.duckdb"
    with Store(db) as store:
        store.record_run(good_run("r0"))
        store.record_run(good_run("r1"))
        done = run_ablation(store, AblationSpec("r1", ("faithfulness",), ("ground_truth",), repeats=1),
                            OfflineJudge())
        assert done is not None
        store.start_ablation("abl-running", "r1", "main", {"run_id": "r1", "metrics": ["faithfulness"],
                                                          "blanks": ["question"], "repeats": 1}, "offline", 4)
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    yield db
    ui.open_store(str(db)).close()
    st.cache_resource.clear()
    st.cache_data.clear()


def test_briefs_read_an_ablation_without_a_result_beside_one_with(db_with_ablation_in_progress: Path) -> None:
    with Store(db_with_ablation_in_progress) as store:
        briefs = {b.ablation_id: b for b in ablation_views.ablation_briefs(store)}
    assert briefs["abl-running"].status == "running" and briefs["abl-running"].summary == ""
    [finished] = [b for b in briefs.values() if b.ablation_id != "abl-running"]
    assert finished.status == "done" and finished.summary


def open_page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.query_params.update(params)
    at.switch_page(page).run()
    assert not at.exception, (page, params, [e.value for e in at.exception])
    return at


@pytest.mark.parametrize("page", ["pages/review.py", "pages/ablation.py"])
def test_review_and_ablation_pages_render_with_an_ablation_in_progress(db_with_ablation_in_progress: Path,
                                                                       page: str) -> None:
    open_page(page)


BAD_LINKS = [
    # (page, query parameters, what the warning must say)
    ("pages/review.py", {"from": "0001-01-01", "to": "9999-12-31"}, "outside"),
    ("pages/review.py", {"from": "2026-13-45", "to": "2026-10-01"}, "not a date"),
    ("pages/review.py", {"from": "2026-10-09", "to": "2026-10-01"}, "after"),
    ("pages/review.py", {"from": "2026-10-01"}, "both"),
    ("pages/run.py", {"run": "no-such-run"}, "no-such-run"),
    ("pages/run.py", {"run": "r1", "metric": "helpfulness"}, "helpfulness"),
    ("pages/run.py", {"run": "r1", "view": "s-404"}, "s-404"),
    ("pages/trends.py", {"metric": "x" * 500}, "metric"),
    ("pages/compare.py", {"run": "r1", "run_b": "nope"}, "nope"),
    ("pages/ablation.py", {"run": "r1", "blank": "answerz"}, "answerz"),
    ("pages/ablation.py", {"run": "r1", "metric": "helpfulness"}, "helpfulness"),
    ("pages/ablation.py", {"ablation": "abl-404"}, "No ablation with this id"),
]


@pytest.mark.parametrize(("page", "params", "said"), BAD_LINKS,
                         ids=[f"{p.split('/')[1][:-3]}-{'-'.join(q)}-{i}" for i, (p, q, _) in enumerate(BAD_LINKS)])
def test_a_bad_query_parameter_gets_a_message_not_a_traceback(db_with_ablation_in_progress: Path, page: str,
                                                               params: dict[str, str], said: str) -> None:
    at = open_page(page, **params)
    warnings = " ".join(w.value for w in at.warning)
    assert said in warnings.replace("\\", ""), warnings


@pytest.mark.parametrize(("start", "end", "expected"), [
    (None, None, (None, None)),
    ("2026-10-01", "2026-10-07", ((date(2026, 10, 1), date(2026, 10, 7)), None)),
    ("2026-10-07", "2026-10-07", ((date(2026, 10, 7), date(2026, 10, 7)), None)),
    ("0001-01-01", "2026-10-07", (None, "outside")),
    ("2026-10-01", "9999-12-31", (None, "outside")),
    ("1969-12-31", "2026-10-07", (None, "outside")),
    ("2026-10-01", "2200-01-01", (None, "outside")),
    ("yesterday", "2026-10-07", (None, "not a date")),
    ("2026-10-08", "2026-10-07", (None, "after")),
    ("2026-10-08", None, (None, "both")),
    (None, "2026-10-08", (None, "both")),
])
def test_review_range_from_a_link(start: str | None, end: str | None, expected: tuple) -> None:
    picked, problem = linkparams.date_range(start, end)
    assert picked == expected[0]
    assert (problem is None) == (expected[1] is None)
    if expected[1]:
        assert expected[1] in problem
