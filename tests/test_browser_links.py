"""Deep links keep every view a user can reach (issue 14 item 17), in a real browser: a pasted link restores the
Run page's sample filters, Trends' date range and Compare's split; changing the widget writes the URL; a bad
value gets a warning naming its parameter, never a traceback."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from lib.diagnosis.trends import Jump, find_jumps
from lib.intake.chunked import ingest_file
from lib.presentation.sample_pages import PAGE_ROWS, WHOLE_RUN_MAX
from lib.store import Store
from tests.support.browser import (
    StreamlitServer,
    copy_db,
    exceptions_shown,
    follow,
    main_text,
    wait_for_app,
)
from tests.test_pages_journeys import query, selected, table_cells_showing

pytestmark = pytest.mark.e2e
SPLIT_S = 240.0   # the split re-judges both runs' samples with both instruments (offline), on a busy machine



@pytest.fixture(scope="module")
def leak(demo_db: Path) -> Jump:
    with Store(demo_db) as store:
        return next(j for j in find_jumps(store) if j.metric == "faithfulness")


@pytest.fixture(scope="module")
def server(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    work = tmp_path_factory.mktemp("links")
    with StreamlitServer(copy_db(demo_db, work / "demo.duckdb"), log_dir=work / "logs") as s:
        yield s


BIG_RUN = WHOLE_RUN_MAX + 2 * PAGE_ROWS + 7   # samples: read a page at a time, the last page short
BIG_PAGES = -(-BIG_RUN // PAGE_ROWS)


@pytest.fixture(scope="module")
def big_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    """A dashboard on one run too large to show whole (sample ids s00000, s00001, ... in page order)."""
    work = tmp_path_factory.mktemp("links-big")
    rows = work / "big.jsonl"
    rows.write_text("".join(json.dumps({"sample_id": f"s{i:05d}", "question": f"question {i}?",
                                        "answer": f"answer {i}", "contexts": [f"passage {i}"],
                                        "ground_truth": f"ref {i}", "faithfulness": (i % 5) / 4}) + "\n"
                            for i in range(BIG_RUN)), encoding="utf-8")
    with Store(work / "big.duckdb") as store:
        ingest_file(store, rows, run_id="big")
    with StreamlitServer(work / "big.duckdb", log_dir=work / "logs") as s:
        yield s


def first_sample_on_page(n: int) -> str:
    return f"s{(n - 1) * PAGE_ROWS:05d}"


def open_link(page: Page, server: StreamlitServer, path: str, *, timeout: float = 60.0) -> None:
    page.goto(f"{server.url}/{path}")
    wait_for_app(page, timeout=timeout)
    assert exceptions_shown(page) == [], path


def thumbs(page: Page, key: str) -> list[str]:
    """The values a keyed slider's thumbs show (start, end)."""
    return [t.get_attribute("aria-valuetext") or "" for t in page.locator(f".st-key-{key} input[type=range]").all()]


def pick_in_view(page: Page, key: str, option: str) -> None:
    """Pick `option` in a keyed selectbox scrolled to the middle (at the window's bottom edge its list does not
    open), typing it first (a long list draws only the options in view)."""
    page.locator(f".st-key-{key}").evaluate("e => e.scrollIntoView({block: 'center'})")
    box = page.locator(f".st-key-{key} input[role=combobox]").first
    box.click()
    box.fill(option)
    page.get_by_role("option").filter(has_text=re.compile("^" + re.escape(option))).first.click()
    wait_for_app(page)


def warnings(page: Page) -> str:
    return " ".join(page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts())


# -- the Run page's sample filters ------------------------------------------------------------------------------
def test_a_run_link_restores_the_search_score_range_verdict_and_evidence_location_and_changing_them_writes_it(
        server: StreamlitServer, page: Page, leak: Jump) -> None:
    """One page load: the link's filters restored, then each changed by hand and written to the URL (that a default
    stays out of the link is checked on the plain Run links of the bad-value test below)."""
    link = (f"run?run={leak.run_id}&metric=faithfulness&q=audit&score=0.20-0.80&verdict=unsupported"
            "&found=ground_truth")
    open_link(page, server, link)
    assert page.locator(".st-key-run_search input").input_value() == "audit"
    assert thumbs(page, "run_score_range") == ["0.20", "0.80"]
    assert selected(page, "run_verdict") == "unsupported"
    assert selected(page, "run_location") == "ground_truth"
    assert "2 of 400 samples" in main_text(page)   # the filters ran, not only their widgets
    url = query(page)
    assert (url["q"], url["score"], url["verdict"], url["found"]) == ("audit", "0.20-0.80", "unsupported",
                                                                     "ground_truth")

    search = page.locator(".st-key-run_search input")
    search.fill("retention")
    search.press("Enter")
    wait_for_app(page)
    assert query(page)["q"] == "retention"
    pick_in_view(page, "run_location", "contexts")
    assert query(page)["found"] == "contexts"
    pick_in_view(page, "run_verdict", "supported")
    assert query(page)["verdict"] == "supported"
    page.locator(".st-key-run_score_range input[type=range]").first.press("ArrowRight")
    wait_for_app(page)
    assert query(page)["score"] == "0.25-0.80"
    assert query(page)["q"] == "retention"   # the other filters stay in the link


