"""Scoring your own data: `python -m lib score`, the nightly job's `lib.judging.scoring.evaluate_run`, `templates`."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, prompt_hash
from lib.core.samples import EvalSample
from lib.intake import inbox
from lib.judging import OfflineJudge
from lib.judging.openai_judge import OpenAIJudge
from lib.judging.scoring import cache_path, evaluate_run, score_file
from lib.store import Store
from tests.support.openai_server import OpenAIServer
from tests.test_cli import assert_usage_error, cli, cli_process

ROWS = [
    {"id": "q1", "question": "When does the store open on Sundays?", "answer": "The store opens at 10:00 on Sundays.",
     "contexts": ["On Sundays the store opens at 10:00 and closes at 16:00."],
     "ground_truth": "It opens at 10:00 on Sundays."},
    {"id": "q2", "question": "How long is the warranty?",
     "answer": "The warranty lasts 2 years. It covers water damage.",
     "contexts": ["Every device has a warranty of 2 years.", "Water damage is not covered."],
     "ground_truth": "Two years; water damage is excluded."},
    {"id": "q3", "question": "Can I return a gift?", "answer": "Gifts can be returned within 30 days with a receipt.",
     "contexts": ["Gifts can be returned within 30 days.", "A gift receipt is required."],
     "ground_truth": "Yes, within 30 days, with a gift receipt."},
]


def write_jsonl(path: Path, rows: list[dict], drop: tuple[str, ...] = ()) -> Path:
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in drop}) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def model_judge(server: OpenAIServer) -> OpenAIJudge:
    return OpenAIJudge("judge-model", base_url=server.base_url, api_key="sk-test", timeout=5.0, concurrency=1)


# -- the score command --------------------------------------------------------------------------
def test_score_records_the_run_with_its_instrument_per_metric(fresh_db: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mine.jsonl", ROWS)
    proc = cli("score", "--db", fresh_db, source, "--run-id", "mine-1", "--metrics", "faithfulness,context_recall")
    assert proc.returncode == 0, proc.stderr
    assert "recorded run mine-1: 3 samples; faithfulness" in proc.stdout
    with Store(fresh_db) as store:
        metrics = store.run_metrics("mine-1").set_index("metric")
        assert sorted(metrics.index) == ["context_recall", "faithfulness"]
        for m in metrics.index:
            assert metrics.loc[m, "judge_model"] == "offline-lexical-v2"
            assert metrics.loc[m, "prompt_hash"] == prompt_hash(DEFAULT_TEMPLATES[m])
            assert metrics.loc[m, "binding"] == PROJECTED
            assert metrics.loc[m, "scorer"] == "evaldrift"
            assert metrics.loc[m, "n"] == 3
        assert store.run_fields("mine-1") == ("question", "answer", "contexts", "ground_truth")
        assert [s.sample_id for s in store.samples("mine-1")] == ["q1", "q2", "q3"]


def test_score_refuses_a_bad_file_before_judging_and_writes_nothing(fresh_db: Path, tmp_path: Path) -> None:
    rows = [dict(r) for r in ROWS]
    rows[1]["contexts"] = "Every device has a warranty of 2 years."   # a string, not a list
    line = assert_usage_error(cli("score", "--db", fresh_db, write_jsonl(tmp_path / "bad.jsonl", rows),
                                  "--run-id", "r"))
    assert "row 2" in line and "'contexts'" in line
    assert not fresh_db.exists()


def test_score_hands_the_run_over_through_the_inbox_when_the_database_is_held(fresh_db: Path,
                                                                                 tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mine.jsonl", ROWS)
    with Store(fresh_db) as owner:   # the dashboard owns the file: the command is another process, as a nightly job is
        proc = cli_process("score", "--db", fresh_db, source, "--run-id", "nightly", "--metrics", "faithfulness")
        assert proc.returncode == 0, proc.stderr
        assert "so run nightly was handed over through the inbox (" in proc.stdout, proc.stdout
        assert inbox.drain(owner, fresh_db.parent / "inbox") == ["nightly"]
        row = owner.run_metrics("nightly").iloc[0]
        assert (row["metric"], row["scorer"], row["binding"]) == ("faithfulness", "evaldrift", PROJECTED)


def test_score_with_a_model_judge_records_its_output_mode_and_resumes_after_a_kill(
        fresh_db: Path, tmp_path: Path, openai_server: OpenAIServer) -> None:
    source = write_jsonl(tmp_path / "mine.jsonl", ROWS)

    def die_after_four(done: int, total: int) -> None:
        if done == 4:
            raise KeyboardInterrupt   # as a Ctrl-C or a kill between two samples

    with pytest.raises(KeyboardInterrupt):
        score_file(fresh_db, source, run_id="m1", judge=model_judge(openai_server),
                   metrics=["faithfulness", "answer_relevance"], progress=die_after_four)
    asked = openai_server.n_calls
    assert asked == 4 and not fresh_db.exists() and cache_path(fresh_db).exists()
    done = score_file(fresh_db, source, run_id="m1", judge=model_judge(openai_server),
                      metrics=["faithfulness", "answer_relevance"])
    assert done.handover.where == "database"
    assert done.cached == 4 and done.calls == 2          # the 4 answered before the kill are not asked again
    assert openai_server.n_calls == asked + 2
    with Store(fresh_db) as store:
        metrics = store.run_metrics("m1")
    assert set(metrics["output_mode"]) == {"json_schema"}   # the loopback server takes a strict schema
    assert set(metrics["judge_model"]) == {"judge-model"}
    assert list(metrics["n"]) == [3, 3]


def test_replay_binding_needs_explicit_templates_and_projected_refuses_a_leaky_one(fresh_db: Path,
                                                                                    tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mine.jsonl", ROWS)
    line = assert_usage_error(cli("score", "--db", fresh_db, source, "--run-id", "r", "--metrics", "faithfulness",
                                  "--binding", "replay"))
    assert "--template faithfulness=FILE" in line
    leaky = tmp_path / "leaky.txt"
    leaky.write_text(DEFAULT_TEMPLATES["faithfulness"].replace("{contexts}", "{contexts}\n{ground_truth}"),
                     encoding="utf-8")
    line = assert_usage_error(cli("score", "--db", fresh_db, source, "--run-id", "r", "--metrics", "faithfulness",
                                  "--template", f"faithfulness={leaky}"))
    assert "reads ground_truth" in line and "projected" in line
    proc = cli("score", "--db", fresh_db, source, "--run-id", "replayed", "--metrics", "faithfulness",
               "--template", f"faithfulness={leaky}", "--binding", "replay")
    assert proc.returncode == 0, proc.stderr
    with Store(fresh_db) as store:
        inst = store.instrument("replayed", "faithfulness")
    assert (inst.binding, inst.prompt_hash) == ("replay", prompt_hash(leaky.read_text(encoding="utf-8")))
    assert not fresh_db.with_name("inbox").exists()


# -- the nightly job's Python API -------------------------------------------------------------------
def test_the_nightly_job_api_scores_and_records_with_the_inbox_fallback(fresh_db: Path) -> None:
    samples = [EvalSample(r["id"], r["question"], r["answer"], tuple(r["contexts"]), r["ground_truth"]) for r in ROWS]
    run = evaluate_run("nightly-7", samples, OfflineJudge(), metrics=["faithfulness", "answer_correctness"],
                       pipeline={"retriever": "bm25"})
    assert inbox.record(fresh_db, run).where == "database"
    with Store(fresh_db) as store:
        assert store.run("nightly-7").pipeline == {"retriever": "bm25"}
        assert sorted(store.run_metrics("nightly-7")["metric"]) == ["answer_correctness", "faithfulness"]
    with pytest.raises(InputError, match="template for unknown metric"):
        evaluate_run("x", samples, OfflineJudge(), templates={"faithfullness": "{items}"})


# -- templates -----------------------------------------------------------------------------------
def test_templates_prints_every_default_with_the_fields_it_reads() -> None:
    proc = cli("templates")
    assert proc.returncode == 0, proc.stderr
    for metric, text in DEFAULT_TEMPLATES.items():
        assert f"# {metric} (prompt hash {prompt_hash(text)})" in proc.stdout
        assert text in proc.stdout
    assert "faithfulness (prompt hash" in proc.stdout and "reads answer, contexts; must never receive question, " \
                                                          "ground_truth" in proc.stdout


def test_templates_out_writes_files_that_score_with_the_same_prompt_hash(fresh_db: Path, tmp_path: Path) -> None:
    proc = cli("templates", "--metric", "faithfulness", "--out", tmp_path / "t")
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (tmp_path / "t").iterdir()] == ["faithfulness.txt"]
    mine = tmp_path / "t" / "faithfulness.txt"
    assert mine.read_text(encoding="utf-8") == DEFAULT_TEMPLATES["faithfulness"]
    proc = cli("score", "--db", fresh_db, write_jsonl(tmp_path / "m.jsonl", ROWS), "--run-id", "t",
               "--metrics", "faithfulness", "--template", f"faithfulness={mine}")
    assert proc.returncode == 0, proc.stderr
    with Store(fresh_db) as store:
        assert store.instrument("t", "faithfulness").prompt_hash == prompt_hash(DEFAULT_TEMPLATES["faithfulness"])
    assert "invalid choice: 'faithfullness'" in assert_usage_error(cli("templates", "--metric", "faithfullness"))


def test_score_shows_its_progress_on_a_terminal(fresh_db: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "mine.jsonl", ROWS)
    root = Path(__file__).resolve().parent.parent
    terminal, stderr = pty.openpty()        # stderr a terminal, as when a user runs the command
    proc = subprocess.Popen([sys.executable, "-m", "lib", "score", "--db", str(fresh_db), str(source), "--run-id",
                             "mine-1", "--metrics", "faithfulness,context_recall"], cwd=root, stderr=stderr,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(root)})
    os.close(stderr)
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:                      # the command closed its end
            break
        if not chunk:
            break
        shown += chunk
    os.close(terminal)
    assert proc.wait(timeout=120) == 0
    text = shown.decode()
    counts = [int(m) for m in re.findall(r"scoring mine-1: (\d+)/6", text)]
    assert counts and counts == sorted(counts) and counts[-1] == 6, text   # 3 samples x 2 metrics, counting up
    assert "scoring mine-1: 6/6 (100%)" in text
    assert "recorded run mine-1" in proc.stdout.read().decode()  # type: ignore[union-attr]
