"""A template takes field names only, at every door that stores or renders one (issue 39, item 6).

`{contexts:>1500000000}` was recorded, linted clean, and made every ablation prompt 1.5 GB. Each door refuses it
in one line naming the template and the placeholder; lint flags one stored before the doors refused it. The
files are made here; where today's main would render a padded prompt, the width is small enough to be harmless.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from lib.core.errors import InputError
from lib.core.prompts import DEFAULT_TEMPLATES, placeholders, prompt_hash
from lib.core.records import MetricRecord, RunRecord
from lib.core.results import SampleResult
from lib.core.samples import EvalSample
from lib.intake import inbox
from lib.intake.runjson import run_to_json
from lib.store import Store
from tests.support.cli import run_cli as cli

BOMB = "{contexts:>1500000000}"
PADDED = "{contexts:>20000}"    # the same kind of placeholder, harmless where an unfixed evaldrift renders it
GOOD = DEFAULT_TEMPLATES["faithfulness"]


@pytest.mark.parametrize(("template", "refused"), [
    ("{contexts} {items}", None),                             # field names: taken
    ("{{contexts:>9}} {items}", None),                        # literal braces: text, not a placeholder
    ("{contexts:>1500000000} {items}", "{contexts:>1500000000}"),   # a format spec
    ("{answer!r} {items}", "{answer!r}"),                     # a conversion
    ("{answer!s:^99} {items}", "{answer!s:^99}"),             # both
    ("{contexts[0]} {items}", "{contexts[0]}"),               # indexing
    ("{sample.answer} {items}", "{sample.answer}"),           # attribute access
    ("{contexts:{items}}", "{contexts:{items}}"),             # a nested placeholder in the spec
    ("{} {items}", "{}"),                                     # positional
    ("{0} {items}", "{0}"),                                   # positional, numbered
    ("{reference} {items}", "{reference}"),                   # not a field
    ("{items} }", "Single '}'"),                              # an unclosed brace
    ("{items", "expected '}'"),                               # an unclosed placeholder
])
def test_a_template_takes_field_names_only(template: str, refused: str | None) -> None:
    if refused is None:
        assert placeholders(template) in (["contexts", "items"], ["items"])
        return
    with pytest.raises(InputError) as exc:
        placeholders(template, source="mine.txt")
    assert refused in str(exc.value) and str(exc.value).startswith("mine.txt")
    assert "\n" not in str(exc.value)


def test_a_long_placeholder_is_cut_in_the_message() -> None:
    with pytest.raises(InputError) as exc:
        placeholders("{contexts:>" + "9" * 5000 + "}")
    assert len(str(exc.value)) < 400 and prompt_hash("{contexts:>" + "9" * 5000 + "}") in str(exc.value)


def _run(template: str, run_id: str = "r1") -> RunRecord:
    sample = EvalSample("s1", "How long does the K1 kettle take?", "The K1 kettle boils in 3 minutes.",
                        ("The K1 kettle boils in 3 minutes.",), "3 minutes.")
    return RunRecord(run_id=run_id, started_at=datetime(2026, 12, 1), pipeline={}, samples={"main": [sample]},
                     metrics=[MetricRecord("faithfulness", [SampleResult("s1", "ok", 1.0)],
                                           judge_model="offline-lexical-v2", template=template, binding="replay")])


def _one_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    return line


def test_record_refuses_a_hand_over_file_whose_template_has_a_format_spec(tmp_path: Path) -> None:
    handover = tmp_path / "nightly.run.json"
    handover.write_text(run_to_json(_run(f"Passages: {BOMB}\n{{items}}")), encoding="utf-8")
    line = _one_line(cli("record", "--db", tmp_path / "e.duckdb", handover))
    assert BOMB in line and "faithfulness" in line and "template" in line
    assert not (tmp_path / "e.duckdb").exists() or Store(tmp_path / "e.duckdb").runs().empty


def test_score_and_ingest_refuse_such_a_template_file_naming_it(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "s1", "question": "q?", "answer": "The K1 kettle boils in 3 minutes.",
                                "contexts": ["The K1 kettle boils in 3 minutes."], "ground_truth": "3",
                                "faithfulness": 1.0}) + "\n", encoding="utf-8")
    padded = tmp_path / "padded.txt"
    padded.write_text(GOOD.replace("{contexts}", PADDED), encoding="utf-8")
    for command in (("score", "--metrics", "faithfulness"), ("ingest",)):
        line = _one_line(cli(*command, "--db", tmp_path / "e.duckdb", rows, "--run-id", "r1", "--template",
                             f"faithfulness={padded}", "--binding", "replay"))
        assert PADDED in line and "padded.txt" in line, line
    assert not (tmp_path / "e.duckdb").exists() or Store(tmp_path / "e.duckdb").runs().empty
    with Store(tmp_path / "e.duckdb") as store:   # the gate renders a candidate's template: refused by name too
        store.record_run(_run(GOOD))
    line = _one_line(cli("calibrate", "--db", tmp_path / "e.duckdb", "--template", padded, "--judge", "offline"))
    assert PADDED in line and "padded.txt" in line, line


def test_the_inbox_sets_such_a_hand_over_aside_with_the_reason(tmp_path: Path) -> None:
    db = tmp_path / "e.duckdb"
    box = tmp_path / "inbox"
    with pytest.raises(InputError, match=r"contexts:>1500000000"):   # the recorder learns it at once
        inbox.record(db, _run(f"{BOMB} {{items}}"), inbox=box)
    inbox.drop(box, _run(f"{BOMB} {{items}}", "r2"), target=db)      # a file from elsewhere: the drain checks again
    with inbox.open_drained(db, box) as store:
        assert store.runs().empty
    [refused] = inbox.rejected(box)
    assert BOMB in refused.reason


def test_lint_flags_a_stored_one_and_an_ablation_of_it_is_refused_in_one_line(tmp_path: Path) -> None:
    """A database written before the doors refused it: lint names the placeholder, ablate renders nothing."""
    db = tmp_path / "e.duckdb"
    with Store(db) as store:
        store.record_run(_run(GOOD))
    con = duckdb.connect(str(db))   # the template as an unfixed evaldrift stored it
    padded = GOOD.replace("{contexts}", PADDED)
    con.execute("INSERT INTO prompts VALUES (?, 'faithfulness', ?)", [prompt_hash(padded), padded])
    con.execute("UPDATE run_metrics SET prompt_hash = ?", [prompt_hash(padded)])
    con.close()
    linted = cli("lint", "--db", db)
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert "Traceback" not in linted.stderr
    [finding] = [line for line in linted.stdout.splitlines() if prompt_hash(padded) in line]
    assert finding.startswith("FINDING") and PADDED in finding
    ablated = cli("ablate", "--db", db, "--run", "r1", "--metric", "faithfulness", "--blank", "ground_truth")
    assert ablated.returncode == 2 and "Traceback" not in ablated.stderr and ablated.stdout == ""
    [line] = [x for x in ablated.stderr.splitlines() if not x.startswith("cost: ")]   # the estimate, then why not
    assert line.startswith("error: ") and PADDED in line


@pytest.mark.parametrize("before", [None, "a template that reads ground_truth"])
def test_lint_gives_a_stored_refused_template_no_fields_of_another(tmp_path: Path, before: str | None) -> None:
    """lint_status's row for a template stored before the doors refused it: its finding, and no must-never field
    of its own (with no template before it, the lint once raised UnboundLocalError; after one that reads
    ground_truth, the refused one was said to read ground_truth too, and a jump at its run was read by that)."""
    from lib.diagnosis.trends import lint_status

    leaky = GOOD.replace("{contexts}", "{contexts}\nREFERENCE: {ground_truth}")
    padded = GOOD.replace("{contexts}", "{contexts:>10}")
    assert prompt_hash(leaky) < prompt_hash(padded)   # the leaky one is linted first (by metric, then hash)
    db = tmp_path / "e.duckdb"
    with Store(db) as store:
        store.record_run(_run(leaky if before else GOOD))
    con = duckdb.connect(str(db))   # the template as an unfixed evaldrift stored it
    con.execute("INSERT INTO prompts VALUES (?, 'faithfulness', ?)", [prompt_hash(padded), padded])
    if not before:
        con.execute("DELETE FROM prompts WHERE prompt_hash <> ?", [prompt_hash(padded)])
    con.close()
    with Store(db) as store:
        rows = lint_status(store).set_index("prompt_hash")
    assert "{contexts:>10}" in rows.loc[prompt_hash(padded), "findings"]
    assert rows.loc[prompt_hash(padded), "never"] == ""
    if before:
        assert rows.loc[prompt_hash(leaky), "never"] == "ground_truth"


def test_a_run_whose_stored_template_is_refused_still_shows_what_changed(tmp_path: Path) -> None:
    """run_changes (the Run and Compare pages, and every jump's suspects on the Overview) reads the fields of a
    changed template: one stored before the doors refused it is a change whose fields are unknown, not an error
    that takes the page down (on main: InputError from run_changes, and so from find_jumps for a jump at that run)."""
    from lib.diagnosis import trends

    db = tmp_path / "e.duckdb"
    with Store(db) as store:
        store.record_run(_run(GOOD, "r1"))
        store.record_run(_run(GOOD, "r2"))
    padded = GOOD.replace("{contexts}", "{contexts:>10}")
    con = duckdb.connect(str(db))   # r2's template as an unfixed evaldrift stored it
    con.execute("INSERT INTO prompts VALUES (?, 'faithfulness', ?)", [prompt_hash(padded), padded])
    con.execute("UPDATE run_metrics SET prompt_hash = ? WHERE run_id = 'r2'", [prompt_hash(padded)])
    con.close()
    with Store(db) as store:
        [change] = trends.run_changes(store, "r2", "r1").templates
    assert change.after_hash == prompt_hash(padded) and change.fields_before == ("answer", "contexts")
    assert change.fields_after == () and "-> ?" in change.description
