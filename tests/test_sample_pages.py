"""The Run page's samples a page at a time (issue 9 item 12): a large run is filtered in SQL and only one page
is built, with the same rows, page by page, as the whole table filtered in memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.samples import EvalSample
from lib.presentation import sample_pages
from lib.presentation.sample_pages import SampleFilters, sample_page
from lib.store import Store
from tests.support.synthetic_runs import Facts, record, samples

N = 47


def case(i: int, f: Facts) -> EvalSample:
    answer = f"{f.fact1} {f.fact2}" if i % 3 else f.fact1           # a third wholly supported
    question = f.question + (" it's 'quoted'; DROP TABLE samples; --" if i == 40 else "")
    return EvalSample(f"s{i:02d}", question, answer, (f.fact1, f.filler), f.fact2)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The run of N samples, judged and recorded once for the module (0.5-1.3 CPU s each time): the tests only read."""
    with Store(tmp_path_factory.mktemp("pages") / "p.duckdb") as s:
        record(s, "r", samples(case, N), "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
        yield s


FILTERS = [
    SampleFilters(),
    SampleFilters(search="DAYS"),                                 # case-insensitive, in every sample
    SampleFilters(search="'quoted'; drop table"),                  # quotes and SQL are text to find
    SampleFilters(search="s4"),                                   # the sample id
    SampleFilters(score_range=(0.6, 1.0)),
    SampleFilters(score_range=(0.0, 0.5)),
    SampleFilters(verdict="unsupported"),
    SampleFilters(verdict="supported", score_range=(0.9, 1.0)),
    SampleFilters(search="no such words"),
]


def ids(frame: pd.DataFrame) -> list[str]:
    return frame["sample_id"].tolist()


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: repr(f)[14:60])
def test_pages_of_a_large_run_hold_the_rows_the_whole_table_holds(store: Store, filters: SampleFilters,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    whole = sample_page(store, "r", "faithfulness", filters)
    assert not whole.paged and whole.total == N
    monkeypatch.setattr(sample_pages, "WHOLE_RUN_MAX", 10)
    monkeypatch.setattr(sample_pages, "PAGE_ROWS", 7)
    first = sample_page(store, "r", "faithfulness", filters)
    assert first.paged and first.matched == len(whole.rows) and first.pages == max(1, -(-len(whole.rows) // 7))
    got = []
    for page in range(1, first.pages + 1):
        part = sample_page(store, "r", "faithfulness", filters, page=page)
        assert len(part.rows) <= 7 and set(part.scores["sample_id"]) == set(ids(part.rows))
        got.append(part.rows)
    paged = pd.concat(got, ignore_index=True)
    if whole.rows.empty:
        assert paged.empty
    else:
        pd.testing.assert_frame_equal(paged, whole.rows.reset_index(drop=True), check_dtype=False)


def test_on_a_paged_run_the_evidence_filter_keeps_the_pages_rows_evidenced_there(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = sample_page(store, "r", "faithfulness", SampleFilters(location="contexts"))
    monkeypatch.setattr(sample_pages, "WHOLE_RUN_MAX", 10)
    monkeypatch.setattr(sample_pages, "PAGE_ROWS", 7)
    page = sample_page(store, "r", "faithfulness", SampleFilters(location="contexts"), page=2)
    on_page = set(sample_pages.filtered_ids(store, "r", "faithfulness", SampleFilters())[7:14])
    assert ids(page.rows) == [s for s in ids(whole.rows) if s in on_page] and len(page.rows) > 0


def test_a_page_past_the_end_is_the_last_page(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sample_pages, "WHOLE_RUN_MAX", 10)
    monkeypatch.setattr(sample_pages, "PAGE_ROWS", 20)
    last = sample_page(store, "r", "faithfulness", page=99)
    assert (last.page, last.pages, ids(last.rows)[-1]) == (3, 3, f"s{N - 1:02d}")


# -- the Run page on a run too large to show whole --------------------------------------------------------------
def test_the_run_page_of_a_large_run_shows_a_page_and_finds_a_sample_anywhere_in_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from streamlit.testing.v1 import AppTest

    from lib.intake.chunked import ingest_file

    n = sample_pages.WHOLE_RUN_MAX + 1_200
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps({"sample_id": f"s{i:05d}", "question": f"question {i}?",
                                        "answer": f"answer {i}", "contexts": [f"passage {i}"],
                                        "ground_truth": f"ref {i}", "faithfulness": (i % 5) / 4})
                            + "\n" for i in range(n)), encoding="utf-8")
    db = tmp_path / "big.duckdb"
    with Store(db) as store:
        ingest_file(store, path, run_id="big")
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    monkeypatch.setenv("EVALDRIFT_INBOX", str(tmp_path / "inbox"))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.query_params.update({"run": "big", "metric": "faithfulness"})   # a link to the run (no Overview first)
    at.switch_page("pages/run.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d for d in at.dataframe if "sample_id" in d.value.columns)
    assert len(table.value) == sample_pages.PAGE_ROWS                    # one page, not the run
    pages = -(-n // sample_pages.PAGE_ROWS)
    assert at.number_input("run_page").max == pages
    assert len(at.selectbox("run_sample").options) == sample_pages.PAGE_ROWS
    at.number_input("run_page").set_value(pages).run()                   # the last page, then a search that
    assert not at.exception, [e.value for e in at.exception]             # leaves one page: shown as page 1
    at.text_input("run_search").input(f"s{n - 3:05d}").run()             # on the last page, found by SQL
    assert not at.exception, [e.value for e in at.exception]
    assert at.number_input("run_page").value == 1 and at.query_params.get("page") is None
    table = next(d for d in at.dataframe if "sample_id" in d.value.columns)
    assert table.value["sample_id"].tolist() == [f"s{n - 3:05d}"]
    assert any(f"1 of {n:,} samples match" in c.value for c in at.caption)


# -- issue 23 item 7: a sample larger than a page can send -------------------------------------------------------
def test_the_run_page_cuts_a_huge_sample_with_a_note_and_offers_the_whole_as_a_download(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime

    from streamlit.testing.v1 import AppTest

    from lib.core.records import MAIN, MetricRecord, RunRecord
    from lib.core.results import OK, SampleResult
    from lib.core.samples import EvalSample
    from lib.presentation import clip

    answer = "The kettle is fine. " * 150_000                       # 3,000,000 characters
    passages = ("p" * 1_500_000, "q" * 1_500_000, "short")
    question = "Why? " * 2_000
    monkeypatch.setenv("EVALDRIFT_MAX_FIELD_CHARS", "10000000")      # a run recorded under a raised cap
    db = tmp_path / "huge.duckdb"
    with Store(db) as store:
        store.record_run(RunRecord("huge", datetime(2026, 10, 1), {}, {MAIN: [
            EvalSample("big", question, answer, passages, "ref")]},
            [MetricRecord("faithfulness", [SampleResult("big", OK, 0.5)], "judge-x", None, None)]))
    monkeypatch.delenv("EVALDRIFT_MAX_FIELD_CHARS")
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    monkeypatch.setenv("EVALDRIFT_INBOX", str(tmp_path / "inbox"))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.query_params.update({"run": "huge", "metric": "faithfulness", "view": "big"})   # a link to the sample
    at.switch_page("pages/run.py").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [t.value for t in at.text]
    assert texts and max(len(t) for t in texts) <= clip.SHOW_CHARS + 10, max(len(t) for t in texts)
    assert texts.count("[1] " + "p" * clip.SHOW_CHARS) == 1 and not any(t.startswith("[2]") for t in texts)
    notes = " ".join(c.value for c in at.caption)
    assert f"showing the first {clip.SHOW_CHARS:,} of 3,000,000 characters" in notes
    assert "2 more not shown" in notes
    downloads = [b.proto.label for b in at.get("download_button")]
    assert downloads == ["Download the whole answer", "Download the whole contexts"]
    table = next(d for d in at.dataframe if "sample_id" in d.value.columns)
    assert len(table.value["question"][0]) == clip.LIST_CHARS + len(clip.CUT_MARK)


@pytest.mark.parametrize(("passages", "limit", "shown", "hidden"), [
    (("abc", "de"), 10, ["abc", "de"], 0),          # all fit
    (("abcdef", "gh"), 4, ["abcd"], 1),             # the first is cut, the second left out
    (("ab", "cdef", "g"), 4, ["ab", "cd"], 1),      # the budget runs out inside the second
    ((), 4, [], 0),
])
def test_passages_share_one_budget(passages: tuple[str, ...], limit: int, shown: list[str], hidden: int) -> None:
    from lib.presentation import clip

    parts, left_out = clip.clip_passages(passages, limit)
    assert ([p.shown for p in parts], left_out) == (shown, hidden)
