"""The replay check judges the baseline on enough samples for its own interval (issue 25 item 5).

A sequential ablation stops each arm once decided; the replay check used to read whatever baseline the arms
left (at least REPLAY_MIN samples) and say "reproduces" when that interval merely failed to show a mismatch.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.core.records import MAIN, MetricRecord, RunRecord
from lib.core.results import SampleResult
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import REPLAY_MISMATCH, AblationSpec, run_ablation
from lib.diagnosis.ablation._replay_samples import replay_decided
from lib.diagnosis.ablation._sequential import seeded_order
from lib.diagnosis.ablation._sequential_run import REPLAY_MIN
from lib.diagnosis.ablation._verdicts import SENSITIVE
from lib.judging import OfflineJudge
from lib.judging.harness import Instrument, score_samples
from lib.store import Store
from tests.support import synthetic_runs as syn

FAITH = DEFAULT_TEMPLATES["faithfulness"]

# (case, deltas (re-run - stored), samples in the run, decided)
ROWS = [
    ("fewer than the minimum: keep judging", [0.0] * 60, 300, False),
    ("every sample judged: decided whatever it shows", [1.0, 0.0] * 30, 60, True),
    ("exact reproduction: within the tolerance", [0.0] * 100, 300, True),
    ("three stray samples in a hundred: neither within nor a mismatch", [1.0] * 3 + [0.0] * 97, 300, False),
    ("a clear mismatch: decided", [1.0] * 20 + [0.0] * 80, 300, True),
    ("small symmetric noise inside the tolerance", [0.01, -0.01] * 60, 300, True),
    ("noise wider than the tolerance", [0.3, -0.3] * 60, 300, False),
]


@pytest.mark.parametrize(("case", "deltas", "total", "decided"), ROWS, ids=[r[0] for r in ROWS])
def test_the_replay_is_decided_by_its_own_interval(case: str, deltas: list[float], total: int,
                                                   decided: bool) -> None:
    assert replay_decided(deltas, min_effect=0.02, band=None, total=total, at_least=REPLAY_MIN) is decided


def test_a_wider_repeat_band_widens_the_tolerance() -> None:
    deltas = [0.3, -0.3] * 60   # a 95% interval of about +-0.055
    assert not replay_decided(deltas, min_effect=0.02, band=None, total=300, at_least=REPLAY_MIN)
    assert replay_decided(deltas, min_effect=0.02, band=0.07, total=300, at_least=REPLAY_MIN)


def test_a_sequential_ablation_judges_the_baseline_until_the_replay_decides(fresh_db: Path) -> None:
    """300 supported answers; the stored score is 0 on one sample in 33 of the seeded order (3 in its first 100):
    the re-run differs by +0.03, beyond the 0.02 tolerance. The contexts arm is decided at 20 samples; the replay
    on the first 100 cannot tell (3 stray samples) and must not say 'reproduces'."""
    fs = syn.facts(300)
    items = [EvalSample(f"s{i:03d}", f.question, f.fact1, (f.fact1, f.filler), f.fact1) for i, f in enumerate(fs)]
    order = seeded_order([s.sample_id for s in items], 1000)
    planted = set(order[16::33])
    results = score_samples(items, Instrument("faithfulness", FAITH, PROJECTED), OfflineJudge(), seed=0)
    assert all(r.score == 1.0 for r in results)
    stored = [SampleResult(r.sample_id, r.status, 0.0 if r.sample_id in planted else r.score) for r in results]
    with Store(fresh_db) as store:
        store.record_run(RunRecord("r1", datetime(2026, 10, 1), {"retriever": "v1"}, {MAIN: items},
                                   [MetricRecord("faithfulness", stored, OfflineJudge().model, FAITH, PROJECTED)]))
        result = run_ablation(store, AblationSpec("r1", ("faithfulness",), ("contexts",), repeats=1, seed=1000),
                              OfflineJudge())
        judged = store.ablation_results(result.ablation_id)
    assert result is not None
    [check] = result.replay
    base = judged[(judged["arm"] == "none")]
    assert len(base) > REPLAY_MIN                      # beyond where the arms and the minimum stopped it
    assert check.mismatch and "REPLAY MISMATCH" in check.sentence
    [cell] = [c for c in result.verdicts if c.arm == "contexts"]
    assert cell.judged == 20 and cell.kind == REPLAY_MISMATCH   # moved as it should, but nothing clears the run
    assert cell.kind != SENSITIVE
