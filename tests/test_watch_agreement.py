"""The watcher's signal "the current instrument's agreement with people's labels falling": a new instrument that
agrees with people less than the one before, by a paired interval over the labelled samples both judged (never
two points compared), told inside the message about its run, or in one of its own."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from lib.core.labels import SCORE, Label, content_key
from lib.diagnosis.agreement import Estimate
from lib.diagnosis.watch import (
    AGREEMENT,
    INSTRUMENT,
    NEW,
    AgreementChange,
    InstrumentChange,
    Observation,
    agreement_falling,
    events,
    observe,
)
from lib.store import Store
from tests.support.watch_history import SAMPLES, at, history, night

NOW = datetime(2026, 9, 14, 8, 0)
NAN = math.nan


def _change(value: float, low: float, high: float, shared: int = 40) -> AgreementChange:
    return AgreementChange(metric="faithfulness", run_id="night-012", started_at=datetime(2026, 9, 13, 2, 0),
                           change="judge model a -> b", measure="1 - mean error", before=Estimate(0.93, 0.92, 0.94),
                           after=Estimate(0.93 + value, 0.92 + value, 0.94 + value),
                           difference=Estimate(value, low, high), shared=shared)


@pytest.mark.parametrize(("change", "falling"), [
    (_change(-0.10, -0.13, -0.07), True),             # a drop whose paired interval lies wholly below 0
    (_change(-0.10, -0.13, -0.07, shared=19), False),  # on too few samples both judged
    (_change(-0.10, -0.20, +0.01), False),             # its interval holds 0: not told from chance
    (_change(-0.015, -0.02, -0.01), False),            # sure, but within the 2 points tolerated
    (_change(-0.10, NAN, NAN), False),                 # no interval (too few draws): a point is not enough
    (_change(NAN, NAN, NAN), False),                   # nothing measured
    (_change(+0.05, +0.02, +0.08), False),             # agreement rose
])
def test_agreement_falls_only_by_a_paired_interval_beyond_the_tolerance(change: AgreementChange, falling: bool):
    assert agreement_falling(change) is falling


def test_a_fall_alone_is_a_message_of_its_own_and_is_not_repeated():
    obs = Observation(now=NOW, agreement=(_change(-0.10, -0.13, -0.07),))
    (e,) = events(obs, set()).events
    assert (e.kind, e.key) == (AGREEMENT, "agreement:faithfulness:night-012")
    assert e.headline.startswith("faithfulness: people's agreement with the faithfulness judge fell at night-012 "
                                 "(judge model a -> b): 1 - mean error 0.93 [0.92, 0.94] -> 0.83 [0.82, 0.84], a "
                                 "paired difference of -0.10 [-0.13, -0.07] on 40 labelled samples both judged")
    assert events(obs, {"agreement:faithfulness:night-012"}).events == ()
    assert events(Observation(now=NOW, agreement=(_change(-0.10, -0.20, 0.01),)), set()).events == ()


def test_a_fall_at_an_instrument_change_is_told_in_its_message():
    change = InstrumentChange("night-012", datetime(2026, 9, 13, 2, 0), "faithfulness", "judge model",
                              "faithfulness judge model: a -> b", 0.004, 0.06)
    obs = Observation(now=NOW, instrument_changes=(change,), agreement=(_change(-0.10, -0.13, -0.07),))
    (e,) = events(obs, set()).events
    assert e.kind == INSTRUMENT and e.headline.endswith("; people's agreement fell 0.93 [0.92, 0.94] -> "
                                                         "0.83 [0.82, 0.84]")
    assert ("agreement:faithfulness:night-012", AGREEMENT) in e.facts


def test_a_new_judge_that_reads_people_worse_is_said_with_its_jump():
    """Real labels and judgings: people scored every sample 0.70; the old judge scores about that, the new one
    0.85 (a jump at the judge change, and 1 - mean error falls from about 0.94 to about 0.85)."""
    store = Store(":memory:")
    history(store, [0.70] * 12)
    store.add_labels([Label("main", s.sample_id, "faithfulness", None, SCORE, 0.70, content_key("faithfulness", s),
                            "ana", NOW, "test") for s in SAMPLES])
    seen = {k for e in events(observe(store, at(11.5)), set()).events for k, _ in e.facts}
    night(store, 12, 0.85, judge_model="gpt-judge-2")
    (e,) = events(observe(store, at(12.5)), seen).events
    assert e.kind == NEW and e.headline.startswith("faithfulness +0.1")
    said = [line for line in e.evidence if line.startswith("people's agreement with the faithfulness judge fell")]
    assert len(said) == 1 and "1 - mean error 0.9" in said[0] and "on 40 labelled samples both judged" in said[0]
    assert ("agreement:faithfulness:night-012", AGREEMENT) in e.facts


def test_the_instruments_are_compared_on_the_runs_nearest_their_change():
    """Judge b agrees with people as judge a did on its first nights; later a system change moves every score away
    from people's labels (the labels stay on the same content). That fall is the system's, not the judge's: the
    comparison pairs the runs nearest the change (it read the newest runs of b, and called a fall, before)."""
    store = Store(":memory:")
    history(store, [0.70] * 12)
    for d in range(12, 15):
        night(store, d, 0.70, judge_model="gpt-judge-2")
    for d in range(15, 25):
        night(store, d, 0.95, judge_model="gpt-judge-2", pipeline={"retriever": "v2"})
    store.add_labels([Label("main", s.sample_id, "faithfulness", None, SCORE, 0.70, content_key("faithfulness", s),
                            "ana", NOW, "test") for s in SAMPLES])
    (c,) = observe(store, at(24.5)).agreement
    assert c.run_id == "night-012" and c.shared == 40
    assert not agreement_falling(c), c.difference
