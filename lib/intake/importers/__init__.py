"""Runs scored by the tools people use, read into evaldrift runs.

- `ragas`: `EvaluationResult.to_pandas()` written to CSV or Parquet, or an
  experiment's JSONL (`experiments/<name>.jsonl`). Instrument: "ragas <version>
  <metric column>" per metric (Ragas files carry no version: give it).
- `inspect`: Inspect AI eval logs, `.eval` (zip) and `.json`. Instrument:
  "inspect_ai <version> <scorer>" per metric, and the grader model.
- `promptfoo`: `promptfoo eval -o results.json`. Instrument: "promptfoo
  <version> <assertion type>" per metric, and the grader provider.

Every importer turns its file into one table with our column names and hands
it to `lib.intake.ingest.run_from_frame`, so the same validation applies (row and
field named, nothing written on error). The scoring library's name and version
are stored with each metric (`run_metrics.scorer`); a change of either is a
marker on Trends, like a judge change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from lib.core.errors import InputError
from lib.core.records import RunRecord
from lib.intake.importers.base import Imported

FORMATS = ("ragas", "inspect", "promptfoo")


def detect(path: str | Path) -> str:
    """Guess a file's format from its name and first bytes ('ragas', 'inspect' or 'promptfoo')."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if suffix == ".json":
        with open(path, "rb") as fh:  # the head only: the file may be large
            head = fh.read(4096).decode("utf-8", "replace")
        if '"evalId"' in head or '"promptfoo' in head:
            return "promptfoo"
        if '"eval"' in head and '"status"' in head:
            return "inspect"
    if suffix in (".csv", ".parquet", ".jsonl"):
        return "ragas"
    raise InputError("cannot tell the format: give one of " + ", ".join(FORMATS), source=str(path))


def read(path: str | Path, fmt: str | None = None, *, version: str | None = None,
         metric_map: Mapping[str, str] | None = None) -> Imported:
    """Read a file of another tool into an Imported table (nothing is validated or written yet)."""
    fmt = fmt or detect(path)
    if fmt == "ragas":
        from lib.intake.importers.ragas import read_ragas
        return read_ragas(path, version=version)
    if fmt == "inspect":
        from lib.intake.importers.inspect import read_inspect
        return read_inspect(path, metric_map=metric_map)
    if fmt == "promptfoo":
        from lib.intake.importers.promptfoo import read_promptfoo
        return read_promptfoo(path)
    raise InputError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}", field="format", source=str(path))


def import_run(path: str | Path, *, run_id: str, fmt: str | None = None, started_at: datetime | None = None,
               pipeline: Mapping[str, object] | None = None, version: str | None = None,
               metric_map: Mapping[str, str] | None = None) -> RunRecord:
    """Read and validate another tool's file into a run (record it with Store.record_run or lib.intake.inbox.record).

    Args:
        path: the file.
        run_id: the run's id.
        fmt: 'ragas', 'inspect' or 'promptfoo' (default: detected).
        started_at: when the run happened (default: the time the file records, else now).
        pipeline: the pipeline config.
        version: the tool's version, for files that do not record it (Ragas).
        metric_map: source score name -> our metric (Inspect scorers; defaults in lib.intake.importers.inspect).

    Raises:
        InputError: an unreadable file, or a row and field that fails validation.
    """
    from lib.intake.ingest import run_from_frame

    got = read(path, fmt, version=version, metric_map=metric_map)
    run = run_from_frame(got.frame, source=str(path), run_id=run_id, started_at=started_at or got.started_at,
                         pipeline=pipeline, judge_model=got.judge_model)
    metrics = [dataclasses.replace(m, scorer=f"{got.tool} {got.version or '(version not recorded)'} "
                                            f"{got.sources.get(m.metric, m.metric)}")
               for m in run.metrics]
    return dataclasses.replace(run, metrics=metrics)


__all__ = ["FORMATS", "Imported", "detect", "import_run", "read"]
