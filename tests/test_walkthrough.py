"""README's "Your own data" walkthrough, run exactly as written: the bash block, then the nightly job's Python."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lib.store import Store

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def block(marker: str, language: str) -> str:
    section = README.split(f"<!-- {marker} -->")[1].split(f"<!-- /{marker} -->")[0]
    [code] = re.findall(rf"```{language}\n(.*?)```", section, flags=re.S)
    return code


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A working folder laid out like a fresh clone (the repository's files, no database)."""
    work = tmp_path / "clone"
    shutil.copytree(ROOT / "lib", work / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "data" / "examples", work / "data" / "examples")
    return work


def test_the_walkthrough_commands_run_as_written(clone: Path) -> None:
    script = block("walkthrough", "bash")
    assert "python -m lib score" in script and "python -m lib ablate" in script
    env = {**os.environ, "PYTHONPATH": str(clone)}
    env.pop("EVALDRIFT_DB", None)
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script.replace("python ", f"{sys.executable} ")],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "reads answer, contexts" in proc.stdout                        # templates
    assert "recorded run nightly-2: 24 samples" in proc.stdout            # score
    with Store(clone / "evals.duckdb") as store:
        assert store.run_ids() == ["nightly-1", "nightly-2"]
        history = store.metric_history(metrics=["faithfulness"])
        assert [round(x, 2) for x in history["score"]] == [0.81, 0.52]  # as the README's comment says
        [ablation] = store.ablations("nightly-2").to_dict("records")
    assert ablation["status"] == "done"
    assert (clone / "finding.md").read_text(encoding="utf-8").startswith("# evaldrift finding: run nightly-2")


def test_the_nightly_job_snippet_records_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block("nightly", "python"), "README nightly block", "exec"), {})  # as a reader runs it
    with Store(tmp_path / "evals.duckdb") as store:
        assert store.run_ids() == ["nightly-2026-12-03"]
        metrics = store.run_metrics("nightly-2026-12-03").set_index("metric")
    assert sorted(metrics.index) == ["answer_correctness", "faithfulness"]
    assert set(metrics["scorer"]) == {"evaldrift"} and set(metrics["binding"]) == {"projected"}


# -- docs that hold when followed (issue 46 item 9) ---------------------------------------------------------------
def test_the_nightly_snippets_correct_answer_scores_as_supported(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block("nightly", "python"), "README nightly block", "exec"), {})
    with Store(tmp_path / "evals.duckdb") as store:
        metrics = store.run_metrics("nightly-2026-12-03").set_index("metric")
    # its one answer is right and its passage states it: a score of 0 would teach the reader the judge is broken
    assert metrics.loc["faithfulness", "score"] == 1.0 and metrics.loc["answer_correctness", "score"] == 1.0


def test_the_walkthrough_leaves_the_clone_clean() -> None:
    """`evals.duckdb` and `finding.md`, which the walkthrough writes at the clone's root, are git-ignored."""
    written = re.findall(r"--(?:db|out) (\S+)", block("walkthrough", "bash"))
    assert set(written) == {"evals.duckdb", "finding.md"}
    proc = subprocess.run(["git", "check-ignore", "--no-index", *sorted(set(written))], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.stdout.split() == sorted(set(written)), proc.stdout + proc.stderr


def test_the_calibrate_example_names_a_template_that_ships() -> None:
    from lib.jobs._demo import LEAKY_FAITHFULNESS

    doc = (ROOT / "lib" / "diagnosis" / "README.md").read_text(encoding="utf-8")
    [named] = re.findall(r"calibrate --db \S+ --template (\S+)", doc)
    assert (ROOT / named).read_text(encoding="utf-8") == LEAKY_FAITHFULNESS   # the demo's leaky template, as run


def test_no_test_cites_a_design_document_the_repository_lacks() -> None:
    cited = [p.name for p in (ROOT / "tests").glob("test_*.py") if "DESIGN.md" in p.read_text(encoding="utf-8")
             and p.name != "test_walkthrough.py"]
    assert (ROOT / "DESIGN.md").exists() or cited == [], cited
