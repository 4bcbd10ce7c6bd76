"""The positive control and the swap arm on public records (HaluEval QA, /work/shared/data; issue 41 items 2, 3).

Cases built from HaluEval's records, never from the issue's held-out ones: a slice of its questions with their
knowledge passages, answers and gold answers, and the same right answers paired with another question's passage
(a retrieval miss: only the reference supports them). Each ablation reads the verdict a user would: the kind,
the words, the exit code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import AblationResult, AblationSpec, run_ablation
from lib.diagnosis.cost import estimate_ablation
from lib.judging import OfflineJudge
from lib.store import Store
from tests.support import synthetic_runs as syn
from tests.support.cli import run_cli

HALUEVAL = Path("/work/shared/data/halueval_qa.jsonl")
N = 40


def records() -> list[dict]:
    return [json.loads(line) for line in HALUEVAL.read_text(encoding="utf-8").splitlines()[:3 * N]]


def halueval(n: int = N) -> list[EvalSample]:
    """The first n records as they are: right and hallucinated answers with their own passage."""
    return [EvalSample(r["id"], r["question"], r["answer"], tuple(r["contexts"]), r["ground_truth"])
            for r in records()[:n]]


def retrieval_misses(n: int = N) -> list[EvalSample]:
    """Right answers (the gold answer itself) with another question's passage: only the reference supports them."""
    right = [r for r in records() if r["variant"] == "right_answer"][:n]
    return [EvalSample(r["id"], r["question"], r["answer"], tuple(right[(i + 7) % len(right)]["contexts"]),
                       r["ground_truth"]) for i, r in enumerate(right)]


def passages_elsewhere() -> list[EvalSample]:
    """Each right-answer record's knowledge passage as a long answer (its sentences the claims), with another
    question's passage: nothing supports the claims, so a lenient scorer sits at its floor."""
    right = [r for r in records() if r["variant"] == "right_answer"]
    return [EvalSample(r["id"], r["question"], r["contexts"][0], tuple(right[(i + 7) % len(right)]["contexts"]),
                       r["ground_truth"]) for i, r in enumerate(right)]


def ablate(db: Path, items: list[EvalSample], metric: str, *, blanks: tuple[str, ...] = (),
           scorer: str | None = None, **kw: object) -> AblationResult:
    with Store(db) as store:
        syn.record(store, "h", items, metric, DEFAULT_TEMPLATES[metric], PROJECTED)
        spec = AblationSpec("h", (metric,), blanks, repeats=1, scorer=scorer, **kw)  # type: ignore[arg-type]
        result = run_ablation(store, spec, None if scorer else OfflineJudge())
    assert result is not None
    return result


def by_arm(result: AblationResult) -> dict[str, object]:
    return {c.arm: c for c in result.verdicts}


# -- the positive control: a scorer that ignores its inputs is named (item 2) ---------------------------------

@pytest.mark.parametrize(("scorer", "level"), [("tests.support.scorers:constant", "0.500"),
                                               ("tests.support.arm_scorers:always_one", "1.000")])
def test_a_constant_scorer_is_insensitive_and_the_gate_fails(fresh_db: Path, scorer: str, level: str) -> None:
    """It used to read INCONCLUSIVE "the judge gives as much with nothing to check against", exit 3, which a gate
    failing on exit 1 let through. Its score does not rise when the claims get perfect support."""
    result = ablate(fresh_db, halueval(), "faithfulness", blanks=("contexts",), scorer=scorer)
    cell = by_arm(result)["contexts"]
    assert (cell.kind, cell.why) == ("INSENSITIVE", "does not read its inputs"), cell.sentence
    assert cell.sentence.startswith("INSENSITIVE: the judge does not read its inputs")
    assert cell.sentence.endswith(f"Judged on all {N} samples: no earlier look decided it.")   # sequential
    control = by_arm(result)["support"]
    assert control.kind == "INSENSITIVE" and control.delta == 0.0 and control.n == N
    assert f"gives {level} with nothing to check the claims against and {level} with its claims given perfect " \
           f"support (contexts set to the claims of answer" in control.sentence
    assert result.summary.startswith("the judge does not read its inputs: faithfulness does not rise")
    assert result.exit_code == 1


def test_a_judge_that_reads_its_inputs_keeps_its_verdicts(fresh_db: Path) -> None:
    """The offline judge on the same records: blanking contexts moves it, the control rises, nothing else said."""
    result = ablate(fresh_db, halueval(), "faithfulness", blanks=("contexts",))
    assert by_arm(result)["contexts"].kind == "SENSITIVE"
    assert "support" not in by_arm(result)   # a rising control with no cell at the floor adds no row
    assert result.exit_code == 0


def test_the_floor_case_stays_inconclusive_when_the_control_rises(fresh_db: Path) -> None:
    """Passages as answers with another question's passage, a lenient scorer (it credits one claim in 25 whatever
    it is shown): the score sits at its floor, the control shows the scorer reads its passages, so the cell stays
    "no room to fall" (exit 3), never INSENSITIVE."""
    result = ablate(fresh_db, passages_elsewhere(), "faithfulness", blanks=("contexts",),
                    scorer="tests.support.floor_scorer:lenient_faithfulness", sequential=False)
    cell, control = by_arm(result)["contexts"], by_arm(result)["support"]
    assert (cell.kind, cell.why) == ("INCONCLUSIVE", "no room to fall"), cell.sentence
    assert "The positive control rises (the judge reads its inputs)" in cell.sentence
    assert control.kind == "SENSITIVE" and control.lo > 0.5
    assert result.exit_code == 3


