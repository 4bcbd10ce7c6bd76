"""The Labels page in a real browser: a person labels five samples, one click per item, and sees the queue move and
the judge's agreement with people update."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from lib.core.samples import EvalSample
from lib.store import Store
from tests.support.browser import StreamlitServer, exceptions_shown, main_text, wait_for_app
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, REPLAY, facts, record

pytestmark = pytest.mark.e2e


def mixed(i: int, f) -> EvalSample:
    """Claim 1 is in the passages; claim 2 too on even samples, only in the reference on odd ones."""
    passages = (f"{f.fact1} {f.filler}", f.fact2) if i % 2 == 0 else (f"{f.fact1} {f.filler}",)
    return EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", passages, f"{f.fact1} {f.fact2}")



@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamlitServer]:
    """A run judged by a judge shown the reference: it calls every claim supported."""
    work = tmp_path_factory.mktemp("labels")
    with Store(work / "labels.duckdb") as store:
        record(store, "r1", [mixed(i, f) for i, f in enumerate(facts(10))], "faithfulness", LEAKY_FAITHFULNESS,
               REPLAY)
    with StreamlitServer(work / "labels.duckdb", log_dir=work / "logs") as s:
        yield s


def agreement_row(page: Page) -> str:
    """The agreement table's text, cells separated by single spaces."""
    return " ".join(page.locator('[data-testid="stTable"]').first.inner_text().split())


def test_labelling_five_samples_updates_the_queue_and_the_agreement(server: StreamlitServer, page: Page) -> None:
    page.goto(f"{server.url}/labels")
    wait_for_app(page)
    name = page.get_by_label("Your name", exact=True).and_(page.get_by_role("textbox"))
    name.fill("ana")
    name.press("Enter")
    wait_for_app(page)
    assert "0 of 10 samples of this run labelled by you" in main_text(page)
    assert "No labelled samples with judgings" in main_text(page)
    expected_accuracy = {0: "1.00", 1: "0.75", 4: "0.80"}   # the judge calls claim 2 supported on odd samples too
    for i in range(5):
        expect(page.get_by_text(f"Sample s{i:02d}", exact=True)).to_be_visible()
        assert "judge: supported" in main_text(page)   # the judge's verdicts beside the claims
        page.get_by_role("button", name="supported", exact=True).first.click()        # claim 1: supported
        expect(page.get_by_text("you: supported", exact=True)).to_be_visible()
        wait_for_app(page)
        truth = "supported" if i % 2 == 0 else "unsupported"
        page.get_by_role("button", name=truth, exact=True).nth(1).click()   # claim 2: the second such button
        expect(page.get_by_text(f"{i + 1} of 10 samples of this run labelled by you")).to_be_visible()
        wait_for_app(page)
        if i in expected_accuracy:
            row = agreement_row(page)
            assert f" {i + 1} 1 {expected_accuracy[i]}" in row, row   # samples, runs, accuracy
    # bias: the judge is 0.5 above people on the two odd samples' scores, 0 on the three even ones
    assert "0.80 [0.60, 1.00]" in agreement_row(page) and "+0.20 [" in agreement_row(page)
    assert not exceptions_shown(page)
