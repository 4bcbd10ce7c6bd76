"""The judge sentinel's nights as the command line and the watcher run them: the pinned judge built from the
operator's settings, and a night judged once per night key, within the call budget.

`due_nights` is what a scheduler (cron, or the watcher's look: lib.jobs.watch) calls: each sentinel whose night
has not been judged yet is judged once. An unattended night pays only within EVALDRIFT_CALL_BUDGET: a model
judge with no budget set is skipped with a reason; with one below the probes, the night judges a subset of that
many probes drawn with the night's seed (lib.diagnosis.sentinel: the test stays valid).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lib.core.endpoints import OFFLINE
from lib.core.settings import Settings
from lib.diagnosis import sentinel
from lib.judging.base import Judge
from lib.judging.build import build_judge, endpoint_of
from lib.store import Store


def pinned_judge(model: str, settings: Settings) -> Judge:
    """The judge a sentinel is pinned to, built on the operator's settings (never from the database's endpoint)."""
    return build_judge(model, endpoint_of(model, settings), settings)


def is_paid(model: str, settings: Settings) -> bool:
    return endpoint_of(model, settings) != OFFLINE


@dataclass(frozen=True)
class NightOutcome:
    """What one sentinel's due night did: its status after, or why it was not judged."""

    name: str
    status: sentinel.Status | None = None
    skipped: str = ""


def due_nights(store: Store, settings: Settings, *, at: datetime | None = None) -> list[NightOutcome]:
    """Judge every sentinel's night `at` (default now) that is not recorded yet; each is judged at most once.

    A paid judge's night makes at most EVALDRIFT_CALL_BUDGET calls (none set: skipped, with the reason).
    """
    out: list[NightOutcome] = []
    for s in sentinel.statuses(store):
        p = s.pin
        when = at or datetime.now()
        key = f"{when:%Y-%m-%d}"
        done = s.night(key)
        if done is not None and done.disagreement is not None:
            continue
        budget = settings.call_budget if is_paid(p.judge_model, settings) else None
        if is_paid(p.judge_model, settings) and not budget:
            out.append(NightOutcome(p.name, skipped=f"judge {p.judge_model} is paid and EVALDRIFT_CALL_BUDGET is "
                                                    "not set (or 0): run `python -m lib sentinel night --yes`"))
            continue
        judge = pinned_judge(p.judge_model, settings)
        out.append(NightOutcome(p.name, sentinel.run_night(store, judge, name=p.name, night=key, budget=budget,
                                                           at=when)))
    return out
