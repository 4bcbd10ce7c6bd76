"""Plotly figures from frames: pure functions, no Streamlit, no queries.

Any text that came from a sample or a judge is escaped before it reaches a
hover label (plotly renders a subset of HTML there).
"""

from __future__ import annotations

import html

import plotly.graph_objects as go  # noqa: F401  (used by the figures below)


def safe(text: object, limit: int = 300) -> str:
    """Escape untrusted text for a plotly label, cut to `limit` characters."""
    s = str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s)


# -- trend and overview figures (owned by the Trends/Overview pages) --------------------

# -- ablation, canary and review figures (owned by the Ablation/Canary/Review pages) ----
