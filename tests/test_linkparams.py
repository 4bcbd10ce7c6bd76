"""Deep links and pages that must not crash: an ablation in progress beside one with a result, and query
parameters out of range (issue 9 item 8). Every bad parameter gets a message, never a traceback."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
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


@pytest.fixture(scope="module")
def _ablation_in_progress_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """db_with_ablation_in_progress's database, built once for the module (never opened after: copied)."""
    db = tmp_path_factory.mktemp("linkparams") / "team.duckdb"
    with Store(db) as store:
        store.record_run(good_run("r0"))
        store.record_run(good_run("r1"))
        done = run_ablation(store, AblationSpec("r1", ("faithfulness",), ("ground_truth",), repeats=1),
                            OfflineJudge())
        assert done is not None
        store.start_ablation("abl-running", "r1", "main", {"run_id": "r1", "metrics": ["faithfulness"],
                                                          "blanks": ["question"], "repeats": 1}, "offline", 4)
    assert not Path(f"{db}.wal").exists()   # closed and checkpointed: the file alone is the database
    return db


@pytest.fixture(scope="module")
def _ablation_in_progress_copy(_ablation_in_progress_built: Path, tmp_path_factory: pytest.TempPathFactory
                               ) -> Iterator[Path]:
    """One copy the module's pages read (none writes: a bad link only gets a message), so they share the pages'
    cached frames as one dashboard's sessions do; its store closed when the module is done."""
    db = Path(shutil.copy(_ablation_in_progress_built, tmp_path_factory.mktemp("linkparams-read") / "team.duckdb"))
    yield db
    ui.open_store(str(db)).close()
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def db_with_ablation_in_progress(_ablation_in_progress_copy: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One ablation done (with a result), another still running (no result yet), named by EVALDRIFT_DB."""
    monkeypatch.setenv("EVALDRIFT_DB", str(_ablation_in_progress_copy))
    return _ablation_in_progress_copy


def test_briefs_read_an_ablation_without_a_result_beside_one_with(db_with_ablation_in_progress: Path) -> None:
    with Store(db_with_ablation_in_progress) as store:
        briefs = {b.ablation_id: b for b in ablation_views.ablation_briefs(store)}
    assert briefs["abl-running"].status == "running" and briefs["abl-running"].summary == ""
    [finished] = [b for b in briefs.values() if b.ablation_id != "abl-running"]
    assert finished.status == "done" and finished.summary


def open_page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params.update(params)   # the link opened as it is (no Overview run first)
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
    ("pages/run.py", {"run": "r1", "q": "x" * 500}, "The link's q"),
    ("pages/run.py", {"run": "r1", "score": "0.9-0.1"}, "The link's score"),
    ("pages/run.py", {"run": "r1", "score": "high"}, "The link's score"),
    ("pages/run.py", {"run": "r1", "verdict": "maybe"}, "The link's verdict"),
    ("pages/run.py", {"run": "r1", "found": "the moon"}, "The link's found"),
    ("pages/trends.py", {"from": "2026-13-01", "to": "2026-10-01"}, "The link's from"),
    ("pages/trends.py", {"from": "2030-01-01", "to": "2030-01-31"}, "No run started between the link's from"),
    ("pages/trends.py", {"from": "2026-10-20", "to": "2026-09-10"}, "The link's from"),   # once browser cases
    ("pages/compare.py", {"run": "r1", "run_b": "r0", "split": "yes"}, "The link's split"),
]


@pytest.mark.parametrize(("page", "params", "said"), BAD_LINKS,
                         ids=[f"{p.split('/')[1][:-3]}-{'-'.join(q)}-{i}" for i, (p, q, _) in enumerate(BAD_LINKS)])
def test_a_bad_query_parameter_gets_a_message_not_a_traceback(db_with_ablation_in_progress: Path, page: str,
                                                               params: dict[str, str], said: str) -> None:
    at = open_page(page, **params)
    warnings = " ".join(w.value for w in at.warning)
    assert said in warnings.replace("\\", ""), warnings


def test_a_database_file_offers_no_as_of_and_a_links_asof_is_said(db_with_ablation_in_progress: Path) -> None:
    """A DuckDB file keeps only its present: no As of input, and a link's asof gets a warning and the present."""
    at = open_page("pages/overview.py", asof="2026-10-31")
    assert "keeps only its present" in " ".join(w.value for w in at.warning)
    assert not [d for d in at.date_input if d.key == "as_of_choice"]
    assert not [i for i in at.info if "As of" in i.value] and "asof" not in at.query_params


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


# -- the Run page's filters, Trends' range, Compare's split (issue 14 item 17) ----------------------------------
@pytest.mark.parametrize(("text", "expected", "said"), [
    (None, None, None),
    ("0.20-0.80", (0.2, 0.8), None),
    ("0.5-0.5", (0.5, 0.5), None),
    ("0-1", (0.0, 1.0), None),
    ("0.21-0.79", (0.2, 0.8), None),           # onto the slider's steps
    ("0.8-0.2", None, "starts above its end"),
    ("0.2-1.5", None, "outside 0 to 1"),
    ("0.5", None, "not a range"),
    ("nan-0.5", None, "not a range"),
    ("-0.1-0.5", None, "not a range"),
    ("low-high", None, "not a range"),
])
def test_score_range_from_a_link(text: str | None, expected: tuple[float, float] | None, said: str | None) -> None:
    picked, problem = linkparams.score_range(text)
    assert picked == expected
    assert (problem is None) == (said is None)
    if said:
        assert said in problem and "score" in problem


def test_score_text_is_what_score_range_reads_and_omits_the_whole_range() -> None:
    assert linkparams.score_text(0.0, 1.0) is None
    assert linkparams.score_range(linkparams.score_text(0.25, 0.75)) == ((0.25, 0.75), None)


@pytest.mark.parametrize(("text", "expected", "said"), [
    (None, None, False), ("refund policy", "refund policy", False), ("x" * 200, "x" * 200, False),
    ("x" * 201, None, True),
])
def test_search_from_a_link(text: str | None, expected: str | None, said: bool) -> None:
    picked, problem = linkparams.search(text)
    assert picked == expected and (problem is not None) == said


DAYS = [date(2026, 10, 1), date(2026, 10, 2), date(2026, 10, 5), date(2026, 10, 9)]


@pytest.mark.parametrize(("start", "end", "expected", "said"), [
    (None, None, None, None),
    ("2026-10-01", "2026-10-09", (date(2026, 10, 1), date(2026, 10, 9)), None),
    ("2026-10-02", "2026-10-06", (date(2026, 10, 2), date(2026, 10, 5)), None),   # to the run days inside
    ("2026-09-01", "2026-10-01", (date(2026, 10, 1), date(2026, 10, 1)), None),
    ("2026-10-06", "2026-10-08", None, "No run started between"),
    ("2026-10-09", None, None, "both"),
    ("2026-10-09", "2026-10-01", None, "after"),
    ("soon", "2026-10-01", None, "not a date"),
])
def test_trends_range_from_a_link(start: str | None, end: str | None, expected: tuple | None,
                                  said: str | None) -> None:
    picked, problem = linkparams.day_span(start, end, DAYS)
    assert picked == expected
    assert (problem is None) == (said is None)
    if said:
        assert said in problem


@pytest.mark.parametrize(("text", "expected", "said"), [(None, False, False), ("1", True, False),
                                                         ("0", False, True), ("yes", False, True)])
def test_a_flag_from_a_link(text: str | None, expected: bool, said: bool) -> None:
    on, problem = linkparams.flag("split", text)
    assert on == expected and (problem is not None) == said
    if said:
        assert "split" in problem


@pytest.mark.parametrize(("text", "expected", "said"), [
    (None, None, False), ("1", 1, False), ("12", 12, False), ("007", 7, False),
    ("0", None, True), ("-2", None, True), ("2.5", None, True), ("two", None, True), ("", None, True),
    ("\u0662", None, True),            # an Arabic-Indic two: int() reads it, a link's page is ASCII digits
    ("9" * 10, None, True),             # not a number any run has pages for
])
def test_a_page_number_from_a_link(text: str | None, expected: int | None, said: bool) -> None:
    picked, problem = linkparams.page_number(text)
    assert picked == expected and (problem is not None) == said
    if said:
        assert "link's page" in problem


@pytest.mark.parametrize(("asked", "pages", "said"), [(1, 1, False), (3, 13, False), (13, 13, False),
                                                      (14, 13, True), (2, 1, True)])
def test_a_linked_page_past_the_last_is_said(asked: int, pages: int, said: bool) -> None:
    problem = linkparams.past_last_page(asked, pages)
    assert (problem is not None) == said
    if said:
        assert f"page {asked}" in problem and f"showing page {pages}" in problem


def test_page_text_is_what_page_number_reads_and_omits_the_first_page() -> None:
    assert linkparams.page_text(1) is None
    assert linkparams.page_number(linkparams.page_text(4)) == (4, None)


# -- every parameter a page reads or writes is registered ------------------------------------------------------
_READ = re.compile(r"""(?:query_param|query_list|link_followed)\(\s*(?:"[\w_]+",\s*)?["']([\w_]+)["']""")
_SEEDED = re.compile(r"""seed_(?:from_query|list_from_query|value)\(\s*["'][\w_]+["'],\s*\(?["']([\w_]+)["']""")
_WRITTEN = re.compile(r"set_query\(([^)]*)\)", re.S)
_LINKED = re.compile(r"query_params=\{([^}]*)\}", re.S)
_SUSPECT_LINK = re.compile(r"params = \{([^}]*)\}")   # views.py: a jump's test, linked from the Overview


def _names_in_code() -> set[str]:
    names: set[str] = set()
    for path in [*ROOT.glob("pages/*.py"), *ROOT.glob("lib/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        names |= set(_READ.findall(text)) | set(_SEEDED.findall(text))
        for args in _WRITTEN.findall(text):
            names |= set(re.findall(r"(\w+)=", args)) | set(re.findall(r"""["'](\w+)["']\s*:""", args))
        links = _LINKED.findall(text) + (_SUSPECT_LINK.findall(text) if path.name == "views.py" else [])
        for literal in links:
            names |= set(re.findall(r"""["'](\w+)["']\s*:""", literal))
    return names - {"params"}


TODAY = date(2026, 12, 6)


@pytest.mark.parametrize(("text", "team_store", "expected", "said"), [
    (None, True, None, None),                          # no link: now
    (None, False, None, None),
    ("2026-10-31", True, date(2026, 10, 31), None),    # a day on a team store
    ("2026-12-06", True, TODAY, None),                 # today (its end: the present)
    ("2026-10-31", False, None, "a DuckDB file, which keeps only its present"),
    ("31/10/2026", True, None, "is not a date"),
    ("2026-02-30", True, None, "is not a date"),
    ("20261031", True, None, "is not a date"),          # fromisoformat would take it: a link spells it out
    ("ducklake:postgres:dbname=x", True, None, "is not a date"),   # a store is never named by a link
    ("1969-12-31", True, None, "is before"),           # before any run can start (linkparams.FIRST_DAY)
    ("2026-12-07", True, None, "is after today"),
])
def test_the_as_of_day_from_a_link(text: str | None, team_store: bool, expected: date | None,
                                   said: str | None) -> None:
    day, problem = linkparams.as_of_day(text, team_store=team_store, today=TODAY)
    assert day == expected
    assert (problem is None) == (said is None) and (said is None or said in str(problem))


@pytest.mark.parametrize("when", [None, datetime(2026, 10, 31, 23, 59, 59, 999_999),
                                  datetime(2026, 10, 31, 18, 0, tzinfo=timezone(timedelta(hours=2)))])
def test_a_store_read_as_of_a_time_is_cached_apart_from_its_present(when: datetime | None) -> None:
    url = "ducklake:postgres:dbname=evals host=127.0.0.1"
    key = ui.reading_key(url, when)
    assert ui.split_key(key) == (url, when)
    assert (key == url) == (when is None)   # the loaders' cache keys hold the time beside the store


def test_every_link_parameter_in_the_pages_is_registered() -> None:
    names = _names_in_code()
    assert {"run", "metric", "view", "q", "score", "verdict", "found", "from", "to", "run_b", "split", "ablation",
            "blank", "page"} <= names   # the scan sees them
    assert names <= set(linkparams.PARAMS), names - set(linkparams.PARAMS)
    assert set(linkparams.PARAMS) <= names, "registered but used nowhere"


def test_an_unregistered_parameter_is_refused() -> None:
    with pytest.raises(KeyError, match=r"not in linkparams\.PARAMS"):
        linkparams.registered("colour")


def test_the_readme_lists_every_link_parameter() -> None:
    readme = (ROOT / "pages" / "README.md").read_text(encoding="utf-8")   # the pages' reference
    table = readme.split("<!-- link-params -->")[1].split("<!-- /link-params -->")[0]
    for name in linkparams.PARAMS:
        assert f"| `{name}` |" in table, name
