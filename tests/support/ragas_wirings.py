"""Harnesses around Ragas' metrics, as a team might wire them (scorers for the Ragas adapter's test).

- `wired`: the samples as they are: Ragas' faithfulness sees question, answer and passages.
- `leaky`: a harness refactor that appends the reference to the passages it
  hands Ragas, the classic leak two calls down, where no template lint sees it.
- `recall_wired` / `recall_leaky`: the same for Ragas' context recall, whose
  leak hands it the answer as an extra passage (context recall must never
  receive the answer: a reference the answer repeats looks retrieved).

Each passes an ablation's groups on to the adapter's `many` form (lib/cli/README.md, "Your own harness as the
scorer"): one start of Ragas for every arm and repeat, as a team wraps a slow tool.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from lib.core.samples import EvalSample
from lib.judging.scorers.ragas_metrics import context_recall, faithfulness

Scores = list[float | str | None]


def _with_reference(samples: Sequence[EvalSample]) -> list[EvalSample]:
    return [dataclasses.replace(s, contexts=(*s.contexts, s.ground_truth) if s.ground_truth else s.contexts)
            for s in samples]


def _with_answer(samples: Sequence[EvalSample]) -> list[EvalSample]:
    return [dataclasses.replace(s, contexts=(*s.contexts, s.answer) if s.answer else s.contexts) for s in samples]


def _wiring(metric: Callable[[Sequence[EvalSample]], Scores],
            hand: Callable[[Sequence[EvalSample]], Sequence[EvalSample]]) -> Callable[[Sequence[EvalSample]], Scores]:
    def score(samples: Sequence[EvalSample]) -> Scores:
        return metric(hand(samples))

    score.many = lambda groups: metric.many([hand(g) for g in groups])   # type: ignore[attr-defined]
    return score


wired = _wiring(faithfulness, list)
leaky = _wiring(faithfulness, _with_reference)
recall_wired = _wiring(context_recall, list)
recall_leaky = _wiring(context_recall, _with_answer)
