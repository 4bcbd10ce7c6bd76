"""What the watcher sent, for the Overview: one row a message and channel, and the incidents already announced."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from lib.store.watch import DELIVERED, OutboxRow

COLUMNS = ["time", "event", "message", "channel", "status"]


def alerts_frame(rows: Sequence[OutboxRow], *, limit: int = 20) -> pd.DataFrame:
    """The latest `limit` messages, newest first: when (delivered, else claimed), the event, the message's first
    line, the channel (its URL with secrets hidden) and whether it was delivered or is pending (with the error)."""
    out = []
    for r in sorted(rows, key=lambda r: r.delivered_at or r.created_at or pd.Timestamp.min, reverse=True)[:limit]:
        status = r.status if r.status == DELIVERED or not r.last_error else f"{r.status}: {r.last_error}"
        out.append({"time": r.delivered_at or r.created_at, "event": r.kind, "message": r.headline,
                    "channel": r.channel, "status": status})
    return pd.DataFrame(out, columns=COLUMNS)


def announced(rows: Sequence[OutboxRow]) -> frozenset[str]:
    """The incidents a message about has reached at least one channel."""
    return frozenset(r.incident_id for r in rows if r.incident_id and r.status == DELIVERED)
