"""What launching judge work will cost, counted before any call: judgings, calls, cache hits, prompt tokens.

One estimator for every launcher (an ablation here, a re-judge in
lib.diagnosis.rejudge): each judging becomes the request the judge would send, keyed as
the judge's call cache keys it (model, normalised endpoint, messages, seed), so
a reply the cache holds, or an identical request made earlier in the same
work, is counted as answered, not called. Prompt tokens are estimated from the
usage the store recorded for this judge's earlier calls (tokens per character
of their prompts), else at about CHARS_PER_TOKEN characters a token.

`calls` is an upper bound on the requests the job can send: the requests
themselves, the repairs its unreadable replies may be asked again with (at
most lib.judging.harness.repair_allowance of its judgings, and never more than
its requests), and, for an endpoint whose output form is not known yet, the
requests it may refuse while it is found (lib.judging.structured). A reply is
never asked again identically (lib.judging.harness), so nothing else is sent
(a retried timeout or 429 is an attempt of the same request).

A paid judge (any judge not offline) needs one confirmation before launch,
unless its calls fit the operator's budget (EVALDRIFT_CALL_BUDGET):
`needs_confirmation`. An external scorer's model calls are its own: they are
not counted here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lib.core.calls import JudgeRequest, Message
from lib.core.degenerate import exclusion_reason
from lib.core.endpoints import OFFLINE, normalise
from lib.core.metrics import get_metric
from lib.core.prompts import SYSTEM_MESSAGE, build_prompt
from lib.judging.harness import repair_allowance
from lib.judging.structured import BOOK
from lib.store import history as hs

if TYPE_CHECKING:
    from lib.diagnosis.ablation import AblationSpec
    from lib.store import Store

CHARS_PER_TOKEN = 4    # the fallback rate when the store holds no usage of the judge
USAGE_SAMPLE = 500     # recorded calls read to learn the judge's tokens per character


def judge_request(model: str, endpoint: str, prompt: str, seed: int | None) -> JudgeRequest:
    """The request a judge sends for a prompt, keyed as its call cache keys it (the normalised endpoint)."""
    return JudgeRequest(model, (Message("system", SYSTEM_MESSAGE), Message("user", prompt)), 0.0, seed,
                        endpoint="" if endpoint == OFFLINE else normalise(endpoint))


def _chars(request: JudgeRequest) -> int:
    return sum(len(m.content) for m in request.messages)


@dataclass(frozen=True)
class Calls:
    """The requests left, read against the call cache."""

    from_cache: int        # answered by a held reply, or by an identical request earlier in the same work
    calls: int
    prompt_tokens: int
    rate_source: str       # how the tokens were estimated, in words


def tokens_per_char(store: Store, model: str, endpoint: str) -> tuple[float, str]:
    """This judge's prompt tokens per character, from the usage its recorded calls stored."""
    target = "" if endpoint == OFFLINE else normalise(endpoint)
    chars = tokens = n = 0
    for request, used in hs.recorded_usage(store, model, USAGE_SAMPLE):
        try:
            body = json.loads(request)
        except ValueError:
            continue
        if body.get("endpoint", "") != target:
            continue
        chars += sum(len(str(content)) for _, content in body.get("messages", []))
        tokens += int(used)
        n += 1
    if chars and tokens:
        return tokens / chars, f"(from the usage of {n} recorded calls of this judge)"
    return 1 / CHARS_PER_TOKEN, f"(at about {CHARS_PER_TOKEN} characters a token: no usage of this judge recorded)"


def calls_left(store: Store, requests: Sequence[JudgeRequest], *, model: str, endpoint: str) -> Calls:
    """Count the calls these requests need: the cache's hits and repeated requests are answered without one."""
    by_key = {r.key: _chars(r) for r in requests}
    hits = hs.cached_keys(store, list(by_key))
    left = {k: n for k, n in by_key.items() if k not in hits}
    rate, source = tokens_per_char(store, model, endpoint) if left else (0.0, "")
    return Calls(len(requests) - len(left), len(left), round(sum(left.values()) * rate), source)


