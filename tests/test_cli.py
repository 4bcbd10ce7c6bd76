"""The command line as a user and a CI job run it, on copies of the demo database: `lib.cli.parser.main` in this
process, and a real `python -m lib` where the process is what a test checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES
from lib.store import Store
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parent.parent
QUICK = ("--limit", "120", "--repeats", "2")   # a few seconds per ablation
CLEAN_RUN, LEAK_RUN = 10, 40                   # demo run indexes: before the leak, during it


def cli(*args: object, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run `python -m lib ...` in this process (tests/support/cli.py), with the (cleaned) test environment."""
    return run_cli(*args)


def cli_process(*args: object, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run `python -m lib ...` the way a user does, for what only a real process shows."""
    return subprocess.run([sys.executable, "-m", "lib", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def assert_usage_error(proc: subprocess.CompletedProcess[str]) -> str:
    """Exit 2, one line on stderr, no traceback, nothing on stdout; returns the line."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    assert proc.stdout == ""
    return lines[0]


@pytest.fixture(scope="module")
def run_ids(demo_db: Path) -> list[str]:
    with Store(demo_db) as store:
        return store.run_ids()


@pytest.fixture(scope="module")
def shared_db(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo for commands that only read (no test here ablates on it)."""
    path = tmp_path_factory.mktemp("cli") / "demo.duckdb"
    shutil.copy(demo_db, path)
    return path


@pytest.fixture
def db(demo_db: Path, tmp_path: Path) -> Path:
    """A private copy of the demo for a test that writes (ablations)."""
    path = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, path)
    return path


# -- ablate: the CI gate ------------------------------------------------------------------
def test_ablate_exits_0_when_every_verdict_is_as_the_wiring_table_expects(db: Path, run_ids: list[str]) -> None:
    proc = cli("ablate", "--db", db, "--run", run_ids[CLEAN_RUN], "--metric", "faithfulness",
               "--blank", "ground_truth", "--blank", "contexts", *QUICK)
    assert proc.returncode == 0, proc.stderr
    # the template does not render the reference: blanking it changes no prompt, so nothing is re-judged
    assert "CLEAN: the run's wiring does not render ground_truth" in proc.stdout
    assert "prompt unchanged: not re-judged" in proc.stdout
    assert "SENSITIVE: faithfulness" in proc.stdout
    assert proc.stdout.startswith("as expected: every metric tested moves when its own inputs are blanked")
    # this run's template never renders the reference: "the reference alone supports ..." would be noise
    assert "Faithfulness reads" not in proc.stdout
    line, *progress = proc.stderr.splitlines()   # the cost, then progress lines (a few seconds apart) and the end
    assert line.startswith("cost: ") and "offline judge, no API cost" in line
    assert progress and progress[-1].startswith(f"ablating {run_ids[CLEAN_RUN]}: ") and progress[-1].endswith("(100%)")


def test_ablate_exits_1_on_a_leak(db: Path, run_ids: list[str]) -> None:
    proc = cli("ablate", "--db", db, "--run", run_ids[LEAK_RUN], "--metric", "faithfulness", "--blank",
               "ground_truth", *QUICK)
    assert proc.returncode == 1, proc.stderr
    assert "LEAK: faithfulness moves" in proc.stdout
    assert proc.stdout.startswith("wiring leak: faithfulness")


def test_ablate_json_parses_and_carries_the_verdicts(db: Path, run_ids: list[str]) -> None:
    proc = cli("ablate", "--db", db, "--run", run_ids[LEAK_RUN], "--metric", "faithfulness", "--blank",
               "ground_truth", "--json", *QUICK)
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["exit_code"] == 1
    assert result["spec"]["run_id"] == run_ids[LEAK_RUN]
    verdict, joint = result["verdicts"]   # the arm asked for, and the joint arm every ablation adds
    assert (joint["arm"], joint["joint"]) == ("question+ground_truth", True)
    assert (verdict["metric"], verdict["arm"], verdict["kind"], verdict["expected"]) == (
        "faithfulness", "ground_truth", "LEAK", "invariant")
    assert verdict["delta"] < 0 and verdict["hi"] < 0
    assert result["replay"][0]["metric"] == "faithfulness"


def test_ablate_latest_resolves_to_the_newest_run(db: Path, run_ids: list[str]) -> None:
    proc = cli("ablate", "--db", db, "--run", "latest", "--metric", "faithfulness", "--blank", "ground_truth",
               "--json", *QUICK)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["spec"]["run_id"] == run_ids[-1]


def test_ablate_exits_3_when_the_scorer_fails_too_often(db: Path, run_ids: list[str]) -> None:
    proc = cli("ablate", "--db", db, "--run", run_ids[CLEAN_RUN], "--metric", "faithfulness", "--blank",
               "ground_truth", "--scorer", "tests.support.cli_scorers:mostly_failing", *QUICK)
    assert proc.returncode == 3, proc.stderr
    assert "INCONCLUSIVE: " in proc.stdout
    assert "scorer returned no score" in proc.stdout   # failures are named, never scored 0


def test_ablate_catches_a_leak_in_an_external_harness(db: Path, run_ids: list[str]) -> None:
    proc = cli("ablate", "--db", db, "--run", run_ids[CLEAN_RUN], "--metric", "faithfulness", "--blank",
               "ground_truth", "--scorer", "tests.support.cli_scorers:reads_reference", *QUICK)
    assert proc.returncode == 1, proc.stderr
    assert "LEAK: faithfulness moves -0.500" in proc.stdout


def test_the_same_ablation_twice_prints_the_same_result_and_does_no_new_work(db: Path, run_ids: list[str]) -> None:
    args = ("ablate", "--db", db, "--run", run_ids[LEAK_RUN], "--metric", "faithfulness", "--blank", "ground_truth",
            *QUICK)
    first = cli(*args)
    with Store(db) as store:
        counts = store.counts()
        [before] = store.ablations(run_ids[LEAK_RUN]).to_dict("records")
    second = cli(*args)
    assert (first.returncode, second.returncode) == (1, 1)
    # the same verdicts, word for word; only the accounting says this time it was read from the store (issue 26)
    def findings(out: str) -> list[str]:
        return [line for line in out.splitlines() if "judge calls" not in line]
    assert findings(second.stdout) == findings(first.stdout)
    assert "answered from the store: no judge call now (when it ran: " in second.stdout
    assert "answered from the store" not in first.stdout
    with Store(db) as store:
        assert store.counts() == counts
        [after] = store.ablations(run_ids[LEAK_RUN]).to_dict("records")
    assert after == before                     # not even the progress row was touched
    # at most 120 samples x 4 arms (baseline, ground_truth, the joint question+ground_truth, and the judge's floor:
    # question, contexts and ground_truth blanked, a prompt of its own under this leaky template) x 2 repeats, all
    # stored (sequential: the arms stop once decided, and the total says what was judged)
    assert before["done"] == before["total"] <= 120 * 5 * 2   # with the positive control


def test_ablate_with_a_model_judge_on_an_openai_compatible_server(db: Path, run_ids: list[str], openai_server,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-cli-key")
    monkeypatch.setenv("EVALDRIFT_JUDGE_MODEL", "evaldrift-test-model")
    proc = cli("ablate", "--db", db, "--run", run_ids[LEAK_RUN], "--metric", "faithfulness", "--blank",
               "ground_truth", "--judge", "openai", "--limit", "40", "--repeats", "2", "--json", "--yes")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["spec"]["judge"], result["spec"]["endpoint"]) == ("evaldrift-test-model", openai_server.base_url)
    assert result["verdicts"][0]["kind"] == "LEAK"
    assert result["calls"] > 0
    assert "sk-planted-cli-key" not in proc.stdout + proc.stderr


# -- bad usage and input: exit 2, one line, no traceback ---------------------------------------------
BAD_ABLATE = [
    ("unknown run id", ["--run", "nightly-19990101", "--metric", "faithfulness", "--blank", "ground_truth"],
     "no run 'nightly-19990101'"),
    ("unknown metric", ["--run", "latest", "--metric", "faithfulnes", "--blank", "ground_truth"],
     "invalid choice: 'faithfulnes'"),
    ("bad field", ["--run", "latest", "--metric", "faithfulness", "--blank", "reference"],
     "unknown field 'reference'"),
    ("baseline as arm", ["--run", "latest", "--metric", "faithfulness", "--blank", "none"], "baseline"),
    ("zero repeats", ["--run", "latest", "--metric", "faithfulness", "--blank", "question", "--repeats", "0"],
     "must be 1 or more"),
    ("bad limit", ["--run", "latest", "--metric", "faithfulness", "--blank", "question", "--limit", "ten"],
     "not a whole number"),
    ("openai without model", ["--run", "latest", "--metric", "faithfulness", "--blank", "question",
                              "--judge", "openai"], "--judge openai needs a model"),
    ("unknown offline judge", ["--run", "latest", "--metric", "faithfulness", "--blank", "question",
                               "--model", "offline-lexical-v9"], "unknown offline judge"),
    ("scorer not importable", ["--run", "latest", "--metric", "faithfulness", "--blank", "question",
                               "--scorer", "tests.support.no_such_module:score"], "cannot load scorer"),
    ("scorer not module:function", ["--run", "latest", "--metric", "faithfulness", "--blank", "question",
                                    "--scorer", "tests.support.cli_scorers"], "module:function"),
    ("missing --run", ["--metric", "faithfulness", "--blank", "question"], "--run"),
]


@pytest.mark.parametrize(("args", "says"), [pytest.param(a, s, id=name) for name, a, s in BAD_ABLATE])
def test_bad_ablate_arguments_exit_2_with_one_line(shared_db: Path, args: list[str], says: str) -> None:
    line = assert_usage_error(cli("ablate", "--db", shared_db, *args))
    assert says in line


@pytest.mark.parametrize(("args", "says"), [
    pytest.param(["frobnicate"], "invalid choice: 'frobnicate'", id="unknown subcommand"),
    pytest.param([], "required: COMMAND", id="no subcommand"),
    pytest.param(["runs"], "give --db PATH or set EVALDRIFT_DB", id="no database given"),
    pytest.param(["lint", "--template", "x.txt"], "needs --metric", id="template without metric"),
    pytest.param(["ablate", "--db", "/nonexistent/evaldrift.duckdb", "--run", "latest", "--metric", "faithfulness",
                  "--blank", "ground_truth"], "no database at /nonexistent/evaldrift.duckdb", id="missing db file"),
    pytest.param(["runs", "--db", "/nonexistent/evaldrift.duckdb"], "no database at", id="runs missing db file"),
])
def test_bad_commands_exit_2_with_one_line(args: list[str], says: str) -> None:
    assert says in assert_usage_error(cli(*args))


def test_a_file_that_is_not_a_database_is_a_clean_error(tmp_path: Path) -> None:
    notes = tmp_path / "notes.duckdb"
    notes.write_text("not a database\n", encoding="utf-8")
    assert "not an evaldrift database (not a DuckDB file)" in assert_usage_error(cli("runs", "--db", notes))


def test_a_database_held_by_another_process_is_a_clean_error(db: Path) -> None:
    with Store(db):  # this process owns the file, as the dashboard would
        line = assert_usage_error(cli_process("ablate", "--db", db, "--run", "latest", "--metric", "faithfulness",
                                              "--blank", "ground_truth", *QUICK))
    assert "held by another process" in line


def test_help_exits_0() -> None:
    proc = cli_process("ablate", "--help")   # and `python -m lib` itself starts and exits with main's code
    assert proc.returncode == 0
    assert "--blank FIELD" in proc.stdout


# -- runs and lint ----------------------------------------------------------------------------------
def test_runs_json_lists_every_run_with_its_instruments(shared_db: Path, run_ids: list[str]) -> None:
    proc = cli("runs", "--db", shared_db, "--json")
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)
    assert len(runs) == 90
    assert [r["run_id"] for r in runs] == run_ids
    leak = {(m["suite"], m["metric"]): m for m in runs[30]["metrics"]}
    faith = leak[("main", "faithfulness")]
    assert faith["binding"] == "replay" and faith["judge_model"] == "offline-lexical-v2"
    assert faith["n"] + faith["n_failed"] + faith["n_excluded"] == 400
    assert ("canary", "faithfulness") in leak


def test_runs_table_has_one_line_per_run(shared_db: Path, run_ids: list[str]) -> None:
    proc = cli("runs", "--db", shared_db)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["run", "started", "judge"]
    assert [line.split()[0] for line in lines[1:91]] == run_ids
    assert "7961cb6d" in lines[31] and "harness refactor" in lines[31]   # run 30: the leaking prompt hash


def test_lint_flags_the_stored_leaky_templates(shared_db: Path) -> None:
    proc = cli("lint", "--db", shared_db)
    assert proc.returncode == 1, proc.stderr
    findings = [line for line in proc.stdout.splitlines() if line.startswith("FINDING")]
    assert len(findings) == 2   # the leaky template and the "ignore the reference" one
    assert all("faithfulness" in f and "'ground_truth'" in f for f in findings)


def test_lint_a_template_file(tmp_path: Path) -> None:
    clean = tmp_path / "clean.txt"
    clean.write_text(DEFAULT_TEMPLATES["faithfulness"], encoding="utf-8")
    leaky = tmp_path / "leaky.txt"
    leaky.write_text("CONTEXT:\n{contexts}\n\nREFERENCE:\n{ground_truth}\n\nCLAIMS:\n{items}\n", encoding="utf-8")
    ok = cli("lint", "--template", clean, "--metric", "faithfulness")
    assert ok.returncode == 0, ok.stderr
    assert "reads answer, contexts: ok" in ok.stdout
    bad = cli("lint", "--template", leaky, "--metric", "faithfulness")
    assert bad.returncode == 1
    assert "must never receive" in bad.stdout
    assert "unknown metric 'faith'" in assert_usage_error(cli("lint", "--template", leaky, "--metric", "faith"))
    leaky.write_text("{reference}", encoding="utf-8")
    assert "unknown placeholder" in assert_usage_error(cli("lint", "--template", leaky, "--metric", "faithfulness"))


# -- ingest and record: the nightly job's entry points ---------------------------------------------------
SAMPLES = [
    {"sample_id": "a", "question": "How long are logs kept?", "answer": "Logs are kept 30 days.",
     "contexts": ["Logs are kept 30 days."], "ground_truth": "Logs are kept 30 days.", "faithfulness": 1.0},
    {"sample_id": "b", "question": "Who resets passwords?", "answer": "Admins do.", "contexts": [],
     "ground_truth": "Admins reset passwords.", "faithfulness": None},
]


def _jsonl(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(s) for s in SAMPLES) + "\n", encoding="utf-8")
    return path


def test_ingest_records_a_run_with_its_instrument(fresh_db: Path, tmp_path: Path) -> None:
    template = tmp_path / "faith.txt"
    template.write_text(DEFAULT_TEMPLATES["faithfulness"], encoding="utf-8")
    proc = cli("ingest", "--db", fresh_db, _jsonl(tmp_path / "run.jsonl"), "--run-id", "r1",
               "--started-at", "2026-10-01T02:00:00+00:00", "--pipeline", '{"retriever": {"top_k": 3}}',
               "--judge-model", "gpt-judge", "--template", f"faithfulness={template}", "--binding", "projected")
    assert proc.returncode == 0, proc.stderr
    assert "recorded run r1: 2 samples; faithfulness 1.000 (n=1, 1 failed)" in proc.stdout
    with Store(fresh_db) as store:
        assert store.run("r1").pipeline == {"retriever": {"top_k": 3}}
        inst = store.instrument("r1", "faithfulness")
    assert (inst.judge_model, inst.binding, inst.n_failed) == ("gpt-judge", "projected", 1)


def test_ingest_of_a_bad_file_names_the_row_and_creates_nothing(fresh_db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(SAMPLES[0]) + "\n" + json.dumps({**SAMPLES[1], "contexts": "not a list"}) + "\n",
                   encoding="utf-8")
    line = assert_usage_error(cli("ingest", "--db", fresh_db, bad, "--run-id", "r1"))
    assert "row 2" in line and "'contexts'" in line
    assert not fresh_db.exists()


def test_ingest_hands_over_through_the_inbox_when_the_database_is_held(fresh_db: Path, tmp_path: Path) -> None:
    source = _jsonl(tmp_path / "run.jsonl")
    with Store(fresh_db):  # the dashboard owns the file: the command runs in another process
        proc = cli_process("ingest", "--db", fresh_db, source, "--run-id", "nightly-1")
        assert proc.returncode == 0, proc.stderr
        # one sentence a reader can parse (issue 46 item 9), not "handed run X: 40 samples; ... over through the inbox"
        assert "so run nightly-1 was handed over through the inbox (" in proc.stdout, proc.stdout
        [dropped] = (fresh_db.parent / "inbox").glob("*.run.json")
    proc = cli("record", "--db", fresh_db, dropped)   # the owner is gone: the same file goes straight in
    assert proc.returncode == 0, proc.stderr
    assert "recorded run nightly-1" in proc.stdout
    with Store(fresh_db) as store:
        assert store.run_ids() == ["nightly-1"]
        assert len(store.samples("nightly-1")) == 2


def test_record_refuses_a_file_that_is_not_a_run(fresh_db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "x.run.json"
    bad.write_text('{"samples": []}', encoding="utf-8")
    assert "missing key 'run_id'" in assert_usage_error(cli("record", "--db", fresh_db, bad))
    bad.write_text("{", encoding="utf-8")
    assert "not JSON" in assert_usage_error(cli("record", "--db", fresh_db, bad))


def test_readme_documents_every_command_and_exit_code() -> None:
    from lib.cli.parser import build_parser

    readme = (ROOT / "lib" / "cli" / "README.md").read_text(encoding="utf-8")   # the command reference
    section = readme.split("<!-- section:cli -->")[1].split("<!-- /section:cli -->")[0]
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    missing = [name for name in sub.choices if f"| `{name} " not in section]
    assert not missing, f"lib/cli/README.md's command table does not document {missing}"
    for code in ("**0**", "**1**", "**2**", "**3**", "module:function"):
        assert code in section


def test_runs_lists_a_parquet_run_ingested_without_templates(fresh_db: Path, tmp_path: Path) -> None:
    # Issue 9 item 7: the README's "your own data" path, no --template: `runs` raised TypeError on NaN hashes.
    import pandas as pd

    source = tmp_path / "f.parquet"
    pd.DataFrame(SAMPLES).to_parquet(source)
    template = tmp_path / "faith.txt"
    template.write_text(DEFAULT_TEMPLATES["faithfulness"], encoding="utf-8")
    proc = cli("ingest", "--db", fresh_db, source, "--run-id", "w", "--started-at", "2026-10-01",  # as in the demo
               "--judge-model", "gpt-judge", "--template", f"faithfulness={template}", "--binding", "projected")
    assert proc.returncode == 0, proc.stderr
    proc = cli("ingest", "--db", fresh_db, source, "--run-id", "x")
    assert proc.returncode == 0, proc.stderr
    proc = cli("runs", "--db", fresh_db)
    assert proc.returncode == 0, proc.stderr
    [line] = [ln for ln in proc.stdout.splitlines() if ln.startswith("x ")]
    assert "unattributed" in line and "n=1" in line
    proc = cli("runs", "--db", fresh_db, "--json")
    run = json.loads(proc.stdout)[-1]
    assert run["run_id"] == "x"
    assert [(m["metric"], m["judge_model"], m["prompt_hash"], m["binding"]) for m in run["metrics"]] == [
        ("faithfulness", None, None, None)]
