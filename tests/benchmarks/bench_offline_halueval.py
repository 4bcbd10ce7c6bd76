"""The offline judge on real text: faithfulness on HaluEval QA, right answers against hallucinated ones.

    python tests/benchmarks/bench_offline_halueval.py                  # before (794caf6) and after
    python tests/benchmarks/bench_offline_halueval.py --before none    # this tree only
    python tests/benchmarks/bench_offline_halueval.py --data other.jsonl --limit 300

Each record of the development set (/work/shared/data/halueval_qa.jsonl; public, MIT; its README says where
it comes from) holds a question, its knowledge passage as the one context, and an answer that is either the
right one or a hallucinated one. Every answer is scored for faithfulness through the harness exactly as a run
would be (the default faithfulness template, projected binding: the judge sees the answer's claims and the
passage, never the gold answer). Printed per judge: the AUC of the faithfulness score separating right
answers from hallucinated ones (ties count one half), the share of right answers scored 0, the share of
hallucinated answers scored 1, and the time taken. Target: AUC >= 0.9.

`--before REV` also scores the same records with lib/judging/offline.py as it was at git revision REV (read
with `git show`, run beside today's harness), so one run prints the figure before and after a change. The
default, BEFORE, is the last commit before the judge read whole fields, numbers, names and citations.

A benchmark prints figures; it asserts nothing and is not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED  # noqa: E402
from lib.core.results import OK  # noqa: E402
from lib.core.samples import EvalSample  # noqa: E402
from lib.judging.harness import Instrument, score_samples  # noqa: E402
from lib.judging.offline import OfflineJudge  # noqa: E402

DATA = Path("/work/shared/data/halueval_qa.jsonl")
TARGET_AUC = 0.9
BEFORE = "794caf6"


def load(path: Path, limit: int | None = None) -> tuple[list[EvalSample], list[bool]]:
    """The records as samples, and whether each answer is the right one."""
    samples, right = [], []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            samples.append(EvalSample(r["id"], r["question"], r["answer"], tuple(r["contexts"]), r["ground_truth"]))
            right.append(bool(r["supported"]))
            if limit and len(samples) >= limit:
                break
    return samples, right


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(a positive outscores a negative), ties one half (the Mann-Whitney U over both sizes)."""
    ranked = sorted([(s, 1) for s in positives] + [(s, 0) for s in negatives])
    rank_sum = 0.0
    i = 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mid = (i + 1 + j) / 2  # ranks i+1..j share their mean
        rank_sum += mid * sum(flag for _, flag in ranked[i:j])
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def measure(judge: object, samples: list[EvalSample], right: list[bool]) -> dict[str, float]:
    """Score every sample for faithfulness with `judge`; the figures above."""
    t = time.perf_counter()
    results = score_samples(samples, Instrument("faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED),
                            judge, seed=0)  # type: ignore[arg-type]
    secs = time.perf_counter() - t
    pos = [r.score for r, ok in zip(results, right, strict=True) if ok and r.status == OK]
    neg = [r.score for r, ok in zip(results, right, strict=True) if not ok and r.status == OK]
    return {"auc": auc(pos, neg), "right_zero": sum(s == 0 for s in pos) / len(pos),
            "hallucinated_one": sum(s == 1 for s in neg) / len(neg), "n_right": len(pos), "n_hallucinated": len(neg),
            "not_scored": sum(r.status != OK for r in results), "seconds": secs}


def judge_at(rev: str) -> object:
    """An OfflineJudge from lib/judging/offline.py as it was at git revision `rev`."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:lib/judging/offline.py"], capture_output=True,
                            text=True, check=True).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(f"offline_at_{rev}", fh.name)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]  (dataclasses look their module up)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    Path(fh.name).unlink()
    return module.OfflineJudge()


def line(label: str, f: dict[str, float]) -> str:
    mark = "meets" if f["auc"] >= TARGET_AUC else "below"
    return (f"{label:<28} AUC {f['auc']:.3f} ({mark} target {TARGET_AUC})  right scored 0: {f['right_zero']:.1%}"
            f"  hallucinated scored 1: {f['hallucinated_one']:.1%}  ({f['n_right']} right, {f['n_hallucinated']}"
            f" hallucinated, {f['not_scored']:.0f} not scored; {f['seconds']:.2f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help=f"the development set (default {DATA})")
    parser.add_argument("--before", metavar="REV", default=BEFORE,
                        help=f"also score with the offline judge of this git revision (default {BEFORE}; 'none': skip)")
    parser.add_argument("--limit", type=int, help="only the first N records")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"no development set at {args.data}; see its README for where it comes from")
        return 2
    samples, right = load(args.data, args.limit)
    print(f"{len(samples)} records from {args.data}: faithfulness, default template, projected binding")
    if args.before and args.before != "none":
        try:
            before = judge_at(args.before)
        except subprocess.CalledProcessError:
            print(f"before ({args.before}): not in this repository's history; skipped")
        else:
            print(line(f"before ({args.before})", measure(before, samples, right)))
    print(line("after (this tree)", measure(OfflineJudge(), samples, right)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
