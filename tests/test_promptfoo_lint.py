"""`lint` reads a promptfoo rubric's variables as the fields they carry (issue 40 item 4, for promptfoo).

A `rubricPrompt` may show the grader a field under a name of its own: promptfoo gives a rubric the test's vars
beside its own names for the grader's inputs (`groundTruth`, `ideal`, ...), so `{{answer_key}}` shows the
reference when the test's `answer_key` holds it. Files the real promptfoo writes in this test session
(tests/support/tool_runs.py: pf-own's faithfulness rubric reads the reference as `answer_key`; pf-faith-leaky's
context-recall rubric reads the passages as `passages`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lib.core.profiles import promptfoo_variable_field, rubric_variables
from lib.intake.importers.promptfoo import rubric_variable_fields
from lib.store import Store
from tests.support.cli import run_cli
from tests.test_cli import cli

SAMPLE = {"question": "What wattage is the X200 kettle?", "answer": "The X200 draws 2000 W.",
          "contexts": ["The X200 kettle is rated at 2000 watts.", "It boils 1.7 litres."],
          "ground_truth": "2000 watts"}
JOINED = "\n".join(SAMPLE["contexts"])


@pytest.mark.parametrize("name, variables, changed, field", [
    # promptfoo's own name for a grader's input (context-recall's reference), whatever the test defines
    ("groundTruth", {"groundTruth": "unrelated"}, {}, "ground_truth"),
    # the names the importer reads a sample from
    ("reference", {}, {}, "ground_truth"),
    ("context", {}, {}, "contexts"),
    # a variable the test does not define, or defines empty, renders empty: no field (even where a field is empty)
    ("passages", {"query": SAMPLE["question"]}, {}, None),
    ("passages", {"passages": "  "}, {"answer": ""}, None),
    # by value: equal to the reference, the question, the answer; equality first, where the reference is a
    # passage's whole text
    ("answer_key", {"answer_key": "2000 watts"}, {}, "ground_truth"),
    ("answer_key", {"answer_key": "2000 watts"}, {"contexts": ["2000 watts"]}, "ground_truth"),
    ("asked", {"asked": SAMPLE["question"]}, {}, "question"),
    ("said", {"said": SAMPLE["answer"]}, {}, "answer"),
    # holding a passage: joined into one text, or a list (the reference within a passage is still the passages)
    ("passages", {"passages": JOINED}, {}, "contexts"),
    ("docs", {"docs": ["It boils 1.7 litres."]}, {}, "contexts"),
    # holding a field's text within more words
    ("key", {"key": "Expected: 2000 watts."}, {}, "ground_truth"),
    ("user", {"user": "The user asked: What wattage is the X200 kettle?"}, {}, "question"),
    ("reply", {"reply": "Reply: The X200 draws 2000 W. (cached)"}, {}, "answer"),
    # text of no field; an empty field or passage is in every text, and carries none
    ("style", {"style": "Answer in one word."}, {}, None),
    ("style", {"style": "Answer in one word."}, {"ground_truth": "", "contexts": ["", " "]}, None),
])
def test_a_rubric_variable_is_the_field_whose_text_it_carries(name: str, variables: dict, changed: dict,
                                                              field: str | None) -> None:
    assert promptfoo_variable_field(name, variables, {**SAMPLE, **changed}) == field


@pytest.mark.parametrize("rubric, names", [
    ("a {{passages}} b {{ groundTruth }}", ["passages", "groundTruth"]),
    ('{{- statements | join("\\n") }}', ["statements"]),
    ("{% for p in passages %}{{ p }}{% endfor %}", ["passages", "p"]),
    ([None, {"role": "user", "content": "{{answer_key}}"}], ["answer_key"]),
    (None, []),
])
def test_the_variables_a_rubric_names(rubric: object, names: list[str]) -> None:
    assert rubric_variables(rubric) == names


def test_a_variable_is_the_field_most_tests_show_it_carries() -> None:
    # in the first test the reference is a passage's whole text: its value alone says "ground_truth"
    rows = [({"passages": "2000 watts"}, {**SAMPLE, "contexts": ["2000 watts"]}),
            ({"passages": JOINED}, SAMPLE),
            ({"passages": "It boils 1.7 litres.", "tone": "terse"}, SAMPLE)]
    # promptfoo's names are not recorded (they are their field); a variable no test defines shows nothing
    assert rubric_variable_fields("{{passages}} {{nowhere}} {{context}} {{tone}}", rows) == {
        "passages": "contexts", "tone": "unknown"}
    # a tie goes to the field first in the sample's order (contexts before ground_truth)
    assert rubric_variable_fields("{{passages}}", rows[:2]) == {"passages": "contexts"}
    assert rubric_variable_fields("{{passages}}", rows[:1]) == {"passages": "ground_truth"}


def _lint_lines(db: Path) -> tuple[int, dict[str, str]]:
    # `lint` as a user runs it: the database from $EVALDRIFT_DB (`lint --db` reads the same table)
    proc = run_cli("lint", env={**os.environ, "EVALDRIFT_DB": str(db)})
    return proc.returncode, {line.split()[1]: line for line in proc.stdout.splitlines()
                             if line.split()[:1] in (["FINDING"], ["ok"])}


def test_a_rubric_reading_the_reference_under_a_test_variable_is_a_lint_finding(fresh_db: Path,
                                                                                 promptfoo_results) -> None:
    assert cli("import", "--db", fresh_db, promptfoo_results["pf-own"], "--run-id", "pf").returncode == 0
    code, lines = _lint_lines(fresh_db)
    # before: "ok      faithfulness ... reads question (by design: promptfoo), answer, contexts" and exit 0, while
    # every faithfulness grader prompt showed the reference as {{answer_key}}
    assert lines["faithfulness"].startswith("FINDING"), lines
    assert "ground_truth" in lines["faithfulness"].split(";", 1)[1], lines["faithfulness"]
    assert lines["context_recall"].startswith("ok"), lines
    assert code == 1
    proc = cli("lint", "--db", fresh_db)
    assert proc.returncode == 1 and "FINDING faithfulness" in proc.stdout, proc.stdout


def test_a_rubric_reading_the_passages_under_a_test_variable_names_them(fresh_db: Path, promptfoo_results) -> None:
    assert cli("import", "--db", fresh_db, promptfoo_results["pf-faith-leaky"], "--run-id", "pf").returncode == 0
    with Store(fresh_db) as store:
        recall = store.prompts().set_index("metric").loc["context_recall", "template"]
    # the record a user reads on the Prompts page says what `passages` carries (before: the rubric alone)
    assert '"passages": "contexts"' in recall.replace("{{", "{").replace("}}", "}"), recall
    code, lines = _lint_lines(fresh_db)
    # context-recall receives the passages and the reference: no finding; the faithfulness rubric's reference is
    assert lines["context_recall"].startswith("ok") and "contexts" in lines["context_recall"], lines
    assert lines["faithfulness"].startswith("FINDING") and code == 1, lines
