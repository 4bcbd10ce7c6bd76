"""A blank must reach the judge before a verdict is drawn from it (issue 40.4). An Inspect scorer whose template
reads the passages pre-joined under another metadata key (`{contexts_text}`) still shows them to its grader when
`contexts` is blanked: the re-scorer reads the grader prompts Inspect records and says so, instead of a verdict;
lint reads that key as the passages. The log is written by the real Inspect in this test session.

promptfoo keeps no grading prompt in the results of its RAG assertions: the re-grade wraps each test's grader in a
provider that logs the prompts promptfoo gives it. A context-recall rubricPrompt that reads the passages as
`{{passages}}` still shows them when `context` is blanked (pf-faith-leaky, written by the real promptfoo here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.tool_runs import INSPECT_PYTHON, LEAK_ROWS, tool_env
from tests.test_cli import cli
from tests.test_tool_ablations import promptfoo_env  # noqa: F401 (a fixture: promptfoo on PATH, the grader's server)

NOT_REACHED = "the blank did not reach the judge: contexts's text is still in its prompt"


def test_a_blank_that_does_not_reach_inspects_grader_is_said_not_judged(fresh_db: Path, inspect_logs, tool_judge,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_BASE_URL", tool_judge.base_url)
    monkeypatch.setenv("LOOP_API_KEY", "sk-loopback")
    log = inspect_logs["insp-joined"]
    # read by our own reader (the same run as Inspect's: tests/test_tool_imports.py), without starting Inspect
    assert cli("import", "--db", fresh_db, log, "--run-id", "j", "--metric-map",
               "model_graded_fact=faithfulness").returncode == 0
    monkeypatch.setenv("EVALDRIFT_INSPECT_PYTHON", str(tool_env(*INSPECT_PYTHON)))   # Inspect re-scores
    proc = cli("ablate", "--db", fresh_db, "--run", "j", "--metric", "faithfulness", "--blank", "contexts",
               "--repeats", "1", "--all-samples", "--json", "--scorer",
               f"lib.judging.scorers.inspect_scorer:rescore@{log}")
    result = json.loads(proc.stdout)
    [cell] = [v for v in result["verdicts"] if v["arm"] == "contexts"]
    # before: INCONCLUSIVE "nothing left to check the claims against", while every grader prompt showed the passages
    assert NOT_REACHED in cell["sentence"], cell["sentence"]
    assert cell["kind"] not in ("LEAK", "CLEAN", "SENSITIVE", "INSENSITIVE"), cell


def test_lint_reads_an_inspect_templates_metadata_key_as_the_field_it_holds(fresh_db: Path, inspect_logs) -> None:
    assert cli("import", "--db", fresh_db, inspect_logs["insp-joined"], "--run-id", "j", "--metric-map",
               "model_graded_fact=faithfulness").returncode == 0
    proc = cli("lint", "--db", fresh_db)
    line = next(x for x in proc.stdout.splitlines() if x.split()[1:2] == ["faithfulness"])
    assert "reads answer, contexts" in line, line


def test_a_blank_that_does_not_reach_promptfoos_grader_is_said_not_judged(fresh_db: Path, promptfoo_results,
                                                                          promptfoo_env) -> None:  # noqa: F811
    path = promptfoo_results["pf-faith-leaky"]
    assert cli("import", "--db", fresh_db, path, "--run-id", "pf").returncode == 0
    proc = cli("ablate", "--db", fresh_db, "--run", "pf", "--metric", "context_recall", "--blank", "contexts",
               "--repeats", "1", "--all-samples", "--json",
               "--scorer", f"lib.judging.scorers.promptfoo_assertions:context_recall@{path}")
    result = json.loads(proc.stdout)
    [cell] = [v for v in result["verdicts"] if v["arm"] == "contexts"]
    # before: "INCONCLUSIVE: only 8 samples scored in both arms ... (it moves +0.000 ...)", a no-move read from a
    # blank every grader prompt still showed under `passages`; 6 of 8: in two rows the passage is the reference
    # itself, whose text was handed over, so those prompts prove nothing either way
    assert "NO VERDICT: " + NOT_REACHED + " (6 of the tool's grader prompts" in cell["sentence"], cell["sentence"]
    assert cell["kind"] not in ("LEAK", "CLEAN", "SENSITIVE", "INSENSITIVE"), cell
    # the unblanked baseline, graded through the same recorder, is scored and replays the stored score (the
    # passages state the reference in 2 of the 8 rows)
    [replay] = result["replay"]
    assert replay["stored"] == replay["rerun"] == 2 / len(LEAK_ROWS) and not replay["mismatch"], replay["sentence"]


REC = {"id": "file:///w/recorder.js", "config": {"test": 3, "log": "/w/grader_prompts.jsonl", "promptfoo": "/pf.js"}}


def _rec(delegate: object) -> dict:
    return {**REC, "config": {**REC["config"], "delegate": delegate}}


@pytest.mark.parametrize("provider, wrapped", [
    # a provider string or {id}: the text grader is recorded, the embedding model stays the provider itself
    ("openai:chat:g", {"text": _rec("openai:chat:g"), "embedding": "openai:chat:g"}),
    ({"id": "openai:chat:g", "config": {"temperature": 0}},
     {"text": _rec({"id": "openai:chat:g", "config": {"temperature": 0}}),
      "embedding": {"id": "openai:chat:g", "config": {"temperature": 0}}}),
    # {text, embedding}: only the text grader sees a prompt
    ({"text": {"id": "openai:chat:g"}, "embedding": {"id": "openai:embedding:e"}},
     {"text": _rec({"id": "openai:chat:g"}), "embedding": {"id": "openai:embedding:e"}}),
    ({"embedding": {"id": "openai:embedding:e"}}, {"embedding": {"id": "openai:embedding:e"}}),
    # none of its own: promptfoo's default grader, which cannot be wrapped (its prompts go unrecorded)
    (None, None),
])
def test_each_form_of_a_promptfoo_grader_is_wrapped_by_the_recorder(provider: object, wrapped: object) -> None:
    from lib.judging.scorers.promptfoo_assertions import _recorded

    test = {"vars": {}, "assert": [{"type": "context-recall", "provider": provider}] if provider else
            [{"type": "context-recall"}], "options": {"provider": provider} if provider else {}}
    got = _recorded(test, 3, Path("/w"), Path("/pf.js"))
    assert got["options"].get("provider") == wrapped
    assert got["assert"][0].get("provider") == wrapped   # an assertion's own grader, the same way


def test_a_chat_prompt_the_grader_was_given_is_read_as_its_messages_text(tmp_path: Path) -> None:
    from lib.judging.scorers.promptfoo_assertions import _prompts

    log = tmp_path / "grader_prompts.jsonl"
    chat = json.dumps([{"role": "system", "content": "Grade."}, {"role": "user", "content": "context: P1\nP2"}])
    log.write_text(json.dumps({"test": 0, "prompt": "plain: P0"}) + "\n" + json.dumps({"test": 0, "prompt": chat})
                   + "\n" + json.dumps({"test": 2, "prompt": "{not json"}) + "\n", encoding="utf-8")
    assert _prompts(log) == {0: ["plain: P0", "Grade.\ncontext: P1\nP2"], 2: ["{not json"]}
    assert _prompts(tmp_path / "absent.jsonl") == {}
