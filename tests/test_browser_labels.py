"""The Labels page in a real browser: a person labels three samples, one click per item, and sees the queue move and
the judge's agreement with people update when they ask (each sample a full round of the same checks: three, not
five, since each round costs Chromium and the dashboard about 1.5 CPU s)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from lib.core.samples import EvalSample
from lib.store import Store
from tests.support.browser import StreamlitServer, exceptions_shown, main_text, wait_for_app
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, REPLAY, facts, record

pytestmark = pytest.mark.e2e
LABELLED = 3   # samples labelled, one by one, of the run's 10


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


def test_labelling_three_samples_updates_the_queue_and_the_agreement(server: StreamlitServer, page: Page) -> None:
    page.goto(f"{server.url}/labels")
    wait_for_app(page)
    name = page.get_by_label("Your name", exact=True).and_(page.get_by_role("textbox"))
    name.fill("ana")
    name.press("Enter")
    wait_for_app(page)
    assert "0 of 10 samples of this run labelled by you" in main_text(page)
    assert "No labelled samples with judgings" in main_text(page)
    seen: list[int] = []   # the queue's order is the active one (lib.app.labelling.label_order), not id order
    for k in range(LABELLED):
        heading = page.get_by_role("heading", name=re.compile(r"^Sample s\d\d$"))
        expect(heading).to_be_visible()
        i = int(heading.inner_text().strip()[-2:])
        assert i not in seen
        seen.append(i)
        assert "judge: supported" in main_text(page)   # the judge's verdicts beside the claims
        page.get_by_role("button", name="supported", exact=True).first.click()        # claim 1: supported
        expect(page.get_by_text("you: supported", exact=True)).to_be_visible()
        wait_for_app(page)
        truth = "supported" if i % 2 == 0 else "unsupported"
        page.get_by_role("button", name=truth, exact=True).nth(1).click()   # claim 2: the second such button
        expect(page.get_by_text(f"{k + 1} of 10 samples of this run labelled by you")).to_be_visible()
        wait_for_app(page)
        # a click reruns the labelling area alone: the figures above wait for the labeller's word
        page.get_by_role("button", name=re.compile(r"^Update the figures \(1 sample labelled since\)")).click()
        wait_for_app(page)
        # the judge calls claim 2 supported on odd samples too: accuracy over the 2 (k + 1) claims labelled
        agree = 2 * (k + 1) - sum(1 for j in seen if j % 2)
        row = agreement_row(page)
        assert f" {k + 1} 1 {agree / (2 * (k + 1)):.2f}" in row, row   # samples, runs, accuracy
    # bias: the judge is 0.5 above people on the odd samples' scores, 0 on the even ones
    odd = sum(1 for j in seen if j % 2)
    assert f"+{0.5 * odd / LABELLED:.2f}" in agreement_row(page)
    assert not exceptions_shown(page)
