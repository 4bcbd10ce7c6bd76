"""A gate for a new judge from the dashboard: the Ablation page's face of `python -m lib calibrate`.

`plan_gate` says, before any call, what the gate will judge (the suite's calibration set: its version and
size) and what it costs (calls left after the call cache, for the current instrument and the candidate),
and whether either judge is paid. `run_gate` judges through lib.diagnosis.agreement, with judges built from
the server's settings alone (lib.judging.build), never from a form's endpoint. `GateRunner` runs gates on a
worker thread the process owns (lib.jobs' runner, as for ablations), so a widget interaction never kills one and
no paid judge is ever called on the page's script thread. Its results live in the process (a gate writes
nothing but the call cache: running it again answers from the cache).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass

from lib.app import access
from lib.core.endpoints import OFFLINE
from lib.core.prompts import PROJECTED, build_prompt
from lib.core.records import MAIN
from lib.core.samples import EvalSample
from lib.core.settings import Settings
from lib.diagnosis import cost
from lib.diagnosis.agreement import (
    MARGIN,
    SEED,
    Agreement,
    Calibration,
    Contender,
    Estimate,
    calibrate,
    calibration_samples,
    current_contender,
    current_instrument,
)
from lib.jobs import ONE, Job, Runner, print_failure
from lib.judging.build import build_judge, endpoint_of
from lib.judging.offline import VARIANTS
from lib.store import Store


@dataclass(frozen=True)
class GateRequest:
    """What the user asks: gate `model` (with `template`, or the current template) on `metric` of `suite`.

    Attributes:
        metric: the metric whose labels are the calibration set.
        model: the candidate judge model (an offline-lexical-* judge, or a model on this server's endpoint).
        template: the candidate's template text ('' for the current instrument's template).
        binding: the candidate's binding ('' for the current one, or projected with a template of its own, as
            `calibrate --template` does; replay renders it against the whole sample, as a harness did).
        suite: the suite.
        margin: how much lower the candidate's agreement may be before it fails.
    """

    metric: str
    model: str
    template: str = ""
    binding: str = ""
    suite: str = MAIN
    margin: float = MARGIN

    def gate_id(self, version: int) -> str:
        """One id per request and calibration set version (the same gate asked twice is one job)."""
        body = json.dumps([self.metric, self.model, self.template, self.binding, self.suite, self.margin, version])
        return "gate-" + hashlib.sha256(body.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class GatePlan:
    """What a gate will judge and cost, counted before any call.

    Attributes:
        request: the request.
        version: the calibration set's version.
        n_samples: labelled samples judged by each instrument.
        n_left_out: labelled samples left out (their stored content is no longer what was labelled).
        current_model: the judge model of the current instrument (lib.diagnosis.agreement.current_instrument).
        current_calls: calls left for the current instrument after the call cache.
        candidate_calls: calls left for the candidate after the call cache.
        paid: models (current, candidate or both) that are not the offline judge and have calls left.
        current_run: the run whose instrument is the current one (the newest that can judge again).
    """

    request: GateRequest
    version: int
    n_samples: int
    n_left_out: int
    current_model: str
    current_calls: int
    candidate_calls: int
    paid: tuple[str, ...]
    current_run: str = ""

    @property
    def gate_id(self) -> str:
        return self.request.gate_id(self.version)

    @property
    def calls(self) -> int:
        return self.current_calls + self.candidate_calls

    @property
    def sentence(self) -> str:
        head = (f"Calibration set v{self.version} of suite {self.request.suite!r}: {self.n_samples} labelled samples "
                f"of {self.request.metric}")
        if self.n_left_out:
            head += f" ({self.n_left_out} left out: their stored text is no longer what was labelled)"
        def calls(model: str, n: int) -> str:
            if model in VARIANTS:
                return f"{model}: {n} offline judgings, no API cost"
            return f"{model}: {n} calls left after the call cache"

        judged = (f"judged by the current instrument (run {self.current_run}'s; "
                  f"{calls(self.current_model, self.current_calls)}) and the "
                  f"candidate ({calls(self.request.model, self.candidate_calls)})")
        money = f"; paid judge: {', '.join(self.paid)}" if self.paid else "; no paid call"
        return f"{head}, {judged}{money}."


def _contenders(store: Store, request: GateRequest, settings: Settings) -> tuple[Contender, Contender]:
    current_model = current_instrument(store, request.metric, request.suite).judge_model
    current = current_contender(store, request.metric,
                                build_judge(current_model, endpoint_of(current_model, settings), settings),
                                request.suite)
    judge = build_judge(request.model, endpoint_of(request.model, settings), settings)
    candidate = Contender(judge, request.model, request.template or current.template,
                          request.binding or (PROJECTED if request.template else current.binding))
    return current, candidate


def _calls(store: Store, who: Contender, samples: list[EvalSample], metric: str, settings: Settings) -> int:
    endpoint = endpoint_of(who.model, settings)
    if not who.judge.cacheable:   # the offline judge keeps no replies: one (free) call a judging
        return len(samples)
    requests = [cost.judge_request(who.model, endpoint, build_prompt(who.template, metric, s, who.binding)[0], SEED)
                for s in samples]
    return cost.calls_left(store, requests, model=who.model, endpoint=endpoint).calls


def judge_choices(settings: Settings) -> list[str]:
    """The judges a candidate may be, as the sidebar offers them: the operator's model, then the offline ones."""
    return list(dict.fromkeys([settings.judge_model, *VARIANTS]))


