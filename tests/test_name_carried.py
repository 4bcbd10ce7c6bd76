"""The name typed on one page is the name on the next (issue 46 item 7): typed on the Overview to set an
incident's state, it is the labeller's name on Labels, and back, in the same browser session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app.py"


def test_the_name_typed_on_the_overview_is_the_labellers_name(demo_db: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, path)
    monkeypatch.setenv("EVALDRIFT_DB", str(path))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/overview.py")
    at.run()
    at.text_input(key="incident_user").input("Ada").run()
    at.switch_page("pages/labels.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="lab_name").value == "Ada"
    at.text_input(key="lab_name").input("Grace").run()
    at.switch_page("pages/overview.py")
    at.run()
    assert at.text_input(key="incident_user").value == "Grace"
