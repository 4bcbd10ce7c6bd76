"""The Import page on its own (issue 46 item 5): a new database path is created by the first run recorded there,
every other page's hint names `score` and `import`, and warnings name the page's own fields, not CLI flags."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.intake.importers import prepare_import
from lib.intake.uploads import detect_upload, prepare_tool_upload

APP = Path(__file__).resolve().parents[1] / "app.py"
RAGAS_CSV = b"""user_input,response,retrieved_contexts,reference,faithfulness
How long is the warranty?,Two years.,"['Every kettle has a warranty of 2 years.']",Two years.,1.0
Does it boil fast?,Yes.,"['It boils in 3 minutes.']",Three minutes.,0.5
"""


def test_the_page_names_its_own_fields_and_the_cli_its_flags(tmp_path: Path) -> None:
    page = prepare_tool_upload("r.csv", RAGAS_CSV, fmt=detect_upload("r.csv", RAGAS_CSV), run_id="x").warnings
    assert any("give it (the Grader model field)" in w for w in page), page
    assert any("give it (the Tool version field)" in w for w in page), page
    assert not any("--" in w for w in page), page
    (tmp_path / "r.csv").write_bytes(RAGAS_CSV)
    cli = prepare_import(tmp_path / "r.csv", run_id="x", fmt="ragas").warnings
    assert any("(--grader)" in w for w in cli) and any("(--tool-version)" in w for w in cli), cli


def _open(page: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page(page)
    return at.run()


@pytest.mark.parametrize("page", ["pages/overview.py", "pages/trends.py"])
def test_a_new_database_path_points_to_score_import_and_the_import_page(
        page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "mine.duckdb"
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    at = _open(page)
    [said] = [e.value for e in at.error]
    assert "python -m lib score" in said and "python -m lib import" in said and "ingest" not in said, said
    assert any("Import page" in link.proto.label for link in at.get("page_link"))
    assert not db.exists()   # only the Import page creates it


def test_the_import_page_creates_a_new_database_and_scores_by_default_every_metric(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "mine.duckdb"
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    at = _open("pages/import.py")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert db.exists()
    from lib.core.metrics import METRIC_NAMES

    assert at.multiselect(key="imp_metrics").value == list(METRIC_NAMES)