def plan_gate(store: Store, request: GateRequest, settings: Settings) -> GatePlan:
    """Count what the gate will judge and the calls left after the call cache; nothing is called or written.

    Raises:
        InputError: the suite has no labels of the metric on stored samples.
        TrustError: a judge this server cannot call (an unknown offline judge).
    """
    version = store.calibration_version(request.suite)
    samples, left_out = calibration_samples(store, request.suite, request.metric, version)
    current, candidate = _contenders(store, request, settings)
    now = _calls(store, current, samples, request.metric, settings)
    new = _calls(store, candidate, samples, request.metric, settings)
    paid = tuple(dict.fromkeys(c.model for c, n in ((current, now), (candidate, new))
                               if n and endpoint_of(c.model, settings) != OFFLINE))
    return GatePlan(request=request, version=version, n_samples=len(samples), n_left_out=left_out,
                    current_model=current.model, current_calls=now, candidate_calls=new, paid=paid,
                    current_run=current_instrument(store, request.metric, request.suite).run_id)


def may_gate(user: str | None, plan: GatePlan, settings: Settings, *, login: bool) -> bool:
    """May this user run the gate? Checked against every judge it will call (current and candidate)."""
    return all(access.may_launch(user, endpoint_of(m, settings), settings, login=login)
               for m in (plan.current_model, plan.request.model))


def needs_confirmation(plan: GatePlan, budget: int | None) -> bool:
    """A gate with paid calls left is confirmed once, unless they fit the operator's budget."""
    return bool(plan.paid) and (budget is None or plan.calls > budget)


def run_gate(store: Store, request: GateRequest, settings: Settings, version: int | None = None) -> Calibration:
    """Judge the calibration set with the current instrument and the candidate, and compare them, paired.

    Call it off the page's script thread (GateRunner): it may call a paid judge.

    Raises:
        InputError: the suite has no labels of the metric on stored samples.
    """
    current, candidate = _contenders(store, request, settings)
    return calibrate(store, request.metric, candidate, current, suite=request.suite, margin=request.margin,
                     version=version)


def _estimate(e: Estimate, signed: bool = False) -> str:
    if not e.known:
        return "-"
    f = "+.3f" if signed else ".3f"
    if math.isnan(e.low):
        return format(e.value, f)
    return f"{e.value:{f}} [{e.low:{f}}, {e.high:{f}}]"


def result_rows(result: Calibration) -> list[dict[str, str]]:
    """The table the page shows: each instrument's agreement with its 95% interval, then the paired difference."""
    c = result.comparison

    def row(role: str, a: Agreement) -> dict[str, str]:
        return {"": role, "instrument": a.instrument, a.headline_name: _estimate(a.headline),
                "bias (judge - people)": _estimate(a.bias, signed=True)}

    name = c.current.headline_name
    return [row("current", c.current), row("candidate", c.candidate),
            {"": "difference (candidate - current)", "instrument": f"paired over {result.n_samples} samples",
             name: _estimate(c.difference, signed=True), "bias (judge - people)": ""}]


def verdict_words(result: Calibration) -> str:
    """PASS or FAIL first, then the sentence `python -m lib calibrate` prints (margin and verdict included)."""
    return ("FAIL: " if result.worse else "PASS: ") + result.sentence


@dataclass(frozen=True)
class GateStatus:
    gate_id: str
    state: str                       # 'running' | 'done' | 'failed' | 'unknown'
    result: Calibration | None = None
    error: str = ""


@dataclass(frozen=True)
class _Gate:
    """A gate as a job: the plan it counted and the server's settings its judges are built from."""

    plan: GatePlan
    settings: Settings


@dataclass(frozen=True)
class _Gates:
    store: Store

    def job_id(self, spec: _Gate) -> str:
        return spec.plan.gate_id

    def lane(self, spec: _Gate) -> str:
        return ONE

    def run(self, spec: _Gate, job: Job) -> Calibration:
        return run_gate(self.store, spec.plan.request, spec.settings, spec.plan.version)

    def failed(self, spec: _Gate, exc: Exception) -> str:   # shown on the page; the trace goes to the server log
        return print_failure(exc)


class GateRunner(Runner[_Gate, Calibration]):
    """Runs gates on one background thread against one Store; the same gate submitted twice is one job.

    Args:
        store: the store the process owns.
    """

    def __init__(self, store: Store) -> None:
        super().__init__(_Gates(store), name="gate", rerun_done=False)

    def submit(self, plan: GatePlan, settings: Settings) -> str:  # type: ignore[override]
        """Start the gate the plan counted (or join it when it runs or ran); returns its id at once.

        Its judges are built from `settings` (the server's), as `plan_gate` counted them.
        """
        return super().submit(_Gate(plan, settings))

    def status(self, gate_id: str) -> GateStatus:
        if not self.known(gate_id):
            return GateStatus(gate_id, "unknown")
        if self.running(gate_id):
            return GateStatus(gate_id, "running")
        if self.error(gate_id):
            return GateStatus(gate_id, "failed", error=self.error(gate_id))
        return GateStatus(gate_id, "done", self.result(gate_id))
