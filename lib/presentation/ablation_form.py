"""What the Ablation page's form shows: the spec of the ablation on screen, or where a newcomer should start.

The form's widgets are seeded before they are drawn. When an ablation appears
on screen (launched, opened from a link, or the four readings launched from a
result), the form takes that ablation's spec, so the choices beside a result are
the ones that produced it. Opened with no link and no ablation, it starts at
the first open jump's run and metric. Pure functions; pages/ablation.py applies
them to session state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lib.diagnosis.ablation import AblationSpec
from lib.diagnosis.incidents import Incident, first_open_jump

JOINT = "+"
DEFAULT_METRIC = "faithfulness"        # the metric the form starts at when no open jump names one
DEFAULT_BLANKS = ("ground_truth",)     # the field the form starts blanking
DEFAULT_REPEATS = 3                    # repeats the form starts at: a judge repeat band from the first launch


@dataclass(frozen=True)
class FormValues:
    """The form's widget values for one spec, and the arms the form cannot show (fields blanked together)."""

    run_id: str
    metrics: tuple[str, ...]
    blanks: tuple[str, ...]
    whole: bool
    repeats: int
    limit: int
    joint_arms: tuple[str, ...] = ()
    every_sample: bool = False
    swaps: tuple[str, ...] = ()

    def widgets(self) -> dict[str, object]:
        """Session-state values keyed by the page's widget keys."""
        return {"abl_run": self.run_id, "abl_metrics": list(self.metrics), "abl_blanks": list(self.blanks),
                "abl_matrix": self.whole, "abl_repeats": self.repeats, "abl_limit": self.limit,
                "abl_all_samples": self.every_sample, "abl_swaps": list(self.swaps)}


def form_values(spec: Mapping[str, object], offered: Sequence[str]) -> FormValues:
    """The form for a stored spec (AblationSpec.to_dict): its run, metrics, single-field arms (the whole matrix
    when they are every field the run offers), repeats, sample limit, whether every sample was judged (a spec
    stored before sequential ablations was) and the fields swapped; joint arms are named apart."""
    blanks = [str(b) for b in spec.get("blanks", ())]   # type: ignore[attr-defined]
    single = tuple(b for b in blanks if JOINT not in b)
    joint = tuple(b for b in blanks if JOINT in b)
    whole = bool(offered) and set(single) == set(offered) and len(offered) > 1
    return FormValues(str(spec["run_id"]), tuple(str(m) for m in spec.get("metrics", ())),  # type: ignore[attr-defined]
                      tuple(b for b in single if b in offered), whole, int(spec.get("repeats") or 1),  # type: ignore[call-overload]
                      int(spec.get("limit") or 0), joint,  # type: ignore[call-overload]
                      not bool(spec.get("sequential", False)),
                      tuple(str(x) for x in spec.get("swaps") or ()))  # type: ignore[attr-defined]


def start_at(incidents: Sequence[Incident], run_ids: Sequence[str]) -> tuple[str, str | None]:
    """Where the form starts without a link: the first open jump's run and metric, else the latest run."""
    jump = first_open_jump(incidents)
    if jump is not None and jump.run_id in run_ids:
        return jump.run_id, jump.metric
    return run_ids[-1], None


def opening_spec(incidents: Sequence[Incident], run_ids: Sequence[str], *, judge: str, endpoint: str) -> AblationSpec:
    """The ablation the page launches when it is opened without a link and launched as it stands: the first open
    jump's run and metric (start_at), DEFAULT_BLANKS blanked, DEFAULT_REPEATS repeats, no sample limit, judged
    sequentially, by `judge` (the page offers the run's own first). The figures the docs quote come from it
    (tests/test_docs.py runs it on the demo)."""
    run_id, metric = start_at(incidents, run_ids)
    return AblationSpec(run_id, (metric or DEFAULT_METRIC,), DEFAULT_BLANKS, repeats=DEFAULT_REPEATS, judge=judge,
                        endpoint=endpoint, limit=None, sequential=True)
