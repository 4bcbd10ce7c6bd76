"""Ragas as the scorer an ablation drives: the metric your team really runs, blanked field by field.

`lib.judging.scorers.ragas_metrics:faithfulness` (and `:context_recall`) is a scorer (see lib/cli/README.md,
"Your own harness as the scorer"): samples in, one score per sample out. It runs Ragas'
`Faithfulness` (ragas.metrics.collections) against the operator's
OpenAI-compatible judge (OPENAI_BASE_URL, OPENAI_API_KEY, EVALDRIFT_JUDGE_MODEL),
in the Python that has Ragas: EVALDRIFT_RAGAS_PYTHON, default this
interpreter. Ragas is never a requirement of evaldrift; its dependencies
(openai 2.x, langchain 0.3) conflict with ours, so it usually lives in its own
virtual environment, and each call runs `ragas_worker.py` there.

Ragas' faithfulness reads the question, the answer and the passages
(`user_input`, `response`, `retrieved_contexts`); it never receives the
reference. A harness that hands it the reference (as an extra passage, say) is
what an ablation blanking ground_truth finds.

Ragas' context recall reads the question, the passages and the reference
(`user_input`, `retrieved_contexts`, `reference`); it never receives the
answer, and a harness that hands it the answer is what blanking answer finds.

OFFERED lists the Ragas metrics wired here, each tested end to end against a
real Ragas. Our other rows have no Ragas counterpart that runs on a chat
endpoint alone: Ragas' answer relevancy and answer correctness also need an
embeddings endpoint, and its context precision is judged against the
reference or the answer, not the question. The worker's METRICS table is
where another one goes.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from lib.core.errors import InputError
from lib.core.samples import EvalSample
from lib.judging.scorers.groups import in_one_call

WORKER = Path(__file__).with_name("ragas_worker.py")
TIMEOUT = 3600.0   # one chunk of samples; Ragas asks up to two calls a sample
OFFERED = ("faithfulness", "context_recall")   # our metric names; ragas_worker.METRICS says which Ragas class


def ragas_python() -> str:
    """The interpreter that has Ragas (EVALDRIFT_RAGAS_PYTHON, else this one)."""
    from lib.core import settings

    return settings.load().ragas_python or sys.executable


def _judge_model() -> str:
    from lib.core import settings
    from lib.judging.offline import VARIANTS

    model = settings.load().judge_model
    if model in VARIANTS:
        raise InputError("Ragas needs a model judge: set EVALDRIFT_JUDGE_MODEL (and OPENAI_BASE_URL) to the "
                         "OpenAI-compatible server it should call", field="scorer")
    return model


def score_with_ragas(metric: str, samples: Sequence[EvalSample], *, concurrency: int | None = None
                     ) -> tuple[list[float | None], str, dict[str, int]]:
    """Score samples with a Ragas metric; returns (scores, Ragas version, failure reasons and counts).

    Raises:
        InputError: Ragas is not installed in the Ragas Python, or the worker failed as a whole.
    """
    scores, version, errors, _ = ragas_scores(metric, samples, concurrency=concurrency)
    return scores, version, errors


def ragas_scores(metric: str, samples: Sequence[EvalSample], *, concurrency: int | None = None
                 ) -> tuple[list[float | None], str, dict[str, int], list[str | None]]:
    """As score_with_ragas, with each sample's reason when Ragas gave it no score (None where it did).

    Raises:
        InputError: Ragas is not installed in the Ragas Python, or the worker failed as a whole.
    """
    from lib.core import settings

    if metric not in OFFERED:
        raise InputError(f"no Ragas adapter for {metric!r}: the adapter runs {', '.join(OFFERED)}", field="scorer")
    s = settings.load()
    model = _judge_model()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    if s.base_url:
        env["OPENAI_BASE_URL"] = s.base_url
    if s.api_key:
        env["OPENAI_API_KEY"] = s.api_key
    # blanked passages go to Ragas as one empty passage: Ragas refuses an empty list, but judges statements
    # against an empty context (what blanking means); a blank question it refuses, and says so per sample
    lines = "".join(json.dumps({"question": x.question, "answer": x.answer, "contexts": list(x.contexts) or [""],
                                "ground_truth": x.ground_truth}) + "\n" for x in samples)
    width = concurrency or s.judge_concurrency
    try:
        proc = subprocess.run([ragas_python(), str(WORKER), metric, model, str(width)], input=lines, text=True,
                              capture_output=True, env=env, timeout=TIMEOUT, check=False)
    except OSError as exc:   # no such interpreter, or not executable: the setting is wrong
        raise InputError(f"EVALDRIFT_RAGAS_PYTHON names a Python that cannot be run, {ragas_python()}: "
                         f"{exc.strerror or exc}", field="scorer") from exc
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        if "No module named 'ragas'" in proc.stderr:
            raise InputError(f"Ragas is not installed for {ragas_python()} (set EVALDRIFT_RAGAS_PYTHON to a "
                             f"Python that has it)", field="scorer")
        raise InputError(f"the Ragas worker failed: {last}", field="scorer")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    reasons = out.get("reasons") or [None] * len(out["scores"])
    return (list(out["scores"]), str(out["ragas"]), dict(out["errors"]),
            [f"Ragas {out['ragas']}: {r}" if r else None for r in reasons])


def _with_reasons(metric: str, samples: Sequence[EvalSample]) -> list[float | str | None]:
    """Scores, and for a sample Ragas refused its reason as text (a scorer may say why it gave no score)."""
    scores, _, _, reasons = ragas_scores(metric, samples)
    return [score if score is not None else reason for score, reason in zip(scores, reasons, strict=True)]


def faithfulness(samples: Sequence[EvalSample]) -> list[float | str | None]:
    """Ragas' faithfulness of each sample (where Ragas could not score it: its reason, as text)."""
    return _with_reasons("faithfulness", samples)


def context_recall(samples: Sequence[EvalSample]) -> list[float | str | None]:
    """Ragas' context recall of each sample (where Ragas could not score it: its reason, as text)."""
    return _with_reasons("context_recall", samples)


# every arm and repeat of an ablation in one worker (lib.diagnosis.ablation many_form): the worker's start, Ragas'
# imports and the openai SDK's resources Ragas reaches, costs about 4.5 CPU s a call here, and an ablation made 11
# calls (the probe's samples apart, then each arm)
faithfulness.many = functools.partial(in_one_call, faithfulness)   # type: ignore[attr-defined]
context_recall.many = functools.partial(in_one_call, context_recall)   # type: ignore[attr-defined]
