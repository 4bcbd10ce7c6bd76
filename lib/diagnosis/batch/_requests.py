"""The requests a job will send, built exactly as the harness builds them (same call-cache keys), for a batch.

An ablation's requests are its judgings left (lib.diagnosis.ablation._plan):
every arm's first repeat, and every repeat of the probe samples; the other
repeats are asked live only if the probe shows the judge does not repeat
itself. A re-judge's are every sample of every run it has not stored yet.
Degenerate samples make no request. Identical requests are sent once.
"""

from __future__ import annotations

from collections.abc import Iterable

from lib.core.calls import JudgeRequest
from lib.core.degenerate import exclusion_reason
from lib.core.endpoints import normalise
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import AblationSpec
from lib.diagnosis.rejudge import RejudgeSpec
from lib.judging.harness import Instrument, build_request
from lib.store import Store
from lib.store import history as hs


def request_for(sample: EvalSample, instrument: Instrument, model: str, endpoint: str,
                seed: int | None) -> JudgeRequest | None:
    """The request score_sample sends for a sample (None: nothing to judge)."""
    return build_request(sample, instrument, model, normalise(endpoint), seed)[0]


def _distinct(requests: Iterable[JudgeRequest | None]) -> list[JudgeRequest]:
    return list({r.key: r for r in requests if r is not None}.values())


def ablation_requests(store: Store, spec: AblationSpec) -> list[JudgeRequest]:
    """The distinct requests an ablation with a model judge will send (its stored judgings left out)."""
    from lib.diagnosis.ablation import BASELINE, CHUNK, CONTROL
    from lib.diagnosis.ablation import plan as make_plan

    plan = make_plan(store, spec)
    probe = set(plan.probe_ids)
    first_look = {s.sample_id for s in plan.samples[:CHUNK]}
    out = []
    for m, arm, rep, s in plan.units(store.ablation_done_keys(spec.ablation_id)):
        if rep > 0 and not (arm == BASELINE and s.sample_id in probe):
            continue   # asked live only if the probe shows that repeats differ
        if spec.sequential and arm == CONTROL and s.sample_id not in first_look:
            continue   # the positive control stops once its rise shows, at the first look; the rest is asked live
        if exclusion_reason(s, m):
            continue
        out.append(request_for(plan.arm_sample(s, m, arm), plan.instruments[m], spec.judge, spec.endpoint,
                               spec.seed + rep))
    return _distinct(out)


def rejudge_requests(store: Store, spec: RejudgeSpec) -> list[JudgeRequest]:
    """The distinct requests a re-judge will send (runs the series already holds left out)."""
    done = hs.series_done_runs(store, spec.series_id)
    out = []
    for rid in spec.run_ids:
        if rid in done:
            continue
        for s in store.samples(rid, spec.suite):
            if not exclusion_reason(s, spec.metric):
                out.append(request_for(s, spec.instrument, spec.judge, spec.endpoint, spec.seed))
    return _distinct(out)