# -- the Run page's page of a large run -----------------------------------------------------------------------------
def test_a_run_link_with_a_page_number_opens_that_page_and_turning_the_page_writes_it(big_server: StreamlitServer,
                                                                                     page: Page) -> None:
    """And then a linked page past the last shows the last and says so."""
    open_link(page, big_server, "run?run=big&metric=faithfulness&page=3")
    assert page.locator(".st-key-run_page input").input_value() == "3"
    assert f"page 3 of {BIG_PAGES}" in main_text(page)
    cells = table_cells_showing(page, "sample_id", first_sample_on_page(3))
    assert first_sample_on_page(3) in cells and first_sample_on_page(1) not in cells, cells[:8]
    assert query(page)["page"] == "3"
    box = page.locator(".st-key-run_page input")
    box.fill("5")
    box.press("Enter")
    wait_for_app(page)
    assert f"page 5 of {BIG_PAGES}" in main_text(page)
    cells = table_cells_showing(page, "sample_id", first_sample_on_page(5))
    assert first_sample_on_page(5) in cells and first_sample_on_page(3) not in cells, cells[:8]
    assert query(page)["page"] == "5" and query(page)["run"] == "big"
    box.fill("1")
    box.press("Enter")
    wait_for_app(page)
    assert "page" not in query(page)   # the first page is the default: not in the link
    # a linked page past the last shows the last and says so (it was a test of its own, with a page load of its own):
    # a link in this session, as the dashboard's own are followed
    follow(page, f"{big_server.url}/run?run=big&metric=faithfulness&page=99")
    assert exceptions_shown(page) == []
    assert "link's page 99 is past the last page" in warnings(page), warnings(page)
    assert f"page {BIG_PAGES} of {BIG_PAGES}" in main_text(page)
    assert query(page)["page"] == str(BIG_PAGES)


# -- Trends' date range ---------------------------------------------------------------------------------------------
# On one metric's chart: the range is the same for every metric, and one metric's chart costs Chromium and the
# dashboard about half the five metrics' (about 1.75 CPU s a load against 3.3 s on the demo).
def test_a_trends_link_restores_its_date_range_and_moving_it_writes_the_url(server: StreamlitServer,
                                                                            page: Page) -> None:
    open_link(page, server, "trends?metric=faithfulness&from=2026-09-10&to=2026-10-20")
    assert thumbs(page, "trends_range") == ["2026-09-10", "2026-10-20"]
    assert query(page)["from"] == "2026-09-10" and query(page)["to"] == "2026-10-20"
    page.locator(".st-key-trends_range input[type=range]").last.press("ArrowRight")
    wait_for_app(page)
    end = thumbs(page, "trends_range")[1]
    assert end > "2026-10-20" and query(page)["to"] == end and query(page)["from"] == "2026-09-10"

# That a Trends link without a range stays short (no from and to written into it) is checked on the loads of
# tests/test_e2e.py's test_a_point_on_the_trends_chart_opens_its_run (one metric and every metric).


# -- Compare's split -------------------------------------------------------------------------------------------------
def test_a_compare_link_with_split_shows_the_split_and_another_run_drops_it(server: StreamlitServer, page: Page,
                                                                          leak: Jump) -> None:
    open_link(page, server, f"compare?run={leak.run_id}&run_b={leak.prev_run_id}&metric=faithfulness&split=1",
              timeout=SPLIT_S)
    assert "Re-judged move" in main_text(page)
    assert query(page)["split"] == "1"
    pick_in_view(page, "compare_base", leak.run_id)   # another baseline: no split shown, none re-judged by itself
    assert "Re-judged move" not in main_text(page)
    assert "split" not in query(page)


# -- bad values --------------------------------------------------------------------------------------------------------
# The bad values of score, found, verdict and Trends' from are AppTest cases (tests/test_linkparams.py BAD_LINKS, where
# the browser cases that repeated them went); a bad page number is checked here, in one browser session.
def test_a_bad_value_in_a_link_gets_a_warning_naming_its_parameter(server: StreamlitServer, page: Page) -> None:
    """The first link pasted (a new session), the next ones followed in that session as the dashboard's own links
    are (no page load): a link that changes a parameter is read as a pasted one is (ui.seed_value)."""
    for n, (path, param) in enumerate((("run?metric=faithfulness&page=two", "page"),
                                       ("run?metric=faithfulness&page=0", "page"),
                                       ("trends?metric=faithfulness&from=2031-01-01&to=2031-01-31", "from"))):
        if n == 0:
            open_link(page, server, path)
        else:
            follow(page, f"{server.url}/{path}")
            assert exceptions_shown(page) == [], path
        assert f"link's {param}" in warnings(page), (path, warnings(page))
        if path.startswith("run?"):   # a Run link without filters: their defaults stay out of the link
            assert not {"q", "score", "verdict", "found"} & set(query(page)), page.url
