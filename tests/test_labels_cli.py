"""The labels and calibrate commands as a user and a CI job run them: subprocesses, a loopback judge server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN
from lib.core.samples import EvalSample
from lib.store import Store
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, facts, record
from tests.test_cli import assert_usage_error, cli

MODEL = "evaldrift-test-model"


def half_supported(i: int, f) -> EvalSample:
    return EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", (f"{f.fact1} {f.filler}",),
                      f"{f.fact1} {f.fact2}")


@pytest.fixture
def labelled_db(fresh_db: Path, tmp_path: Path) -> Path:
    """A run judged by a model on a server (its replies are the offline judge's), and labels of every claim."""
    items = [half_supported(i, f) for i, f in enumerate(facts(30))]
    with Store(fresh_db) as store:
        record(store, "r1", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED, judge_model=MODEL)
    rows = [{"sample_id": s.sample_id, "metric": "faithfulness", "item": k, "label": k == 1} for s in items
            for k in (1, 2)]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = cli("labels", "import", "--db", fresh_db, tmp_path / "labels.jsonl", "--labeller", "ana")
    assert proc.returncode == 0, proc.stderr
    assert "stored 60 labels" in proc.stdout and "v60" in proc.stdout
    return fresh_db


@pytest.fixture
def server_env(openai_server, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-key")
    return openai_server


def test_calibrate_passes_an_equal_judge_and_fails_a_planted_worse_one(labelled_db: Path, server_env,
                                                                       tmp_path: Path) -> None:
    same = cli("calibrate", "--db", labelled_db, "--judge", "openai", "--model", MODEL, "--yes", "--json")
    assert same.returncode == 0, same.stderr
    result = json.loads(same.stdout)
    assert result["difference"]["value"] == 0.0 and not result["worse"] and result["samples"] == 30
    assert result["current"]["accuracy"]["value"] == 1.0
    leaky = tmp_path / "leaky.txt"
    leaky.write_text(LEAKY_FAITHFULNESS)
    worse = cli("calibrate", "--db", labelled_db, "--judge", "openai", "--model", MODEL, "--template", leaky,
                "--binding", "replay", "--yes")
    assert worse.returncode == 1, worse.stderr
    assert "WORSE" in worse.stdout and "1.00 (current" in worse.stdout and "-> 0.50 (candidate" in worse.stdout
    assert "bias +0.00 -> +0.50" in worse.stdout
    assert "sk-planted-key" not in worse.stdout + worse.stderr


def test_calibrate_asks_before_a_model_judges(labelled_db: Path, server_env) -> None:
    line = assert_usage_error(cli("calibrate", "--db", labelled_db, "--judge", "openai", "--model", MODEL))
    assert "30 judgings" in line and "--yes" in line
    assert server_env.n_calls == 0


def test_labels_add_supersedes_visibly_and_agreement_reads_it(labelled_db: Path) -> None:
    proc = cli("labels", "add", "--db", labelled_db, "--sample", "s00", "--metric", "faithfulness", "--item", "2",
               "--label", "yes", "--labeller", "ana")
    assert proc.returncode == 0, proc.stderr
    assert "stored label 61" in proc.stdout and "supersedes label 2 by ana" in proc.stdout
    history = cli("labels", "history", "--db", labelled_db, "--sample", "s00")
    assert "by 61" in history.stdout
    agreement = json.loads(cli("labels", "agreement", "--db", labelled_db, "--json").stdout)
    (one,) = agreement["agreement"]
    assert one["accuracy"]["value"] == pytest.approx(59 / 60) and agreement["version"] == 61
    with Store(labelled_db) as store:
        assert len(store.label_history(MAIN)) == 61


BAD = [
    (["labels", "add", "--sample", "s00", "--metric", "faithfulness", "--labeller", "ana"], "exactly one of"),
    (["labels", "add", "--sample", "zz", "--metric", "faithfulness", "--label", "yes", "--labeller", "ana"],
     "no sample 'zz'"),
    (["labels", "add", "--sample", "s00", "--metric", "faithfulness", "--score", "2", "--labeller", "ana"],
     "[0, 1]"),
    (["calibrate", "--metric", "context_recall"], "no context_recall labels"),
    (["calibrate", "--suite", "canary"], "suite 'canary' has no faithfulness labels"),
]


@pytest.mark.parametrize(("args", "words"), BAD, ids=[b[1] for b in BAD])
def test_bad_label_commands_exit_2_with_one_line_and_store_nothing(labelled_db: Path, args: list[str],
                                                                   words: str) -> None:
    line = assert_usage_error(cli(*args, "--db", labelled_db))
    assert words in line
    with Store(labelled_db) as store:
        assert len(store.label_history(MAIN)) == 60


def test_a_bad_labels_file_names_row_and_field_and_stores_nothing(labelled_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("sample_id,metric,item,label,labeller\ns01,faithfulness,1,yes,bo\ns02,faithfulness,9,yes,bo\n")
    line = assert_usage_error(cli("labels", "import", "--db", labelled_db, path))
    assert "bad.csv, row 2, field 'item'" in line
    with Store(labelled_db) as store:
        assert len(store.label_history(MAIN)) == 60


def test_labels_agreement_and_history_read_the_snapshot_while_another_process_holds_the_file(
        labelled_db: Path) -> None:
    """As `runs` does (lib/cli/listing.py): a read never needs the file the dashboard holds (issue 40 item 13)."""
    import shutil
    import subprocess
    import sys

    from lib.store.snapshot import snapshot_path

    shutil.copy(labelled_db, snapshot_path(labelled_db))   # what the dashboard keeps beside the file it holds
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); sys.stdin.read()", str(labelled_db)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        agreement = cli("labels", "agreement", "--db", labelled_db, "--json")
        assert agreement.returncode == 0, agreement.stderr
        (one,) = json.loads(agreement.stdout)["agreement"]
        assert one["accuracy"]["value"] == 1.0 and one["n_samples"] == 30
        assert "the dashboard holds" in agreement.stderr and "reading its snapshot" in agreement.stderr
        history = cli("labels", "history", "--db", labelled_db, "--sample", "s00")
        assert history.returncode == 0 and "s00" in history.stdout, history.stderr
    finally:
        holder.communicate("", timeout=30)
