"""The offline judge's reach, measured: the figures the tool's words about the stand-in quote.

    python tests/benchmarks/bench_offline_reach.py            # every labelled set found in /work/shared/data
    python tests/benchmarks/bench_offline_reach.py --data-dir other/

For each public labelled set in the data folder it prints the AUC of the offline judge's faithfulness score
(default template, projected binding, scored through the harness as a run is) separating supported answers from
unsupported ones, per answer, with a 95% bootstrap interval over records (2,000 resamples, seed 0):

- halueval_qa.jsonl (HaluEval QA, MIT; its README in the folder): right answers against hallucinated ones. Short
  answers (an entity, a number, a date), one claim each, so per answer and per claim are the same figure.
- a long-form set with expert claim labels (per answer and per claim) when one is there; none is today, so the
  script says so and the tool quotes no figure for long-form answers.

lib.diagnosis.verdict_words.OFFLINE_REACH quotes what this prints. A benchmark prints figures; it asserts
nothing and is not collected by pytest.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.judging.offline import OfflineJudge  # noqa: E402
from tests.benchmarks.bench_offline_halueval import auc, load  # noqa: E402

DATA_DIR = Path("/work/shared/data")
LONG_FORM = ("claims.jsonl", "longform_claims.jsonl", "factscore.jsonl")   # names a claim-labelled set would have


def bootstrap_auc(pos: list[float], neg: list[float], *, n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of the AUC, resampling each class's records with replacement."""
    rng = random.Random(seed)
    values = sorted(auc([rng.choice(pos) for _ in pos], [rng.choice(neg) for _ in neg]) for _ in range(n))
    return values[int(0.025 * n)], values[int(0.975 * n) - 1]


def halueval(path: Path) -> None:
    from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
    from lib.core.results import OK
    from lib.judging.harness import Instrument, score_samples

    samples, right = load(path)
    results = score_samples(samples, Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED),
                            OfflineJudge(), seed=0)
    pos = [r.score for r, ok in zip(results, right, strict=True) if ok and r.status == OK]
    neg = [r.score for r, ok in zip(results, right, strict=True) if not ok and r.status == OK]
    lo, hi = bootstrap_auc(pos, neg)
    print(f"HaluEval QA ({path.name}): {len(pos) + len(neg)} answers scored ({len(pos)} right, {len(neg)} "
          f"hallucinated; {len(results) - len(pos) - len(neg)} not scored)")
    print(f"  AUC per answer (= per claim: one claim each) {auc(pos, neg):.3f}, 95% CI {lo:.3f} to {hi:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help=f"where the sets are (default {DATA_DIR})")
    args = parser.parse_args(argv)
    path = args.data_dir / "halueval_qa.jsonl"
    if path.exists():
        halueval(path)
    else:
        print(f"no HaluEval set at {path}")
    found = [args.data_dir / n for n in LONG_FORM if (args.data_dir / n).exists()]
    if not found:
        print(f"long-form answers with expert claim labels: no such set in {args.data_dir}; not measured")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
