"""Two harnesses around Ragas' faithfulness, as a team might wire it (scorers for the Ragas adapter's test).

- `wired`: the samples as they are: Ragas sees question, answer and passages.
- `leaky`: a harness refactor that appends the reference to the passages it
  hands Ragas, the classic leak two calls down, where no template lint sees it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from lib.core.samples import EvalSample
from lib.judging.scorers.ragas_metrics import faithfulness


def wired(samples: Sequence[EvalSample]) -> list[float | None]:
    return faithfulness(samples)


def leaky(samples: Sequence[EvalSample]) -> list[float | None]:
    handed = [dataclasses.replace(s, contexts=(*s.contexts, s.ground_truth) if s.ground_truth else s.contexts)
              for s in samples]
    return faithfulness(handed)
