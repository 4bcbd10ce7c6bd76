"""Harnesses around Ragas' metrics, as a team might wire them (scorers for the Ragas adapter's test).

- `wired`: the samples as they are: Ragas' faithfulness sees question, answer and passages.
- `leaky`: a harness refactor that appends the reference to the passages it
  hands Ragas, the classic leak two calls down, where no template lint sees it.
- `recall_wired` / `recall_leaky`: the same for Ragas' context recall, whose
  leak hands it the answer as an extra passage (context recall must never
  receive the answer: a reference the answer repeats looks retrieved).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from lib.core.samples import EvalSample
from lib.judging.scorers.ragas_metrics import context_recall, faithfulness


def wired(samples: Sequence[EvalSample]) -> list[float | None]:
    return faithfulness(samples)


def leaky(samples: Sequence[EvalSample]) -> list[float | None]:
    handed = [dataclasses.replace(s, contexts=(*s.contexts, s.ground_truth) if s.ground_truth else s.contexts)
              for s in samples]
    return faithfulness(handed)


def recall_wired(samples: Sequence[EvalSample]) -> list[float | None]:
    return context_recall(samples)


def recall_leaky(samples: Sequence[EvalSample]) -> list[float | None]:
    handed = [dataclasses.replace(s, contexts=(*s.contexts, s.answer) if s.answer else s.contexts) for s in samples]
    return context_recall(handed)