# -- an ablation ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AblationCost:
    """What launching an ablation will cost.

    The judgings the spec asks for add up: `stored` (already in the store),
    `not_rejudged` (arms whose prompts equal the baseline's), `from_cache`,
    `excluded` (degenerate samples: no call) and `calls`. `calls` assumes
    every repeat runs; `calls_if_identical` is what is left when the first
    samples repeat identically and the rest are judged once (lib.diagnosis.ablation._plan).
    """

    judgings: int
    stored: int
    not_rejudged: int
    from_cache: int
    excluded: int
    calls: int
    calls_if_identical: int
    prompt_tokens: int
    paid: bool
    scorer: bool = False
    rate_source: str = ""
    done: bool = False            # the ablation is stored done: launching it reads the result, no call
    requests: int | None = None   # of `calls`: the requests themselves (None: all of them)
    repairs: int = 0              # of `calls`: repairs of unreadable replies the job may ask
    probes: int = 0               # of `calls`: refusals finding the endpoint's output form
    control: int = 0              # of `judgings`: the positive control's (the items given perfect support)
    swapped: int = 0              # of `judgings`: the swap arms' (a field taken from another sample)

    @property
    def arms_note(self) -> str:
        """' Of them, 80 give the items perfect support (the positive control) ...' ('' when neither is planned)."""
        parts = [f"{self.control} give the items perfect support (the positive control)" if self.control else "",
                 f"{self.swapped} swap a field with another sample's" if self.swapped else ""]
        said = " and ".join(p for p in parts if p)
        return f" Of the judgings, {said}." if said else ""

    @property
    def sentence(self) -> str:
        return self._sentence + ("" if self.done else self.arms_note)

    @property
    def _sentence(self) -> str:
        if self.done:
            return (f"{self.judgings} judgings, already made: this ablation is done and its result is read from the "
                    f"store, with no call to the judge.")
        if self.scorer:
            return (f"{self.judgings} scorings by the external scorer ({self.calls} left, {self.stored} already "
                    f"stored); its model calls are its own and not counted here.")
        head = f"{self.judgings} judgings: "
        rest = (f"{self.from_cache} answered from the call cache, {self.not_rejudged} not re-judged (prompt "
                f"unchanged), {self.stored} already stored, {self.excluded} excluded (nothing to judge).")
        if self.calls == 0:
            return head + "no call to the judge needed; " + rest
        where = (" (offline judge, no API cost)" if not self.paid else
                 f", about {self.prompt_tokens:,} prompt tokens {self.rate_source}" if self.rate_source else "")
        fewer = (f"; {self.calls_if_identical} calls if the judge repeats itself exactly (repeats then stop)"
                 if self.calls_if_identical < self.calls else "")
        extra = [f"up to {self.repairs} to repair unreadable replies" if self.repairs else "",
                 f"up to {self.probes} the server may refuse while its output form is found" if self.probes else ""]
        parts = "; ".join(x for x in extra if x)
        of = f" ({self.requests} requests; {parts})" if parts else ""
        return head + f"at most {self.calls} calls to the judge{of}{where}{fewer}. " + rest[0].upper() + rest[1:]


def needs_confirmation(cost: AblationCost, budget: int | None) -> bool:
    """A paid launch that makes calls needs one confirmation, unless its calls fit the operator's budget."""
    if not cost.paid or cost.calls == 0:
        return False
    return budget is None or cost.calls > budget


def estimate_ablation(store: Store, spec: AblationSpec, *, cacheable: bool) -> AblationCost:
    """Count an ablation's judgings and the calls, cache hits and prompt tokens left, before any call.

    Args:
        store: the run store (its call cache and stored results are read, nothing is written).
        spec: the ablation.
        cacheable: whether the judge keeps its replies in the call cache (a model: yes; offline: no).
    """
    from lib.diagnosis.ablation import BASELINE, blanked_fields, is_swap
    from lib.diagnosis.ablation import plan as make_plan

    plan = make_plan(store, spec)
    per_sample = spec.repeats * len(plan.samples)   # judgings of one arm of one metric
    control = sum(per_sample for m in spec.metrics if plan.judged_control(m))
    swapped = sum(per_sample for m in spec.metrics for a in plan.arms_for(m)
                  if is_swap(a) and (m, a) not in plan.unchanged)
    row = store.ablation(spec.ablation_id)
    if row and row["status"] == "done" and row["result"]:   # launching it reads the stored result (run_ablation)
        paid = spec.scorer is None and spec.endpoint != OFFLINE
        stored = len(store.ablation_done_keys(spec.ablation_id))   # the judgings it made, not the arms it skipped
        return AblationCost(plan.planned, stored, 0, 0, 0, 0, 0, 0, paid, scorer=spec.scorer is not None,
                            done=True)
    probe = set(plan.probe_ids)
    done = store.ablation_done_keys(spec.ablation_id)
    units = plan.units(done)
    paid = spec.scorer is None and spec.endpoint != OFFLINE   # an external scorer's calls are its own
    if spec.scorer is not None:
        return AblationCost(plan.planned, len(done), 0, 0, 0, len(units), len(units), 0, paid, scorer=True,
                            control=control, swapped=swapped)
    requests: list[JudgeRequest] = []
    left = cheap = excluded = 0   # judgings to make; of them, those made when repeats stop; no call needed
    for m, arm, rep, s in units:
        # excluded before a call: a degenerate sample, or an arm that blanks what the metric's items come from
        if exclusion_reason(s, m) or get_metric(m).items_from in blanked_fields(arm):
            excluded += 1
            continue
        if cacheable:   # a request to key against the cache (an uncached judge calls for every judging)
            inst = plan.instruments[m]
            prompt, _ = build_prompt(inst.template, m, plan.arm_sample(s, m, arm), inst.binding)
            requests.append(judge_request(spec.judge, spec.endpoint, prompt, spec.seed + rep))
        left += 1
        cheap += rep == 0 or (arm == BASELINE and s.sample_id in probe)
    if not cacheable:
        return AblationCost(plan.planned, len(done), plan.not_rejudged, 0, excluded, left,
                            cheap if plan.probes else left, 0, paid, control=control, swapped=swapped)
    calls = calls_left(store, requests, model=spec.judge, endpoint=spec.endpoint)
    if_identical = min(calls.calls, cheap) if plan.probes else calls.calls
    repairs = min(repair_allowance(left), calls.calls)   # a repair follows a request made by this job
    probes = BOOK.probes_left(normalise(spec.endpoint), spec.judge) if calls.calls and paid else 0
    return AblationCost(plan.planned, len(done), plan.not_rejudged, calls.from_cache, excluded,
                        calls.calls + repairs + probes, if_identical, calls.prompt_tokens, paid,
                        rate_source=calls.rate_source, requests=calls.calls, repairs=repairs, probes=probes,
                        control=control, swapped=swapped)
