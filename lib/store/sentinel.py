"""The SQL of the judge sentinel (lib.diagnosis.sentinel): its pins (probes, instrument, baseline verdicts) and
the nights each pin was judged again. Every statement takes parameters; sample text never enters SQL text."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime

import pandas as pd

from lib.store import Store
from lib.store.base import _now


@dataclass(frozen=True)
class PinRow:
    """One pin (the columns of `sentinels`, in order).

    Attributes:
        pin_id: the pin's id (a name pinned again is a new pin; its nights start over).
        name: the sentinel's name.
        suite, metric: what its probes are judged for.
        judge_model, endpoint: the judge's configured name and normalised endpoint.
        template, binding: the instrument pinned with it.
        source: where the probes came from, in words ("calibration set v2", "run nightly-... (seeded sample)").
        probes: the probe samples, JSON (a list of objects with the four artifacts and the sample id).
        baseline: the pinned verdicts, JSON (sample id -> list of item labels).
        repeats: pin-time repeats judged to bound the judge's own repeat disagreement.
        repeat_share: their mean disagreement with the baseline.
        null_share: m0, the bound on that disagreement the nightly test is against.
        served_model: what the server said it served at pin time (NULL: not said).
        calls: calls the pin made.
        pinned_at: when.
    """

    pin_id: str
    name: str
    suite: str
    metric: str
    judge_model: str
    endpoint: str
    template: str
    binding: str
    source: str
    probes: str
    baseline: str
    repeats: int
    repeat_share: float
    null_share: float
    served_model: str | None
    calls: int
    pinned_at: datetime


@dataclass(frozen=True)
class NightRow:
    """One night of a pin (the columns of `sentinel_nights`, in order).

    Attributes:
        pin_id, night: the pin and the night's key (YYYY-MM-DD unless the operator names another).
        seed: the request seed of this night (part of every call's cache key: no night is answered by another's).
        judged: probes judged (a budget below the probes judges a seeded subset).
        failed: probes whose judging failed (not counted in the disagreement).
        calls, cached: calls made, and judgings the call cache answered (a night run again).
        disagreement: D, the mean share of items whose verdict differs from the pinned one (NULL: not counted).
        detail: JSON, sample id -> its share.
        served_model: what the server said it served most often that night.
        judged_at: when.
    """

    pin_id: str
    night: str
    seed: int
    judged: int
    failed: int
    calls: int
    cached: int
    disagreement: float | None
    detail: str
    served_model: str | None
    judged_at: datetime


PIN_COLUMNS = tuple(f.name for f in fields(PinRow))
NIGHT_COLUMNS = tuple(f.name for f in fields(NightRow))


def add_pin(store: Store, row: PinRow) -> None:
    """Store a pin (one transaction)."""
    with store.transaction() as cur:
        cur.execute(f"INSERT INTO sentinels ({', '.join(PIN_COLUMNS)}) VALUES ({', '.join('?' * len(PIN_COLUMNS))})",
                    [getattr(row, c) for c in PIN_COLUMNS])


def pins(store: Store, name: str | None = None) -> list[PinRow]:
    """Every pin (of one name), oldest first."""
    where, params = ("WHERE name = ?", [name]) if name is not None else ("", [])
    rows = store.cursor().execute(f"SELECT {', '.join(PIN_COLUMNS)} FROM sentinels {where} "
                                  "ORDER BY pinned_at, pin_id", params).fetchall()
    return [PinRow(*r) for r in rows]


def put_night(store: Store, row: NightRow) -> None:
    """Store a night, replacing an earlier record of the same night (a night run again after a failure)."""
    with store.transaction() as cur:
        cur.execute("DELETE FROM sentinel_nights WHERE pin_id = ? AND night = ?", [row.pin_id, row.night])
        cur.execute(f"INSERT INTO sentinel_nights ({', '.join(NIGHT_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(NIGHT_COLUMNS))})", [getattr(row, c) for c in NIGHT_COLUMNS])


def nights(store: Store, pin_id: str) -> list[NightRow]:
    """A pin's nights, by night key."""
    rows = store.cursor().execute(f"SELECT {', '.join(NIGHT_COLUMNS)} FROM sentinel_nights WHERE pin_id = ? "
                                  "ORDER BY night", [pin_id]).fetchall()
    return [NightRow(*r) for r in rows]


def runs_before(store: Store, suite: str) -> pd.DataFrame:
    """The suite's runs (run_id, started_at), oldest first: where a sentinel's night sits on the timeline."""
    return store.cursor().execute(
        "SELECT DISTINCT r.run_id, r.started_at FROM runs r JOIN run_metrics m USING (run_id) WHERE m.suite = ? "
        "ORDER BY r.started_at, r.run_id", [suite]).df()


def now() -> datetime:
    return _now()
