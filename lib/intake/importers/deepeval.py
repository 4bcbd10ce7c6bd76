"""DeepEval test runs (`evaluate()` or `deepeval test run` with DEEPEVAL_RESULTS_FOLDER set) -> one run.

DeepEval writes each test run as `<DEEPEVAL_RESULTS_FOLDER>/test_run_<YYYYMMDD_HHMMSS>.json` (and the last one
as `.deepeval/.latest_test_run.json`, the same run under `testRunData`). Each of its `testCases` is a sample:
`input` is the question, `actualOutput` the answer, `retrievalContext` the passages (else `context`),
`expectedOutput` the reference. Each entry of its `metricsData` is one metric's score:

| DeepEval metric | our metric |
|---|---|
| `Faithfulness` | faithfulness |
| `Answer Relevancy` | answer_relevance |
| `Contextual Precision` | context_precision |
| `Contextual Recall` | context_recall |

Any other metric (a GEval such as `Correctness [GEval]`) maps with metric_map (NAME=METRIC) or is listed
as not read. A metric DeepEval could not compute (its `error`) is not scored. The grader is each metric's
`evaluationModel`; the start time is in the file's name (local time), when it has DeepEval's name. DeepEval
records neither its version nor a sample id (`name` is `test_case_<position>`): the version comes from the
user, and a sample's id is a hash of its question and reference, so a reordered run pairs the same samples
and a test case given twice is one sample repeated.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from lib.core.errors import InputError
from lib.intake.importers import shapes
from lib.intake.importers.base import Imported, content_id

METRICS = {"Faithfulness": "faithfulness", "Answer Relevancy": "answer_relevance",
           "Contextual Precision": "context_precision", "Contextual Recall": "context_recall"}
GRADER_PLACE = "testCases[].metricsData[].evaluationModel"
FILE_NAME = re.compile(r"test_run_(\d{8}_\d{6})(?:_\d+)?\.json$")


def _started_at(path: Path) -> datetime | None:
    """The time DeepEval put in the file's name (its local time), as naive UTC."""
    match = FILE_NAME.search(path.name)
    if match is None:
        return None
    local = datetime.strptime(match.group(1), "%Y%m%d_%H%M%S")
    return local.astimezone(UTC).replace(tzinfo=None)


def _test_run(path: Path) -> dict:
    source = str(path)
    data = shapes.strict_json(shapes.read_bytes(path), source=source, what="DeepEval test run")
    if isinstance(data, dict) and isinstance(data.get("testRunData"), dict):   # .deepeval/.latest_test_run.json
        data = data["testRunData"]
    if not isinstance(data, dict) or "testCases" not in data:
        raise InputError("not a DeepEval test run (no testCases)", source=source)
    shapes.check(data, shapes.DEEPEVAL_RUN, source=source, row=None, path="")
    cases = data.get("testCases") or []
    if not cases:
        extra = " (only conversational test cases, which are not read)" if data.get("conversationalTestCases") \
            else ""
        raise InputError(f"a DeepEval test run with no test cases{extra}", field="testCases", source=source)
    for row, case in enumerate(cases, start=1):
        shapes.check(case, shapes.DEEPEVAL_CASE, source=source, row=row, path="testCases")
    return data


def read_deepeval(path: str | Path, *, metric_map: Mapping[str, str] | None = None,
                  file_name: str | None = None) -> Imported:
    """Read a DeepEval test run file (metric_map: a DeepEval metric name -> our metric, beyond METRICS; file_name:
    the file's own name when `path` is a copy, as an upload is: its time is read from that name)."""
    path = Path(path)
    data = _test_run(path)
    names = {**METRICS, **(metric_map or {})}
    sources: dict[str, str] = {}
    graders: Counter = Counter()
    unmapped: list[str] = []
    errored: Counter = Counter()
    rows = []
    for case in data["testCases"]:
        question, reference = case.get("input"), case.get("expectedOutput")
        row: dict[str, object] = {"id": content_id(question, reference), "question": question,
                                  "answer": case.get("actualOutput")}
        contexts = case.get("retrievalContext")
        if contexts is None:
            contexts = case.get("context")
        if contexts is not None:
            row["contexts"] = contexts
        if reference is not None:
            row["ground_truth"] = reference
        for entry in case.get("metricsData") or []:
            name = entry["name"]
            metric = names.get(name)
            if metric is None:
                if name not in unmapped:
                    unmapped.append(name)
                continue
            if sources.setdefault(metric, name) != name:   # two DeepEval metrics for one of ours: the first
                if name not in unmapped:
                    unmapped.append(name)
                continue
            if entry.get("evaluationModel"):
                graders[entry["evaluationModel"]] += 1
            if entry.get("error"):
                errored[metric] += 1
                row[metric] = None
            else:
                row[metric] = entry.get("score")
        rows.append(row)
    frame = pd.DataFrame(rows, dtype=object)
    frame.index = pd.RangeIndex(1, len(frame) + 1, name="row")
    grader = ", ".join(sorted(graders)) or None
    notes: dict[str, object] = {"sample_ids": "hash of question and reference"}
    if unmapped:
        notes["unmapped_columns"] = unmapped
    if errored:
        notes["errored_metrics"] = dict(errored)
    warnings: tuple[str, ...] = ()
    if len(graders) > 1:
        warnings = (f"the metrics name {len(graders)} graders ({grader}): recorded together as one",)
    return Imported(frame, "deepeval", None, sources, grader, _started_at(Path(file_name) if file_name else path),
                    grader_source=GRADER_PLACE if grader else None, notes=notes, warnings=warnings)
