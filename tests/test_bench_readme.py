"""README's figure tables are written from the benchmarks' figures.json, and nothing else of README changes."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from tests.benchmarks.readme import latest, replace_block, split, update

README = """# x

prose before
<!-- figures:performance -->
old performance table
<!-- /figures:performance -->
prose between
<!-- figures:scaling -->
old scaling table
<!-- /figures:scaling -->
prose after
"""

FIGURES = [
    {"key": "trend@2000", "name": "trend of every metric", "value": 20.4, "unit": "ms", "target": "< 300 ms",
     "ok": True, "note": "", "section": "The dashboard's queries on 2,000 runs"},
    {"key": "ratio@64", "name": "ratio to ideal | 64 in flight", "value": 1.31, "unit": "x", "target": "<= 1.2x",
     "ok": False, "note": "client CPU 1.1 ms a call", "section": "Model judge, 64 in flight"},
    {"key": "batch", "name": "batch ablation end to end", "value": 4.2, "unit": "s", "target": "", "ok": None,
     "note": "", "section": "The batch path against a loopback server"},
    {"key": "trend@20000", "name": "trend at 20,000 runs", "value": 181.0, "unit": "ms", "target": "< 300 ms",
     "ok": True, "note": "", "section": "Scale: 20,000 runs x 400 samples"},
]


def test_the_tables_are_replaced_from_the_figures_and_the_prose_is_kept(tmp_path: Path) -> None:
    readme, figures = tmp_path / "README.md", tmp_path / "figures.json"
    readme.write_text(README)
    figures.write_text(json.dumps(FIGURES))
    update(figures, readme, measured_on=date(2026, 12, 4))
    text = readme.read_text()
    for kept in ("prose before", "prose between", "prose after"):
        assert kept in text
    assert "old performance table" not in text and "old scaling table" not in text
    perf = text[text.index("<!-- figures:performance -->"):text.index("<!-- /figures:performance -->")]
    scale = text[text.index("<!-- figures:scaling -->"):text.index("<!-- /figures:scaling -->")]
    assert "| trend of every metric | 20.4 ms | < 300 ms: PASS |" in perf
    assert "| ratio to ideal \\| 64 in flight (client CPU 1.1 ms a call) | 1.31x | <= 1.2x: MISS |" in perf
    assert "batch ablation end to end" in scale and "trend at 20,000 runs" in scale
    assert "batch ablation" not in perf and "Measured 04 December 2026" in perf


@pytest.mark.parametrize(("section", "scaling"), [
    ("The batch path against a loopback server", True),
    ("Scale: 20,000 runs x 400 samples", True),
    ("How the figures grow from 200 to 2,000 runs", True),
    ("The dashboard's queries on 2,000 runs", False),
    ("Sequential ablation", False),
])
def test_each_section_goes_to_one_table(section: str, scaling: bool) -> None:
    figure = {**FIGURES[0], "section": section}
    performance, scale = split([figure])
    assert (scale == [figure]) is scaling and (performance == [figure]) is not scaling


def test_a_readme_without_its_markers_is_refused_rather_than_appended_to() -> None:
    with pytest.raises(ValueError, match="figures:performance"):
        replace_block("no markers here", "performance", "table")


def test_a_figure_measured_twice_is_shown_once_with_its_last_value() -> None:
    again = {**FIGURES[0], "value": 18.0}
    assert latest([FIGURES[0], FIGURES[1], again]) == [FIGURES[1], again]


def test_the_figures_are_written_beside_the_benchmarks_by_default() -> None:
    from tests.benchmarks.readme import FIGURES_DOC, check

    assert Path(__file__).resolve().parent / "benchmarks" / "README.md" == FIGURES_DOC
    check(FIGURES_DOC)   # both figure blocks are there to be rewritten


def test_run_refuses_a_file_without_the_figure_blocks_before_measuring(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from tests.benchmarks import run

    guide = tmp_path / "README.md"
    guide.write_text("# a guide with no figure tables\n")
    with pytest.raises(SystemExit) as exit_:
        run.main(["--readme", str(guide), "--workdir", str(tmp_path / "work")])
    assert exit_.value.code == 2 and "figures:performance" in capsys.readouterr().err
    assert not (tmp_path / "work").exists()   # refused before any benchmark ran
