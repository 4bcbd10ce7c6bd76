"""The weekly review (lib/presentation/review.py): what it lists for a range, and its Markdown export."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from lib.core.metrics import METRICS
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.jobs._demo import run_plans
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_samples
from lib.presentation import ablation_views, review
from lib.store import Store

SCRIPT = "<script>alert(1)</script>"
HEADINGS = ("## Summary", "## Still open", "## What moved beyond noise", "## What changed in the instrument",
            "## What changed in the pipeline", "## Canary", "## Ablations")


def _day(label: str) -> date:
    """The day of the demo run carrying an event label ('harness refactor', 'leak fixed', ...)."""
    return next(p.started_at.date() for p in run_plans() if p.label == label)


def copy_db(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    wal = Path(f"{src}.wal")
    if wal.exists():
        shutil.copy(wal, Path(f"{dst}.wal"))
    return dst


@pytest.fixture(scope="module")
def demo_store(demo_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """A copy of the demo with one small ablation of the leak run (the demo itself stays read-only)."""
    path = copy_db(demo_db, tmp_path_factory.mktemp("review") / "demo.duckdb")
    with Store(path) as store:
        leak = next(p.run_id for p in run_plans() if p.label == "harness refactor")
        spec = AblationSpec(leak, ("faithfulness",), ("ground_truth",), repeats=2, limit=60)
        run_ablation(store, spec, OfflineJudge(spec.judge, noise=0.03))
        yield store


@pytest.fixture(scope="module")
def leak_week(demo_store: Store) -> review.Review:
    """The review of the week around the leak run, made once: three tests read it (no test writes demo_store)."""
    day = _day("harness refactor")
    return review.review(demo_store, day - timedelta(days=3), day + timedelta(days=3))


def test_a_range_covering_the_leak_lists_the_faithfulness_jump_with_the_prompt_suspect_and_the_canary_alarm(
        leak_week: review.Review) -> None:
    day = _day("harness refactor")
    rev = leak_week

    assert len(rev.runs) == 7
    faith = [f for f in rev.jumps if f.jump.metric == "faithfulness"]
    assert len(faith) == 1
    finding = faith[0]
    assert finding.jump.started_at.date() == day
    assert finding.jump.delta > 0.1
    assert finding.side == "instrument"
    first = finding.jump.suspects[0]
    assert (first.kind, first.blank) == ("prompt", "ground_truth")
    assert "ground_truth" in first.description
    # the ablation of that run is attached to the jump, with its verdict
    assert finding.ablations and finding.ablations[0].summary.startswith("wiring leak")
    assert "LEAK" in finding.ablations[0].kinds
    assert finding.jump.run_id in {a.run_id for a in rev.canary_alarms}
    assert {c.kind for c in rev.instrument_changes} == {"prompt", "binding"}
    assert rev.pipeline_changes == ()
    assert any("alarmed" in line for line in rev.headline)


def test_a_quiet_range_lists_no_jumps_changes_or_alarms(demo_store: Store) -> None:
    fixed = _day("leak fixed")
    rev = review.review(demo_store, fixed + timedelta(days=3), fixed + timedelta(days=9))

    assert len(rev.runs) == 7
    assert rev.jumps == ()
    assert rev.instrument_changes == () and rev.pipeline_changes == ()
    assert rev.canary_runs == 7 and rev.canary_alarms == ()
    # Quiet this week, but what is still open is carried forward first (issue 13): the leak episode and the
    # retriever regression were never explained or accepted.
    assert rev.headline[0].startswith(f"{len(rev.still_open)} incident(s) still open")
    assert any("faithfulness -0.052 at" in line for line in rev.still_open)
    assert rev.headline[1].startswith("Nothing moved beyond noise")


def test_a_range_with_no_runs_says_so(demo_store: Store) -> None:
    rev = review.review(demo_store, date(2020, 1, 1), date(2020, 1, 7))
    assert rev.runs == () and rev.jumps == ()
    assert rev.headline == ("No runs started between 2020-01-01 and 2020-01-07.",)


def test_the_default_range_is_the_last_seven_days_ending_on_the_latest_run(demo_store: Store) -> None:
    last = run_plans()[-1].started_at.date()
    assert review.default_range(demo_store) == (last - timedelta(days=6), last)


def test_the_retriever_regression_is_listed_as_a_pipeline_change(demo_store: Store) -> None:
    day = _day("retriever regression")
    rev = review.review(demo_store, day, day)
    assert [c.kind for c in rev.pipeline_changes] == ["pipeline"]
    assert "embedding_model" in rev.pipeline_changes[0].text
    assert {f.side for f in rev.jumps} == {"pipeline"}


def test_markdown_has_every_heading_and_the_ablation_verdict(leak_week: review.Review) -> None:
    text = review.review_markdown(leak_week)

    assert text.startswith("# evaldrift review: ")
    for heading in HEADINGS:
        assert heading in text
    assert "| faithfulness |" in text
    assert "LEAK: faithfulness moves" in text
    assert "wiring leak" in text


# -- untrusted text ----------------------------------------------------------------------------------
def _sample(i: int, answer: str) -> EvalSample:
    return EvalSample(f"s{i}", "How long are audit logs kept?", answer,
                      ("Audit logs are retained for 90 days.", "Exports run daily."),
                      "Audit logs are retained for 90 days.")


def _planted_run(i: int, run_id: str, prompt: str) -> RunRecord:
    samples = [_sample(k, f"Audit logs are retained for 90 days. {SCRIPT}" if k == 0 else
                       "Audit logs are retained for 90 days.") for k in range(4)]
    judge = OfflineJudge()
    inst = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
    results = score_samples(samples, inst, judge, seed=i)
    metric = MetricRecord("faithfulness", results, judge.model, inst.template, PROJECTED, MAIN, judge.model)
    return RunRecord(run_id, datetime(2026, 3, 1 + i, 2, 0), {"generator": {"prompt": prompt}},
                     {MAIN: samples}, [metric], label=f"label {SCRIPT} | `x`")


def test_markdown_escapes_text_recorded_in_runs(fresh_db: Path) -> None:
    planted = f"nightly-3{SCRIPT}"
    with Store(fresh_db) as store:
        store.record_run(_planted_run(0, "nightly-1", "rag-v1"))
        store.record_run(_planted_run(1, "nightly-2", "rag-v1"))
        store.record_run(_planted_run(2, planted, f"rag-v2 {SCRIPT} | [x](javascript:alert(1))"))
        spec = AblationSpec(planted, ("faithfulness",), ("ground_truth",), repeats=1)
        run_ablation(store, spec, OfflineJudge(spec.judge))
        rev = review.review(store, date(2026, 3, 1), date(2026, 3, 7))

    assert planted in rev.runs
    assert SCRIPT in rev.pipeline_changes[0].text          # the planted text did reach the review
    assert [a.run_id for a in rev.ablations] == [planted]
    text = review.review_markdown(rev)
    assert re.search(r"(?<!\\)<", text) is None          # no tag can open: every < is escaped
    assert "\\<script>" in text
    assert re.search(r"(?<!\\)\[x\]\(javascript", text) is None and "\\[x](javascript" in text  # no live link
    for line in text.splitlines():                         # no value adds a table cell
        if line.startswith("| nightly"):
            assert line.count("|") - line.count("\\|") == 5


# -- the ablation matrix and the canary spells --------------------------------------------------------
@pytest.mark.parametrize("metric", list(METRICS))
def test_expectations_come_from_the_wiring_table(metric: str) -> None:
    fields = ["ground_truth", "question", "contexts", "answer"]
    table = ablation_views.expectation_table([metric], fields)
    for f in fields:
        want = "invariant" if f in METRICS[metric].never else "sensitive"
        assert table.loc[metric, f] == want


def test_verdict_matrix_has_every_cell_with_its_verdict_and_expectation(demo_store: Store) -> None:
    brief = next(b for b in ablation_views.ablation_briefs(demo_store) if b.metrics == ("faithfulness",))
    row = demo_store.ablation(brief.ablation_id)
    from lib.diagnosis.ablation import AblationResult

    matrix = ablation_views.verdict_matrix(AblationResult.from_dict(row["result"]))
    assert matrix[["metric", "arm", "kind", "expected"]].values.tolist() == [
        ["faithfulness", "ground_truth", "LEAK", "invariant"],
        ["faithfulness", "question+ground_truth", "LEAK", "invariant"]]   # the joint arm every ablation adds
    assert ablation_views.result_banner(AblationResult.from_dict(row["result"])) == "error"


@pytest.mark.parametrize(("kind", "level"), [("LEAK", "error"), ("INSENSITIVE", "error"), ("CLEAN", "success"),
                                             ("SENSITIVE", "success"), ("INCONCLUSIVE", "warning"),
                                             ("REPLAY MISMATCH", "warning")])
def test_sentence_levels(kind: str, level: str) -> None:
    assert ablation_views.sentence_level(kind) == level


def test_alarm_spells_group_consecutive_alarm_runs() -> None:
    frame = pd.DataFrame({
        "run_id": ["a", "b", "c", "d", "e", "f"],
        "started_at": pd.date_range("2026-01-01", periods=6, freq="D"),
        "score": [0.2, 0.9, 0.95, 0.2, 0.8, 0.3],
        "alarm": [False, True, True, False, True, False],
    })
    spells = review.alarm_spells(frame)
    assert [(s.first_run, s.last_run, s.runs, s.peak) for s in spells] == [("b", "c", 2, 0.95), ("e", "e", 1, 0.8)]
    assert spells[1].sentence == "alarmed at e (0.80)"


# -- the meeting's conclusions (issue 28 item 3) and plain text (item 4) ----------------------------------------
def test_the_export_carries_every_incidents_state_note_and_who_and_the_rejudged_finding_above_the_tables(
        demo_db: Path, tmp_path: Path) -> None:
    from lib.diagnosis.incidents import _incidents as incidents

    with Store(copy_db(demo_db, tmp_path / "demo.duckdb")) as store:
        found, _ = incidents.load(store)
        episode = next(i for i in found if i.kind == "episode")
        incidents.set_state(store, episode.incident_id, incidents.INSTRUMENT, user="Ada",
                            note="the leak, in and out; the retriever loss inside it is real")
        end = review.data_range(store)[1]
        text = review.review_markdown(review.review(store, end - timedelta(days=6), end))
    tables = text.index("## What moved beyond noise")
    finding = text.index("says the system lost 0.145 on 2026-10-31")
    noted = text.index("explained as instrument, set by Ada on ")
    assert finding < tables and noted < tables
    assert "the leak, in and out; the retriever loss inside it is real" in text[noted:tables]
    assert text[:tables].count("(nobody has set its state)") == len(found) - 1   # every other incident, still open


def test_the_plain_text_export_has_no_markdown_left() -> None:
    markdown = ("# evaldrift review: 2026-11-25 to 2026-12-01\n\n## Summary\n\n- faithfulness moved \\*a lot\\*\n\n"
                "| metric | run | change |\n|---|---|---|\n| faithfulness | nightly\\|1 | -0.194 |\n"
                "| context\\_recall | r2 |  |\n\n_Nothing else._\n\n**LEAK: faithfulness moves**\n\n"
                "```\nraw `code` kept\n```\n")
    assert review.markdown_text(markdown) == (
        "evaldrift review: 2026-11-25 to 2026-12-01\n==========================================\n\n"
        "Summary\n-------\n\n- faithfulness moved *a lot*\n\n"
        "- metric: faithfulness; run: nightly|1; change: -0.194\n- metric: context_recall; run: r2\n\n"
        "Nothing else.\n\nLEAK: faithfulness moves\n\nraw `code` kept\n")


# -- the default week carries what was launched after its last run (issue 46 item 3) ------------------------------
def _quiet_run(run_id: str, day: date) -> RunRecord:
    samples = [_sample(k, "Audit logs are retained for 90 days.") for k in range(3)]
    judge = OfflineJudge()
    inst = Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED)
    metric = MetricRecord("faithfulness", score_samples(samples, inst, judge, seed=1), judge.model, inst.template,
                          PROJECTED, MAIN, judge.model)
    return RunRecord(run_id, datetime.combine(day, datetime.min.time()).replace(hour=2), {}, {MAIN: samples}, [metric])


@pytest.fixture(scope="module")
def three_nights(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """Runs on March 1, 10 and 11; the March 1 run ablated today, long after the last run."""
    with Store(tmp_path_factory.mktemp("launched") / "three.duckdb") as store:
        for run_id, day in (("n1", date(2026, 3, 1)), ("n2", date(2026, 3, 10)), ("n3", date(2026, 3, 11))):
            store.record_run(_quiet_run(run_id, day))
        spec = AblationSpec("n1", ("faithfulness",), ("ground_truth",), repeats=1)
        run_ablation(store, spec, OfflineJudge(spec.judge))
        yield store


@pytest.mark.parametrize(("start", "end", "listed"), [
    (date(2026, 3, 5), date(2026, 3, 11), True),    # the default week: n1 is out, but it was ablated after n3
    (date(2026, 3, 1), date(2026, 3, 7), True),     # the ablated run is in range
    (date(2026, 3, 2), date(2026, 3, 9), False),    # neither its run nor its launch: launched after n2 and n3
    (date(2026, 3, 10), date(2026, 3, 10), False),  # a later run (n3) started between this range and the launch
])
def test_a_range_lists_an_ablation_of_its_runs_or_launched_before_the_next_run(
        three_nights: Store, start: date, end: date, listed: bool) -> None:
    assert review.default_range(three_nights) == (date(2026, 3, 5), date(2026, 3, 11))
    rev = review.review(three_nights, start, end)
    assert ([a.run_id for a in rev.ablations] == ["n1"]) is listed
    assert ("1 ablation(s) in range" in " ".join(rev.headline)) is listed
    text = review.review_markdown(rev)
    assert ("### " in text and "on n1" in text) is listed


# -- the verdict in one sentence, the caveats once (issue 46 item 2) ----------------------------------------------
def test_the_review_and_the_overview_lead_with_one_sentence_and_say_the_caveats_once(
        demo_store: Store, leak_week: review.Review) -> None:
    from lib.diagnosis.ablation._lead import sentences
    from lib.diagnosis.incidents import _incidents as incidents
    from lib.presentation.mdtext import md_text

    rev = leak_week
    brief = next(a for a in rev.ablations if a.summary)
    leak = next(c for c in brief.cells if c[2] == "LEAK")
    cell = next(s for k, s in brief.verdicts if k == "LEAK" and "when ground_truth is blanked" in s)
    figure = re.search(r"moves ([+-]\d\.\d{3})", cell)
    assert figure and leak[1] == "ground_truth"
    lead = f"wiring leak: faithfulness moves {figure.group(1)} when ground_truth is blanked"
    text = review.review_markdown(rev)
    assert lead in text and "cell(s)" not in text
    caveats = sentences(brief.summary)[1:]
    assert caveats and all(text.count(md_text(c)) == 1 for c in caveats), [text.count(md_text(c)) for c in caveats]
    assert rev.jumps[0].sentence.count(lead) == 1 and not any(c in rev.jumps[0].sentence for c in caveats)

    found, _ = incidents.load(demo_store)
    said = [e for i in found for e in i.evidence if e.startswith(f"ablation {brief.ablation_id}:")]
    assert said and all(lead in e and len(sentences(e)) == 1 for e in said), said
