"""Small tables the pages show static (st.table) rather than as a data grid.

A grid (st.dataframe) costs the browser about 0.1-0.15 s to draw, scrolls a
wide table sideways at 1024 px beside the sidebar, and offers sorting and
selection a five-row table does not need. A static table is drawn as HTML and
wraps its cells. Streamlit renders every cell of st.table as Markdown, so
`styled` escapes each text cell (report.md_escape: no emphasis, link, image,
HTML tag or table cell can come from a value) and formats numbers; the
frame's data is unchanged, so a test reads numbers, not text.

Only for our own records' values (metric names, judge models, prompt hashes,
bindings, config values, run and sample ids); sample text and judge verdicts stay in
grids, which draw text as text (Markdown would still make a bare URL a link).
Pure: pandas in, a pandas Styler out, no Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from pandas.io.formats.style import Styler

from lib.presentation.report import md_escape

MISSING = "—"
WRAP = [{"selector": "td, th", "props": [("white-space", "normal")]}]   # cells wrap at spaces and hyphens


def _cell(value: object) -> str:
    if pd.api.types.is_bool(value):
        return "yes" if value else "no"
    return md_escape(value)


def styled(frame: pd.DataFrame, *, formats: Mapping[str, str] | None = None, index: bool = False) -> Styler:
    """`frame` for st.table: numbers in `formats` (column -> format spec such as "{:.3f}"), every other cell as
    escaped text (a bool as yes/no), a missing value as MISSING; the index (escaped) only when `index`."""
    formats = dict(formats or {})
    if not index:   # Streamlit draws any index but a plain range as a column of its own
        frame = frame.reset_index(drop=True)
    style = frame.style.format(_cell, na_rep=MISSING).set_table_styles(WRAP)
    for column, spec in formats.items():
        if column in frame.columns:
            style = style.format(spec.format, subset=[column], na_rep=MISSING)
    if index:
        return style.format_index(md_escape, axis=0).format_index(md_escape, axis=1)
    return style.hide(axis="index").format_index(md_escape, axis=1)


__all__ = ["MISSING", "styled"]
