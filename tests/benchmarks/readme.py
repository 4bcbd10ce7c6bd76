"""Write the benchmark figures into the Performance and Scaling tables of tests/benchmarks/README.md.

    python tests/benchmarks/readme.py /tmp/evaldrift-bench/figures.json [tests/benchmarks/README.md]

Only the text between `<!-- figures:performance -->` and `<!-- /figures:performance -->`
(and the same for `scaling`) is replaced: the prose around the tables is the
engineers' reading of the figures. Sections about the batch path, 20,000 runs
and growth go to Scaling; every other section to Performance.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import date
from pathlib import Path

FIGURES_DOC = Path(__file__).resolve().parent / "README.md"   # the figures live beside the benchmarks
NAMES = ("performance", "scaling")
SCALING_WORDS = ("batch", "20,000", "grow", "scal", "past one machine")
_STATUS = {True: "PASS", False: "MISS", None: ""}


def _fmt(value: float, unit: str) -> str:
    if value != value:
        return "n/a"
    if unit in ("rows/s", "samples/s", "calls", "rows", "runs"):
        return f"{value:,.0f} {unit}"
    if unit == "ms":
        return f"{value:,.1f} ms"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value:,.2f} {unit}".rstrip()


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(figures: list[dict], *, measured_on: date) -> str:
    """One Markdown table per section: figure, measured, target and PASS/MISS, with the note."""
    out = [f"Measured {measured_on:%d %B %Y} by `python tests/benchmarks/run.py` on this 2-core machine "
           "(single runs; read them as orders of magnitude).", ""]
    sections: dict[str, list[dict]] = {}
    for f in figures:
        sections.setdefault(f.get("section") or "Other", []).append(f)
    for title, rows in sections.items():
        out += [f"**{_cell(title)}**", "", "| figure | measured | target |", "|---|---|---|"]
        for f in rows:
            target = f"{f['target']}: {_STATUS[f['ok']]}" if f.get("target") else ""
            note = f" ({f['note']})" if f.get("note") else ""
            out.append(f"| {_cell(f['name'] + note)} | {_fmt(f['value'], f['unit'])} | {_cell(target)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def split(figures: list[dict]) -> tuple[list[dict], list[dict]]:
    """(performance, scaling) by section title."""
    scaling = [f for f in figures if any(w in (f.get("section") or "").lower() for w in SCALING_WORDS)]
    return [f for f in figures if f not in scaling], scaling


def replace_block(text: str, name: str, body: str) -> str:
    """Replace what lies between the `figures:<name>` markers (which must exist, once each)."""
    pattern = re.compile(rf"(<!-- figures:{name} -->\n).*?(<!-- /figures:{name} -->)", re.S)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"the figures file needs exactly one <!-- figures:{name} --> ... <!-- /figures:{name} --> "
                         "block")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text)


def check(doc: Path) -> None:
    """Raise ValueError unless `doc` holds one block of each figure table (OSError if it cannot be read)."""
    text = doc.read_text(encoding="utf-8")
    for name in NAMES:
        try:
            replace_block(text, name, "")
        except ValueError as exc:
            raise ValueError(f"{doc}: {exc}") from None


def latest(figures: list[dict]) -> list[dict]:
    """Each figure once: a key measured twice (two sections reading the same store) keeps its last value."""
    by_key = {f["key"]: f for f in figures}
    return [f for f in figures if by_key[f["key"]] is f]


def update(figures_json: Path, readme: Path = FIGURES_DOC, *, measured_on: date | None = None) -> None:
    """Rewrite the figure tables of `readme` (tests/benchmarks/README.md by default) from figures.json."""
    figures = latest(json.loads(figures_json.read_text()))
    when = measured_on or date.today()
    performance, scaling = split(figures)
    text = readme.read_text()
    if performance:
        text = replace_block(text, "performance", table(performance, measured_on=when))
    if scaling:
        text = replace_block(text, "scaling", table(scaling, measured_on=when))
    readme.write_text(text)


if __name__ == "__main__":
    update(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else FIGURES_DOC)
