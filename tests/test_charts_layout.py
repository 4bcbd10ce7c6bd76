"""Chart sizes that follow their content (issue 14 item 13): a one-cell verdict heatmap is one cell wide."""

from __future__ import annotations

import pandas as pd

from lib.presentation.charts import HEATMAP_CELL_W, HEATMAP_LABEL_W, verdict_heatmap


def matrix(arms: list[str]) -> pd.DataFrame:
    return pd.DataFrame([{"metric": "faithfulness", "arm": a, "kind": "LEAK", "expected": "invariant", "delta": -0.1,
                          "ratio": 5.0, "noise": 0.01, "sentence": "s"} for a in arms])


def test_a_one_cell_heatmap_is_narrow_and_a_wider_one_grows_by_the_cell() -> None:
    one = verdict_heatmap(matrix(["ground_truth"])).layout.width
    three = verdict_heatmap(matrix(["ground_truth", "question", "contexts"])).layout.width
    assert one == HEATMAP_LABEL_W + 2 * HEATMAP_CELL_W < 700
    assert three == HEATMAP_LABEL_W + 3 * HEATMAP_CELL_W
