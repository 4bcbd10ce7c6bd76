"""A jump's test, the split, with the judges the two runs recorded (issue 10: a jump's words come from its split).

`diagnose.split_jump` re-judges each run's outputs with both runs' instruments.
Here the judges are chosen as an ablation's are: the model each instrument
recorded, offline in-process or on the operator's server (settings decide
where a call goes and with which key; the database only names the model). A
split with a model judge is paid work, so it is planned first: how many
judgings, with which models, and whether any is paid; the CLI asks for --yes,
the Compare page for a click by someone allowed to launch paid judges.
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.core.records import MAIN
from lib.core.settings import Settings
from lib.diagnosis.trends._diagnose import Split, split_jump
from lib.judging.base import Judge
from lib.judging.build import judge_for_recorded
from lib.judging.offline import VARIANTS
from lib.store import Store


@dataclass(frozen=True)
class SplitPlan:
    """What a split will do: its runs, the judge per recorded model, and how many judgings (4 cells x n)."""

    metric: str
    run_a: str
    run_b: str
    judges: dict[str, Judge]
    judgings: int

    @property
    def paid(self) -> bool:
        """True when any judge is a model on a server (a call costs money or time)."""
        return any(model not in VARIANTS for model in self.judges)

    def describe(self) -> str:
        models = ", ".join(sorted(self.judges))
        return (f"the split re-judges {self.judgings} samples ({self.run_a} and {self.run_b}, each with both runs' "
                f"instruments) with {models}; replies already in the call cache are not paid for again")


def plan_split(store: Store, metric: str, run_a: str, run_b: str, settings: Settings, *,
               suite: str = MAIN) -> SplitPlan:
    """The split's judges and size; InputError when a recorded judge cannot be reproduced here."""
    models = [store.instrument(r, metric, suite).judge_model for r in (run_a, run_b)]
    judges = {str(m): judge_for_recorded(settings, m) for m in dict.fromkeys(models)}  # type: ignore[arg-type]
    n = len(store.samples(run_a, suite)) + len(store.samples(run_b, suite))
    return SplitPlan(metric, run_a, run_b, judges, 2 * n)


def run_split(store: Store, plan: SplitPlan, *, suite: str = MAIN) -> Split:
    """Run a planned split; a model judge's replies go to the store's call cache."""
    return split_jump(store, plan.metric, plan.run_a, plan.run_b, lambda model: plan.judges[str(model)],
                      suite=suite, cache=store)


__all__ = ["SplitPlan", "plan_split", "run_split"]
