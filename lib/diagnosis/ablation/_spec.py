"""What an ablation asks for: the run, the metrics, the arms, the repeats, the judge; and its id."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from lib.core.endpoints import normalise
from lib.core.errors import InputError
from lib.core.metrics import get_metric
from lib.core.profiles import by_design, tool_of
from lib.core.records import MAIN
from lib.core.samples import BLANKABLE, arm_fields, arm_name
from lib.diagnosis.ablation._arms import SWAP, parse_swap
from lib.diagnosis.ablation._arms import swap_seed as seed_of_run
from lib.diagnosis.ablation._verdicts import MIN_EFFECT


@dataclass(frozen=True)
class AblationSpec:
    """What to ablate.

    Attributes:
        run_id: the run whose samples and instruments are re-judged.
        metrics: metrics to test.
        blanks: arms, each a field or fields joined by '+' ("ground_truth", "ground_truth+contexts").
        repeats: re-judgings of each arm (the noise band needs 2 or more).
        judge: the judge model (offline-lexical-* or a model on an OpenAI-compatible server).
        endpoint: where that judge lives ("offline" or the server URL); part of the identity.
        suite: the sample suite ("main" or "canary").
        seed: first judge seed; repeat r uses seed + r.
        limit: only the first `limit` samples (by id), for a quick look.
        scorer: an external harness as "module:function" instead of the judge.
        min_effect: the smallest effect worth naming: a move counts only when its
            paired interval lies wholly beyond it.
        sequential: judge samples in an order fixed by `seed` and stop each arm once its
            verdict is decided (lib.diagnosis.ablation._sequential); False judges every sample.
        swaps: swap arms, each a field or fields joined by '+' ("ground_truth"): every sample is judged with
            another sample's value of them (lib.diagnosis.ablation._arms); named "swap:<fields>" among the arms.
        swap_seed: the seed of the swap pairing (a derangement of the samples in id order); set from the run
            id when swaps are asked for and none is given, so the spec records the pairing it used.

    Besides the arms asked for, every metric also gets the arm that blanks all
    of its must-never-receive fields together (`arms_for`): a leak can hide when
    one such field supplies the support another is blanked of.
    """

    run_id: str
    metrics: tuple[str, ...]
    blanks: tuple[str, ...]
    repeats: int = 3
    judge: str = "offline-lexical-v2"
    endpoint: str = "offline"
    suite: str = MAIN
    seed: int = 1000
    limit: int | None = None
    scorer: str | None = None
    min_effect: float = MIN_EFFECT
    sequential: bool = True
    swaps: tuple[str, ...] = ()
    swap_seed: int | None = None

    def __post_init__(self) -> None:
        if not self.metrics:
            raise InputError("choose at least one metric", field="metric")
        for m in self.metrics:
            try:
                get_metric(m)
            except KeyError as exc:
                raise InputError(str(exc.args[0]), field="metric") from None
        if not self.blanks and not self.swaps:
            raise InputError("choose at least one field to blank or swap", field="blank")
        swaps = tuple(dict.fromkeys(parse_swap(x)[len(SWAP):] for x in self.swaps))
        object.__setattr__(self, "swaps", swaps)
        if swaps and self.swap_seed is None:   # recorded: the pairing is a function of the samples and this seed
            object.__setattr__(self, "swap_seed", seed_of_run(self.run_id))
        for b in self.blanks:
            try:
                fields = arm_fields(b)
            except KeyError as exc:
                raise InputError(f"{exc.args[0]}; blankable: {', '.join(BLANKABLE)}", field="blank") from None
            if not fields:
                raise InputError("'none' is the baseline, not an arm", field="blank")
        if not 1 <= self.repeats <= 20:
            raise InputError("repeats must be between 1 and 20", field="repeats")
        if not 0.0 <= self.min_effect < 1.0:
            raise InputError("the smallest effect worth naming must be in [0, 1)", field="min_effect")
        if self.limit is not None and self.limit < 1:
            raise InputError("limit must be positive", field="limit")
        object.__setattr__(self, "blanks", tuple(dict.fromkeys(arm_name(arm_fields(b)) for b in self.blanks)))
        # The endpoint is identity and stored text: one spelling per server, never with credentials.
        object.__setattr__(self, "endpoint", normalise(self.endpoint))

    @property
    def arms(self) -> tuple[str, ...]:
        return ("none", *self.blanks, *(SWAP + x for x in self.swaps))

    def arms_for(self, metric: str, fields: Sequence[str] | None = None) -> tuple[str, ...]:
        """The baseline, the arms asked for, and the metric's joint arm.

        The joint arm blanks every must-never-receive field the run has
        (`fields`; all four when None), but for those the scorer's tool gives its
        metric by design (lib.core.profiles). It is left out when the run has none
        of them: blanking what is absent measures nothing.
        """
        designed = by_design(tool_of(self.scorer), metric)
        never = [f for f in get_metric(metric).never if f not in designed and (fields is None or f in fields)]
        return tuple(dict.fromkeys((*self.arms, arm_name(never)))) if never else self.arms

    @property
    def ablation_id(self) -> str:
        d = asdict(self)
        if not self.sequential:   # judging every sample is what every ablation did before: same ids as then
            del d["sequential"]
        if not self.swaps:        # an ablation without swaps keeps the id it had before swaps existed
            del d["swaps"], d["swap_seed"]
        blob = json.dumps(d, sort_keys=True)
        return "abl-" + hashlib.sha256(blob.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        if not self.swaps:   # stored as a spec without swaps always was (readers of that format take it whole)
            del d["swaps"], d["swap_seed"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> AblationSpec:
        d = dict(d)
        d.setdefault("sequential", False)   # a spec stored before sequential ablations judged every sample
        try:
            d["metrics"] = tuple(d["metrics"])  # type: ignore[arg-type]
            d["blanks"] = tuple(d["blanks"])  # type: ignore[arg-type]
            d["swaps"] = tuple(d.get("swaps") or ())  # type: ignore[arg-type]
            return cls(**d)  # type: ignore[arg-type]
        except (KeyError, TypeError) as exc:  # a stored spec is data from a file: refuse it plainly
            raise InputError(f"not an ablation spec ({exc})", field="spec") from None
