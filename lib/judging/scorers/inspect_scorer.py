"""Inspect AI's own scorer as the scorer an ablation drives: an imported Inspect run, re-scored with a field blanked.

    python -m lib ablate RUN --metric answer_correctness --blank question \\
        --scorer 'lib.judging.scorers.inspect_scorer:rescore@logs/run.eval'

The argument after `@` is the log the run was imported from (`LOG#SCORER` when the log has several scorers).
Each sample the ablation hands over is the log's sample of that id with its fields as given (one blanked):
`inspect_score_worker.py`, in the Python that has Inspect (EVALDRIFT_INSPECT_PYTHON, default this one), rebuilds
the scorer from the log (its name and options: grading template, grader model) and scores them with
`inspect_ai.score_async`, calling the grader as the log names it (with this process's environment: the provider
variables Inspect's own run used). The baseline re-scored this way is paired with the stored scores (the
ablation's replay check), and repeats give the noise band. A blank field goes to Inspect as Inspect holds it: an
empty input, target or completion, an empty passage list.

One worker serves every call of an ablation (Inspect takes seconds to start); it stops when this process ends,
or after 15 idle minutes.
"""

from __future__ import annotations

import atexit
import functools
import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from lib.core.errors import InputError
from lib.core.samples import EvalSample
from lib.judging.scorers.groups import in_one_call

WORKER = Path(__file__).with_name("inspect_score_worker.py")
_LOCK = threading.Lock()
_WORKERS: dict[tuple[str, str, str], tuple[subprocess.Popen, object]] = {}


def inspect_python() -> str:
    """The interpreter that has Inspect AI (EVALDRIFT_INSPECT_PYTHON, else this one)."""
    from lib.core import settings

    return settings.load().inspect_python or sys.executable


def _split(target: str) -> tuple[Path, str]:
    log, _, scorer = target.partition("#")
    path = Path(log).expanduser()
    if not path.is_file():
        raise InputError(f"no Inspect log at {log} (give the log the run was imported from: "
                         f"inspect_scorer:rescore@LOG)", field="scorer")
    return path.resolve(), scorer


def _worker(python: str, log: Path, scorer: str) -> tuple[subprocess.Popen, object]:
    key = (python, str(log), scorer)
    found = _WORKERS.get(key)
    if found is not None and found[0].poll() is None:
        return found
    errors = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 (kept open with the worker)
    try:
        # -I: this folder is not put on the path, whatever its modules are named
        proc = subprocess.Popen([python, "-I", str(WORKER), str(log), scorer], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=errors, text=True, encoding="utf-8")
    except OSError as exc:
        errors.close()
        raise InputError(f"EVALDRIFT_INSPECT_PYTHON names a Python that cannot be run, {python}: "
                         f"{exc.strerror or exc}", field="scorer") from exc
    _WORKERS[key] = (proc, errors)
    return proc, errors


def _failure(python: str, proc: subprocess.Popen, errors) -> InputError:
    proc.kill()
    proc.wait()
    errors.seek(0)
    text = errors.read()
    if "No module named 'inspect_ai'" in text:
        return InputError(f"Inspect AI is not installed for {python} (set EVALDRIFT_INSPECT_PYTHON to a Python "
                          f"that has it)", field="scorer")
    last = (text.strip().splitlines() or ["(no output)"])[-1]
    return InputError(f"Inspect's scorer failed: {last[:400]}", field="scorer")


def inspect_scores(target: str, samples: Sequence[EvalSample]) -> tuple[list[float | None], list[str | None], str]:
    """Re-score samples with the log's own Inspect scorer: (scores, Inspect's reasons where none, Inspect version).

    Raises:
        InputError: no such log, Inspect is not installed in its Python, or the worker failed as a whole.
    """
    log, scorer = _split(target)
    python = inspect_python()
    request = json.dumps({"samples": [{"id": s.sample_id, "question": s.question, "answer": s.answer,
                                       "contexts": list(s.contexts), "ground_truth": s.ground_truth}
                                      for s in samples]}) + "\n"
    with _LOCK:
        proc, errors = _worker(python, log, scorer)
        try:
            proc.stdin.write(request)   # type: ignore[union-attr]
            proc.stdin.flush()          # type: ignore[union-attr]
            for line in proc.stdout:    # type: ignore[union-attr]
                if line.startswith("EVALDRIFT "):
                    out = json.loads(line[len("EVALDRIFT "):])
                    break
            else:
                raise _failure(python, proc, errors)
        except (BrokenPipeError, OSError):
            raise _failure(python, proc, errors) from None
    version = str(out["inspect"])
    return (list(out["scores"]), [f"Inspect {version}: {r}" if r else None for r in out["reasons"]], version)


def rescore(target: str, samples: Sequence[EvalSample]) -> list[float | str | None]:
    """The scorer for `--scorer lib.judging.scorers.inspect_scorer:rescore@LOG`: each sample's score by the log's
    own Inspect scorer, or Inspect's reason (as text) where it gave none."""
    scores, reasons, _ = inspect_scores(target, samples)
    return [score if score is not None else reason for score, reason in zip(scores, reasons, strict=True)]


def _many(target: str, groups: list[list[EvalSample]]) -> list[list[float | str | None]]:
    """rescore for several lists of samples (an ablation's arms and repeats) in one call to Inspect."""
    return in_one_call(functools.partial(rescore, target), groups)


rescore.many = _many   # type: ignore[attr-defined]


@atexit.register
def _stop_workers() -> None:
    with _LOCK:
        for proc, errors in _WORKERS.values():
            if proc.poll() is None:
                proc.stdin.close()   # type: ignore[union-attr]
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
            errors.close()   # type: ignore[attr-defined]
        _WORKERS.clear()
