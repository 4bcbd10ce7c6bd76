"""Runs scored by the tools people use, read into evaldrift runs.

- `ragas`: `EvaluationResult.to_pandas()` written to CSV or Parquet, or an
  experiment's JSONL (`experiments/<name>.jsonl`). Instrument: "ragas <version>
  <metric column>" per metric (Ragas files carry no version: give it).
- `inspect`: Inspect AI eval logs, `.eval` (zip) and `.json`. Instrument:
  "inspect_ai <version> <scorer>" per metric, and the grader model.
- `promptfoo`: `promptfoo eval -o results.json`. Instrument: "promptfoo
  <version> <assertion type>" per metric, and the grader provider.
- `deepeval`: a DeepEval test run (`DEEPEVAL_RESULTS_FOLDER/test_run_*.json`).
  Instrument: "deepeval <version> <metric name>" per metric (the file carries no
  version: give it), and each metric's evaluationModel.
- `mlflow`: an MLflow SQLite tracking store (`mlflow.db`) holding
  `mlflow.genai.evaluate` runs (one chosen when it holds several). Instrument:
  "mlflow <version> <scorer>" per metric (give the version), and the judges' source.

Every importer turns its file into one table with our column names and hands
it to `lib.intake.ingest.run_from_frame`, so the same validation applies (row and
field named, nothing written on error). The scoring library's name and version
are stored with each metric (`run_metrics.scorer`); a change of either is a
marker on Trends, like a judge change.

The face: detecting a file's format, reading it and preparing its run (lib.intake.importers.plan); one module a
tool beside it, and the rules they share (base, shapes).
"""

from lib.intake.importers.base import Imported
from lib.intake.importers.plan import (
    CLI_ASKS,
    FORMATS,
    UNVERSIONED,
    ImportPlan,
    detect,
    import_run,
    prepare_import,
    read,
)

__all__ = ["CLI_ASKS", "FORMATS", "UNVERSIONED", "ImportPlan", "Imported", "detect", "import_run", "prepare_import",
           "read"]
