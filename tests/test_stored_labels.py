"""Widget labels built from stored text render as text (issue 23 item 9): a judge name that is a Markdown link
stays a literal string on the Ablation page's judge radio, its launch checkbox and every other label."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.samples import EvalSample
from lib.presentation.report import WORD_JOINER
from lib.store import Store
from tests.support.browser import MAIN, StreamlitServer, exceptions_shown, wait_for_app
from tests.support.synthetic_runs import facts, record

EVIL = "evil-judge [pwn](https://evil.example/judge)"


def shown(text: str) -> str:
    """What a reader sees: the invisible word joiners that keep a URL from being linked taken out."""
    return text.replace(WORD_JOINER, "")


@pytest.mark.e2e
def test_a_markdown_link_in_a_stored_judge_name_is_shown_as_text_not_a_link(tmp_path: Path, page: Page) -> None:
    db = tmp_path / "e.duckdb"
    items = [EvalSample(f"s{i}", f"q {f.fact1}?", f"{f.fact1}.", (f"{f.fact1}.",), f"{f.fact1}.")
             for i, f in enumerate(facts(6))]
    with Store(db) as store:
        record(store, "evil-run", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED,
               judge_model=EVIL)
    with StreamlitServer(db, log_dir=tmp_path / "server") as server:
        page.goto(f"{server.url}/ablation?run=evil-run&metric=faithfulness&blank=ground_truth")
        wait_for_app(page)
        judge = page.locator(".st-key-abl_judge")
        assert f"{EVIL} (the run's own)" in shown(judge.inner_text())      # the radio: the name as written
        confirm = page.get_by_text("calls to the paid judge")               # the launch checkbox names it too
        assert confirm.count() == 1 and EVIL in shown(confirm.inner_text())
        assert page.locator(f'{MAIN} a[href*="evil.example"]').count() == 0  # and nowhere is it a link
        assert exceptions_shown(page) == []
