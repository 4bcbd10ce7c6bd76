"""`watch --ablate`: before the watcher sends, the wiring ablations the suspects call for, within a budget of paid
judge calls, so a message carries LEAK or CLEAN (lib.diagnosis.watch.ablations_wanted says which).

Each ablation runs as the CLI's `ablate` runs it (lib.jobs.run_guarded: the circuit breaker and the deadline),
with the judge that recorded the run. The offline judge's calls are free and never counted; a paid judge's
ablation runs only when its calls at most (lib.diagnosis.cost.estimate_ablation, an upper bound counted before
any call) fit what is left of the look's budget. An ablation that does not run, or stops, leaves a note for the
message saying so and why; no verdict is ever said for it. It resumes on a later look (or from the dashboard or
`ablate`), and its verdict is then one message of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lib.core.endpoints import OFFLINE
from lib.core.errors import EvaldriftError
from lib.core.profiles import STRICT, tool_of
from lib.core.settings import Settings
from lib.diagnosis import cost
from lib.diagnosis.ablation import AblationSpec, recorded_judge
from lib.diagnosis.watch import Wanted
from lib.jobs._ablation import run_guarded
from lib.judging.breaker import Limits
from lib.judging.build import build_judge
from lib.judging.offline import VARIANTS
from lib.store import Store

REPEATS = 3   # re-judgings per arm, as `ablate` (its default)


@dataclass(frozen=True)
class Ablated:
    """What the ablations before a look's messages did.

    Attributes:
        ran: the ablation ids that finished (or were answered from the store).
        notes: run id -> lines for its message: an ablation not run or stopped, and why.
        paid_calls: the paid judge's calls made (what the budget counted).
    """

    ran: tuple[str, ...] = ()
    notes: dict[str, list[str]] = field(default_factory=dict)
    paid_calls: int = 0


def _what(w: Wanted) -> str:
    return f"ablation of {w.metric} with {w.blank} blanked at {w.run_id}"


def _judge(store: Store, w: Wanted, settings: Settings):
    """(judge, model, endpoint) that recorded the run, or a sentence saying why none can replay it."""
    frame = store.run_metrics(w.run_id)
    scorer = next((s for m, s in zip(frame["metric"], frame.get("scorer", [None] * len(frame)), strict=True)
                   if m == w.metric and isinstance(s, str)), None)
    if tool_of(scorer) != STRICT:
        return f"{w.metric} at {w.run_id} was scored by {scorer}: ablate it through the tool (`ablate --scorer`)"
    model = recorded_judge(store, w.run_id, [w.metric])
    if model in VARIANTS:
        return build_judge(model, OFFLINE, settings), model, OFFLINE
    if not (settings.base_url or settings.api_key):
        return f"{w.run_id} was judged by {model}: set OPENAI_BASE_URL (and OPENAI_API_KEY) to replay it"
    return build_judge(model, settings.endpoint, settings), model, settings.endpoint


def ablate(store: Store, wanted: Sequence[Wanted], *, budget: int, settings: Settings) -> Ablated:
    """Run the wanted ablations in order, the paid ones within `budget` calls in all.

    Args:
        store: the database, open read-write (the ablations' judgings and results are stored there).
        wanted: lib.diagnosis.watch.ablations_wanted.
        budget: the paid judge calls these ablations may make together (the offline judge's are not counted).
        settings: the operator's settings (the judge's server, the breaker's limits).
    """
    ran: list[str] = []
    notes: dict[str, list[str]] = {}
    spent = 0
    for w in wanted:
        try:
            found = _judge(store, w, settings)
        except EvaldriftError as exc:
            notes.setdefault(w.run_id, []).append(f"{_what(w)} not run: {exc}; no verdict yet")
            continue
        if isinstance(found, str):
            notes.setdefault(w.run_id, []).append(f"{_what(w)} not run: {found}; no verdict yet")
            continue
        judge, model, endpoint = found
        spec = AblationSpec(w.run_id, (w.metric,), (w.blank,), repeats=REPEATS, judge=model, endpoint=endpoint)
        estimate = cost.estimate_ablation(store, spec, cacheable=judge.cacheable)
        if estimate.paid and estimate.calls > budget - spent:
            notes.setdefault(w.run_id, []).append(
                f"{_what(w)} not run: it needs up to {estimate.calls} calls to {model}, over what is left of "
                f"--budget {budget} ({budget - spent}); no verdict yet (a look with the budget, the dashboard or "
                f"`python -m lib ablate` runs it, and its verdict is sent then)")
            continue
        outcome = run_guarded(store, spec, judge, limits=Limits.from_settings(settings))
        if outcome.result is None:
            notes.setdefault(w.run_id, []).append(
                f"{_what(w)} stopped: {outcome.stopped or 'stopped'}; nothing decided (it resumes on a later look)")
        else:
            ran.append(outcome.result.ablation_id)
        if estimate.paid:
            spent += outcome.result.calls if outcome.result is not None else estimate.calls
    return Ablated(tuple(ran), notes, spent)
