"""The Markdown finding: what it says about the demo's leak, and that untrusted text cannot inject markup."""

from __future__ import annotations

import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import OK, SampleResult, Verdict
from lib.core.samples import EvalSample
from lib.presentation.mdtext import plain_text
from lib.presentation.report import md_escape, md_fence, run_report
from lib.store import Store
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parent.parent
LEAK_RUN = 30   # the demo's harness refactor: faithfulness starts reading ground_truth
LEAKY_HASH = "7961cb6dd21c"
CLEAN_HASH = "5c5ba5fdbdb7"


@pytest.fixture(scope="module")
def run_ids(demo_db: Path) -> list[str]:
    with Store(demo_db) as store:
        return store.run_ids()


def _fenced_blocks(text: str) -> tuple[str, list[str]]:
    """(text outside fences, fence bodies) for backtick fences as md_fence writes them."""
    outside, bodies, lines = [], [], text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(`{3,})", lines[i])
        if not m:
            outside.append(lines[i])
            i += 1
            continue
        fence, body = m.group(1), []
        i += 1
        while lines[i] != fence:
            body.append(lines[i])
            i += 1
        bodies.append("\n".join(body))
        i += 1
    return "\n".join(outside), bodies


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


# -- escaping -----------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "escaped"), [
    ("<script>alert(1)</script>", r"\<script\>alert(1)\</script\>"),
    ("a | b", r"a \| b"),
    ("`code`", r"\`code\`"),
    ("[click](http://x) ![img](y)", "\\[click\\](http:\u2060//x) !\\[img\\](y)"),
    # GFM autolinks (a bare URL, www., an address) are broken by an invisible word joiner
    ("see https://evil.example/j or www.evil.example", "see https:\u2060//evil.example/j or www\u2060.evil.example"),
    ("mail evil@x.example", "mail evil@\u2060x.example"),
    ("**bold** _em_ ~~gone~~", r"\*\*bold\*\* \_em\_ \~\~gone\~\~"),
    ("&amp; \\", r"\&amp; \\"),
    ("two\nlines\r\n  here", "two lines here"),
])
def test_md_escape_leaves_no_markup(raw: str, escaped: str) -> None:
    assert md_escape(raw) == escaped


def test_md_fence_is_longer_than_any_backtick_run_inside() -> None:
    block = md_fence("x ```` y\n``` z", "text")
    assert block.startswith("`````text\n") and block.endswith("\n`````")
    assert md_fence("plain").startswith("```\n")


# -- the demo's leak -------------------------------------------------------------------------
def test_the_leak_run_report_names_the_prompt_hash_suspect_and_its_evidence(demo_db: Path,
                                                                           run_ids: list[str]) -> None:
    with Store(demo_db) as store:
        text = run_report(store, run_ids[LEAK_RUN])
    outside, fences = _fenced_blocks(text)
    assert outside.startswith(f"# evaldrift finding: run {run_ids[LEAK_RUN]}")
    assert "## Jumps at this run" in outside
    jumps = outside.split("## Jumps at this run")[1].split("## What changed")[0]
    assert f"1. **prompt**: faithfulness prompt {CLEAN_HASH} -> {LEAKY_HASH}" in jumps
    assert ("Test: split faithfulness's jump into instrument and outputs; ablating faithfulness with ground_truth "
            "blanked checks the new wiring. Ablation: not run yet") in jumps
    assert "now reads ground_truth, which faithfulness must never receive" in outside
    diff = next(b for b in fences if b.startswith(f"--- {CLEAN_HASH}"))
    assert "+{ground_truth}" in diff
    assert "**ALARM**" in outside.split("## Canary")[1].split("##")[0]
    provenance = outside.split("## Evidence provenance (faithfulness)")[1].split("## Ablations")[0]
    assert "cite evidence found only in ground_truth" in provenance
    metrics = [line for line in outside.splitlines() if line.startswith("| faithfulness |")]
    assert LEAKY_HASH in metrics[0] and "+0.1" in metrics[0]
    assert "No ablation of this run is stored" in outside


def test_a_quiet_run_reports_no_jump_and_the_first_run_has_nothing_to_compare(demo_db: Path,
                                                                             run_ids: list[str]) -> None:
    with Store(demo_db) as store:
        quiet = run_report(store, run_ids[10])
        first = run_report(store, run_ids[0])
    assert "No metric moved beyond its jump threshold" in quiet
    assert "Nothing recorded changed since" in quiet
    assert "This is the first run: nothing to compare." in first
    assert "previous run: none (first run)" in first


def test_report_command_runs_the_suspects_ablation_and_writes_the_finding(demo_db: Path, tmp_path: Path,
                                                                         run_ids: list[str]) -> None:
    db = tmp_path / "demo.duckdb"
    shutil.copy(demo_db, db)
    out = tmp_path / "finding.md"
    proc = run_cli("report", "--db", db, "--run", run_ids[LEAK_RUN], "--out", out, "--ablate", "--limit", "120",
                   "--repeats", "2")
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout
    text = out.read_text(encoding="utf-8")
    with Store(db) as store:
        [ablation] = store.ablations(run_ids[LEAK_RUN]).to_dict("records")
    aid = ablation["ablation_id"]
    assert ablation["status"] == "done"
    assert f"Ablation: LEAK ({aid})" in text          # the prompt-hash suspect, tested
    assert f"### {aid}: faithfulness x ground_truth blanked" in text
    assert "- LEAK: faithfulness moves -0." in text
    assert LEAKY_HASH in text


def test_report_command_writes_plain_text_with_plain(demo_db: Path, run_ids: list[str], tmp_path: Path) -> None:
    out = tmp_path / "finding.txt"
    proc = run_cli("report", "--db", demo_db, "--run", run_ids[LEAK_RUN], "--out", out, "--plain")
    assert proc.returncode == 0, proc.stderr
    with Store(demo_db) as store:
        markdown = run_report(store, run_ids[LEAK_RUN])
    text = out.read_text(encoding="utf-8")
    assert text == plain_text(markdown)
    outside, _ = _fenced_blocks(text)
    assert "\\" not in outside   # no escape left for a chat that shows text as typed


def test_report_command_refuses_an_output_folder_that_does_not_exist(demo_db: Path, tmp_path: Path) -> None:
    proc = run_cli("report", "--db", demo_db, "--run", "latest", "--out", tmp_path / "missing" / "f.md")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --out: no folder") and "Traceback" not in proc.stderr


# -- untrusted text ----------------------------------------------------------------------------
EVIL = "Evil claim `x` <script>alert(1)</script> | cell ```` [link](http://x)."


def _run(run_id: str, day: int, pipeline: dict, label: str = "") -> RunRecord:
    sample = EvalSample("s<1>|", "What | is <b>this</b>?", EVIL, ("Unrelated passage about nothing.",),
                        f"{EVIL} More reference text.")
    result = SampleResult(sample.sample_id, OK, 1.0, (Verdict(EVIL, True, "supported", EVIL),))
    metric = MetricRecord("faithfulness", [result], "judge <img src=x onerror=alert(1)>",
                          DEFAULT_TEMPLATES["faithfulness"], PROJECTED, MAIN)
    return RunRecord(run_id, datetime(2026, 10, day, 2, 0), pipeline, {MAIN: [sample]}, [metric], label)


def test_untrusted_text_cannot_inject_markup(fresh_db: Path) -> None:
    run_id = "run-<img src=x onerror=alert(1)>|`"
    with Store(fresh_db) as store:
        store.record_run(_run("before", 1, {"retriever": {"k": "plain"}}))
        store.record_run(_run(run_id, 2, {"retriever": {"k": "<script>v</script> | x"}}, label="**bold** | [a](b)"))
        text = run_report(store, run_id)
    outside, fences = _fenced_blocks(text)
    assert re.search(r"(?<!\\)<", outside) is None   # no tag can open: every < is escaped
    assert "\\<script>" in outside and "\\<img src=x" in outside
    for raw in ("**bold**", "[a](b)", "[link](http://x)", "`x`"):   # each only with its opening mark escaped
        assert re.search(r"(?<!\\)" + re.escape(raw), outside) is None, raw
    # every table row has exactly its header's cells: no value added a column
    tables: dict[int, int] = {}
    block = 0
    for line in outside.splitlines():
        if not line.startswith("|"):
            block += 1
            continue
        tables.setdefault(block, _unescaped_pipes(line))
        assert _unescaped_pipes(line) == tables[block], line
    assert len(tables) >= 3   # metrics, pipeline diff, provenance
    # the sample's evidence is quoted verbatim, inside a fence it cannot close
    assert any(EVIL in body for body in fences)
