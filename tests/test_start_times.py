"""When an imported run happened (issue 40.10): the same time at both doors (the CLI and the Import page), and a
file that records no time is said to, never silently given the time of the import."""

from __future__ import annotations

from pathlib import Path

from lib.intake.importers import prepare_import
from lib.intake.uploads import prepare_tool_upload, run_facts

FIXTURES = Path(__file__).parent / "fixtures" / "imports"   # written by Ragas itself (make_*.py there)
NO_TIME = "records no start time"


def test_a_deepeval_upload_gets_the_time_in_its_files_name_as_the_cli_does(deepeval_runs) -> None:
    path = deepeval_runs["de-1"]
    cli_plan = prepare_import(path, run_id="de-1")
    page_plan = prepare_tool_upload(path.name, path.read_bytes(), fmt="deepeval", run_id="de-1")
    assert page_plan.run.started_at == cli_plan.run.started_at
    assert not any(NO_TIME in w for w in cli_plan.warnings + page_plan.warnings)


def test_deepevals_latest_test_run_file_says_it_records_no_time(deepeval_runs) -> None:
    latest = deepeval_runs["de-1"].parent / ".deepeval" / ".latest_test_run.json"
    plan = prepare_import(latest, run_id="latest")
    assert any(NO_TIME in w and "--started-at" in w for w in plan.warnings), plan.warnings
    given, _ = run_facts("2026-11-02T02:00", "")
    assert not any(NO_TIME in w for w in prepare_import(latest, run_id="l", started_at=given).warnings)


def test_a_ragas_csv_without_a_start_time_says_so(tmp_path: Path) -> None:
    plan = prepare_import(FIXTURES / "ragas_result.csv", run_id="r", version="0.4.3")
    [said] = [w for w in plan.warnings if NO_TIME in w]
    assert f"{plan.run.started_at:%Y-%m-%d %H:%M}" in said and plan.notes["started_at"] == "the time of the import"