def test_the_estimate_counts_the_positive_control(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "h", halueval(), "faithfulness", syn.LEAKY_FAITHFULNESS, syn.REPLAY)
        cost = estimate_ablation(store, AblationSpec("h", ("faithfulness",), ("contexts",), repeats=2,
                                                     swaps=("ground_truth",)), cacheable=False)
    # baseline, contexts, the swap, the joint arm, the floor and the positive control, 2 repeats of 40 samples
    assert cost.judgings == 6 * 2 * N and cost.control == 2 * N and cost.swapped == 2 * N
    assert "Of the judgings, 80 give the items perfect support (the positive control) and 80 swap a field with " \
           "another sample's." in cost.sentence


# -- the swap arm: a leak with a direction (item 3) ----------------------------------------------------------

def test_a_leaky_scorer_moves_down_when_the_reference_is_another_samples(fresh_db: Path) -> None:
    result = ablate(fresh_db, retrieval_misses(), "faithfulness", scorer="tests.support.scorers:leaky_faithfulness",
                    swaps=("ground_truth",))
    cell = by_arm(result)["swap:ground_truth"]
    assert (cell.kind, cell.why) == ("LEAK", "measured move") and cell.hi < -0.5
    assert "when ground_truth is swapped for another sample's" in cell.sentence
    assert "with another sample's ground_truth the score falls" in cell.sentence and "flatters" in cell.sentence
    assert result.summary.startswith("wiring leak: faithfulness moves -0.")
    assert "swapped for another sample's" in result.summary and result.exit_code == 1


def test_a_wired_scorer_does_not_move_when_the_reference_is_swapped(fresh_db: Path) -> None:
    result = ablate(fresh_db, retrieval_misses(), "faithfulness", scorer="tests.support.scorers:wired_faithfulness",
                    swaps=("ground_truth",))
    assert by_arm(result)["swap:ground_truth"].kind == "CLEAN" and result.exit_code == 0


@pytest.mark.parametrize(("scorer", "kind"), [("tests.support.arm_scorers:reference_correctness", "SENSITIVE"),
                                              ("tests.support.arm_scorers:passage_correctness", "INSENSITIVE")])
def test_answer_correctness_that_ignores_its_reference_is_insensitive_to_a_swap(fresh_db: Path, scorer: str,
                                                                               kind: str) -> None:
    result = ablate(fresh_db, halueval(), "answer_correctness", scorer=scorer, swaps=("ground_truth",),
                    sequential=False)
    cell = by_arm(result)["swap:ground_truth"]
    assert cell.kind == kind, cell.sentence
    if kind == "INSENSITIVE":
        assert "it ignores the ground_truth it is shown" in cell.sentence and result.exit_code == 1
    else:
        assert cell.delta < -0.2


def test_ablate_swap_on_the_command_line(fresh_db: Path) -> None:
    with Store(fresh_db) as store:
        syn.record(store, "h", retrieval_misses(), "faithfulness", syn.LEAKY_FAITHFULNESS, syn.REPLAY)
    proc = run_cli("ablate", "--db", fresh_db, "--run", "h", "--metric", "faithfulness", "--swap", "ground_truth",
                   "--repeats", "1", "--json")
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert out["spec"]["swaps"] == ["ground_truth"] and isinstance(out["spec"]["swap_seed"], int)
    [cell] = [c for c in out["verdicts"] if c["arm"] == "swap:ground_truth"]
    assert cell["kind"] == "LEAK" and cell["delta"] < 0
    assert "swap a field with another sample's" in proc.stderr   # the cost line counts the swap arm
    bad = run_cli("ablate", "--db", fresh_db, "--run", "h", "--metric", "faithfulness", "--swap", "contexts")
    assert bad.returncode == 2 and "cannot swap contexts" in bad.stderr


# -- a partial leak on public records: a small leak is still a leak (issue 41 item 1) --------------------------

def test_a_scorer_leaking_the_reference_for_one_sample_in_15_is_a_leak_on_public_records(fresh_db: Path) -> None:
    """HaluEval's first 300 right answers, every other one behind another question's passage (a retrieval miss):
    the harness lets the reference reach its check for the samples whose number is a multiple of 15, so a few
    misses find support there and nowhere else, a move of a few hundredths. Blanking the reference must read LEAK
    with its size (a CI gate fails on exit 1), never CLEAN as it did while the move was under the 0.02 worth
    naming."""
    right = [r for r in (json.loads(line) for line in HALUEVAL.read_text(encoding="utf-8").splitlines()[:900])
             if r["variant"] == "right_answer"]
    items = [EvalSample(r["id"], r["question"], r["answer"],
                        tuple(right[(i + 7) % len(right)]["contexts"] if i % 2 else r["contexts"]), r["ground_truth"])
             for i, r in enumerate(right)]
    leaking = sum(int("".join(c for c in s.sample_id if c.isdigit())) % 15 == 0 for s in items)
    assert 15 <= leaking <= len(items) // 10   # about 1 in 15
    result = ablate(fresh_db, items, "faithfulness", blanks=("ground_truth",),
                    scorer="tests.support.scorers:partial_leak_faithfulness")
    cell = by_arm(result)["ground_truth"]
    assert cell.kind == "LEAK" and cell.hi is not None and cell.hi < 0, cell.sentence
    assert -0.06 < cell.delta < -0.01, cell.sentence
    assert f"{cell.delta:+.3f}"[:5] in cell.sentence or f"{cell.delta:+.2f}" in cell.sentence
