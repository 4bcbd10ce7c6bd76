"""Another tool's file into a run: its format detected, read by its importer, checked and described (ImportPlan).

The formats and what each records are in the package's docstring (lib/intake/importers/__init__.py); the CLI's
`import` and the Import page both call `prepare_import`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from lib.core.errors import InputError
from lib.core.records import RunRecord
from lib.intake.importers import shapes
from lib.intake.importers.base import Imported, clamp_scores, fold_repeats

FORMATS = ("ragas", "inspect", "promptfoo", "deepeval", "mlflow")
UNVERSIONED = "(version not recorded)"   # in a stored scorer: no scoring-library marker is drawn from it alone
# DeepEval writes its test run's keys in this order (testFile only when a test file ran); .latest_test_run.json
# wraps the run in testRunData
STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3")   # an MLflow tracking store: sqlite:///mlflow.db
DEEPEVAL_HEAD = re.compile(r'\s*\{\s*"(testFile|testCases|testRunData)"\s*:')


def detect(path: str | Path) -> str:
    """Guess a file's format from its name and first bytes (one of FORMATS)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if suffix in STORE_SUFFIXES:
        return "mlflow"
    if suffix == ".json":
        with shapes.open_regular(path) as fh:  # the head only: the file may be large
            head = fh.read(4096).decode("utf-8", "replace")
        if DEEPEVAL_HEAD.match(head):   # before the others: a test case's text may hold any word
            return "deepeval"
        if '"evalId"' in head or '"promptfoo' in head:
            return "promptfoo"
        if '"eval"' in head and '"status"' in head:
            return "inspect"
    if suffix in (".csv", ".parquet", ".jsonl"):
        return "ragas"
    raise InputError("cannot tell the format: give one of " + ", ".join(FORMATS), source=str(path))


# How a warning or error names the input that fixes it: the CLI's flags (the page passes its field names)
CLI_ASKS = {"grader": "--grader", "tool_version": "--tool-version", "metric_map": "--metric-map SCORER=METRIC",
            "started_at": "--started-at"}
MAPPABLE = ("inspect", "deepeval", "mlflow")   # the formats whose score names --metric-map maps


def _read_by() -> dict[str, str]:
    from lib.intake.importers.promptfoo import ASSERTIONS
    from lib.intake.ingest import METRIC_COLUMNS

    return {"promptfoo": "a promptfoo file's scores are read from its assertion types: "
                         + ", ".join(f"{k} ({m})" for k, m in ASSERTIONS.items()),
            "ragas": "a Ragas file's score columns are read by name: "
                     + ", ".join(a for aliases in METRIC_COLUMNS.values() for a in aliases)}


READ_BY = _read_by()   # how the formats --metric-map does not map read their scores


def read(path: str | Path, fmt: str | None = None, *, version: str | None = None,
         metric_map: Mapping[str, str] | None = None, provider: str | None = None,
         name: str | None = None) -> Imported:
    """Read a file of another tool into an Imported table (nothing is validated or written yet).

    `name`: the file's own name when `path` is a copy (an upload): DeepEval's name carries the run's time.
    """
    shapes.require_regular(path)   # before any reader opens it: a FIFO would block it forever
    fmt = fmt or detect(path)
    if fmt == "ragas":
        from lib.intake.importers.ragas import read_ragas
        return read_ragas(path, version=version)
    if fmt == "inspect":
        from lib.intake.importers.inspect import read_inspect
        return read_inspect(path, metric_map=metric_map)
    if fmt == "promptfoo":
        from lib.intake.importers.promptfoo import read_promptfoo
        return read_promptfoo(path, provider=provider)
    if fmt == "deepeval":
        from lib.intake.importers.deepeval import read_deepeval
        return read_deepeval(path, metric_map=metric_map, file_name=name)
    if fmt == "mlflow":
        from lib.intake.importers.mlflow import read_mlflow
        return read_mlflow(path, run=provider, metric_map=metric_map)
    raise InputError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}", field="format", source=str(path))


