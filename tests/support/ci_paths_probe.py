"""Run only by tests/test_ci.py, in a child pytest whose environment names every tool path .ci/run exports (and
CI_PATHS_PROBE, the paths it expects as JSON): each way the tests find a tool finds the exported path, from
inside a test (after tests/conftest.py's _clean_environment ran), and lib sees none of them."""

from __future__ import annotations

import json
import os

from tests.support import more_tools, tool_runs

SEAMS = (tool_runs.RAGAS_PYTHON, tool_runs.INSPECT_PYTHON, tool_runs.PROMPTFOO_DIR, more_tools.DEEPEVAL_PYTHON,
         more_tools.MLFLOW_PYTHON, tool_runs.LAKE_PYTHON)


def test_every_exported_tool_path_is_the_one_a_test_uses() -> None:
    expected = json.loads(os.environ["CI_PATHS_PROBE"])
    assert [name for name in os.environ if name.startswith("EVALDRIFT_")] == []   # lib sees no setting of CI's
    assert {variable: str(tool_runs.tool_env(variable, default)) for variable, default in SEAMS} == expected
    from tests import test_ragas_scorer

    assert expected["EVALDRIFT_RAGAS_PYTHON"] == test_ragas_scorer.RAGAS_PYTHON