@dataclass(frozen=True)
class ImportPlan:
    """A tool's file read and validated into a run, with what was detected and what the user should know.

    Attributes:
        run: the run to record (nothing is written yet).
        fmt: the format read ('ragas', 'inspect', 'promptfoo').
        tool: the scoring library, as stored ("ragas", "inspect_ai", "promptfoo").
        version: its version (None: neither the file nor the user gave it).
        grader: the grader model (None: not recorded).
        grader_source: where the grader came from: a place in the file, or "given" by the user.
        graders: our metric -> the grader recorded with it (a metric's own, where the file names one per metric).
        grader_sources: our metric -> where its grader came from.
        sources: our metric -> the tool's name for the score.
        notes: what reading changed or found (stored with the run).
        warnings: what to say before recording.
    """

    run: RunRecord
    fmt: str
    tool: str
    version: str | None
    grader: str | None
    grader_source: str | None
    sources: Mapping[str, str]
    notes: Mapping[str, object]
    warnings: tuple[str, ...]
    graders: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    grader_sources: Mapping[str, str | None] = dataclasses.field(default_factory=dict)


def prepare_import(path: str | Path, *, run_id: str, fmt: str | None = None, started_at: datetime | None = None,
                   pipeline: Mapping[str, object] | None = None, version: str | None = None,
                   metric_map: Mapping[str, str] | None = None, grader: str | None = None,
                   provider: str | None = None, source: str | None = None,
                   asks: Mapping[str, str] = CLI_ASKS) -> ImportPlan:
    """Read and validate another tool's file into a run and say what was found (the CLI and the page call this).

    Args:
        path: the file.
        run_id: the run's id.
        fmt: one of FORMATS (default: detected).
        started_at: when the run happened (default: the time the file records, else now).
        pipeline: the pipeline config (default: none recorded; no pipeline marker is drawn from it).
        version: the tool's version, for files that do not record it (Ragas).
        metric_map: source score name -> our metric (Inspect scorers, DeepEval metrics, MLflow scorers, beyond
            each importer's defaults).
        grader: the grader model, for files that do not name it (Ragas); a file's own grader wins, with a
            warning when the two differ.
        provider: promptfoo: the provider whose results to import, when the file has several; MLflow: the
            evaluation (run id or name), when the store holds several.
        source: the name errors give the file (default: its path).
        asks: how a warning names the input that fixes it (CLI_ASKS: the CLI's flags; the Import page passes
            its own field names, lib.intake.uploads.PAGE_ASKS).

    Raises:
        InputError: an unreadable file, a file with no score we know, or a row and field that fails validation.
    """
    from lib.core.degenerate import chance_in_run
    from lib.intake.ingest import run_from_frame

    fmt = fmt or detect(path)
    name = source or str(path)
    if metric_map and fmt not in MAPPABLE:   # never ignored in silence: the user would trust a mapping not made
        raise InputError(f"--metric-map maps the score names of {', '.join(MAPPABLE)} files; {READ_BY[fmt]}",
                         field="metric_map", source=name)
    got = read(path, fmt, version=version, metric_map=metric_map, provider=provider, name=source)
    metrics = list(got.sources)
    if not metrics:
        unmapped = [str(c) for c in got.notes.get("unmapped_columns") or ()]  # type: ignore[attr-defined]
        unmapped += [str(c) for c in got.notes.get("assertions_not_read") or ()]  # type: ignore[attr-defined]
        hint = f"map one to ours with {asks['metric_map']}" if fmt in MAPPABLE else READ_BY[fmt]
        raise InputError("no score this tool names maps to one of our metrics ("
                         + (f"unmapped: {', '.join(unmapped)}; " if unmapped else "") + hint + ")",
                         field="metrics", source=name)
    frame, clamped = clamp_scores(got.frame, metrics)
    frame, repeats = fold_repeats(frame, metrics, source=name) if "id" in frame.columns else (frame, {})
    for metric, by_id in got.reduced.items():   # the tool's own reduction of a sample's repeats, not their mean
        frame = frame.assign(**{metric: [by_id.get(str(i), v) for i, v in zip(frame["id"], frame[metric],
                                                                                  strict=True)]})
    notes: dict[str, object] = {"tool": got.tool, **got.notes, **repeats}
    if clamped:
        notes["clamped_scores"] = clamped
    warnings = list(got.warnings)
    judge, place = got.judge_model, got.grader_source
    if grader:
        if judge and judge != grader:
            warnings.append(f"the file names the grader {judge} ({place}); recorded that, not {grader}")
        elif not judge:
            judge, place = grader, "given"
    if not judge:
        warnings.append(f"the grader is not recorded in the file: give it ({asks['grader']}), or its scores are "
                        "unattributed and no judge change can be seen")
    tool_version = got.version or version
    if not tool_version:
        warnings.append(f"the {got.tool} version is not recorded: give it ({asks['tool_version']}); until then no "
                        f"scoring-library change is drawn for this run")
    not_read = [str(c) for c in notes.get("unmapped_columns") or ()]  # type: ignore[attr-defined]
    if not_read:
        warnings.append("score columns not read (no metric of ours): " + ", ".join(not_read))
    if clamped:
        warnings.append("scores a hair outside [0, 1] (floating point) set to the bound: "
                        + ", ".join(f"{m} {n}" for m, n in clamped.items()))
    if repeats:
        warnings.append(f"{repeats['rows_read']} rows are {repeats['samples']} samples repeated up to "
                        f"{repeats['repeats']} times: each sample's score is the mean of its repeats"
                        + (f" (for {', '.join(got.reduced)}: the tool's own reduction, above)" if got.reduced else ""))
    notes["grader_source"] = place
    when = started_at or got.started_at
    if when is None:   # never a silent "now": the run would sit on Trends at the time of its import
        when = datetime.now().replace(microsecond=0)
        notes["started_at"] = "the time of the import"
        warnings.append(f"the file records no start time: recorded at the time of the import, "
                        f"{when:%Y-%m-%d %H:%M}; give the run's own with {asks['started_at']}")
    run = run_from_frame(frame, source=name, run_id=run_id, started_at=when,
                         pipeline=pipeline, judge_model=judge, templates=got.templates or None)
    # a metric whose own grader the file names (an Inspect scorer's model, a promptfoo assertion's provider) is
    # recorded with it: one run's metrics may be graded by different models, and none is a judge change
    graders = {m: got.graders.get(m, judge) for m in metrics}
    if len({g for g in graders.values() if g}) > 1:
        notes["graders"] = {m: g for m, g in graders.items() if g}
    run = dataclasses.replace(run, notes=notes, metrics=[
        dataclasses.replace(m, judge_model=graders.get(m.metric, m.judge_model),
                            scorer=f"{got.tool} {tool_version or UNVERSIONED} {got.sources.get(m.metric, m.metric)}")
        for m in run.metrics])
    warnings.extend(chance_in_run(run))   # scores the tool gave where there is nothing to check: flagged, kept
    return ImportPlan(run=run, fmt=fmt, tool=got.tool, version=tool_version, grader=judge, grader_source=place,
                      sources=dict(got.sources), notes=notes, warnings=tuple(warnings), graders=graders,
                      grader_sources={m: got.grader_sources.get(m, place) for m in metrics})


def import_run(path: str | Path, *, run_id: str, fmt: str | None = None, started_at: datetime | None = None,
               pipeline: Mapping[str, object] | None = None, version: str | None = None,
               metric_map: Mapping[str, str] | None = None, grader: str | None = None,
               provider: str | None = None) -> RunRecord:
    """Read and validate another tool's file into a run (record it with Store.record_run or lib.intake.inbox.record).

    Arguments as in `prepare_import`.

    Raises:
        InputError: an unreadable file, or a row and field that fails validation.
    """
    return prepare_import(path, run_id=run_id, fmt=fmt, started_at=started_at, pipeline=pipeline,
                          version=version, metric_map=metric_map, grader=grader, provider=provider).run


__all__ = ["FORMATS", "ImportPlan", "Imported", "detect", "import_run", "prepare_import", "read"]
