"""A judge's optional abilities are typed protocols (lib/judging/base.py), asked for with isinstance: what each
kind of judge reports, and what a judge wrapped in a breaker shows the harness."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from lib.core.calls import JudgeReply, JudgeRequest, Message, Usage
from lib.core.errors import JudgeError
from lib.jobs.job_log import JudgeInfo, judge_info
from lib.judging import OfflineJudge
from lib.judging.base import HasEndpoint, Judge, judge_endpoint, judge_stop
from lib.judging.breaker import Breaker, GuardedJudge, Limits
from lib.judging.pacing import PacingReport
from lib.judging.scoring import output_mode

REPORT = PacingReport(ceiling=8, peak=4, final=2, calls=40, fastest=0.1, median=0.4)


@dataclass
class Bare:
    """A judge with none of the optional abilities."""

    model: str = "bare"
    concurrency: int = 3
    cacheable: bool = True
    calls: int = 0

    def complete(self, request: JudgeRequest) -> JudgeReply:
        self.calls += 1
        return JudgeReply('{"verdicts": []}', Usage(1, 1))


@dataclass
class Reports(Bare):
    output_mode: str | None = "json_schema"
    endpoint: str = "http://127.0.0.1:9/v1"
    stopped: list[str] = field(default_factory=list)

    @property
    def pacing(self) -> PacingReport:
        return REPORT

    def stop(self, reason: str = "the job was stopped") -> None:
        self.stopped.append(reason)


@dataclass
class JsonOnly(Bare):
    json_mode: bool = True


@pytest.mark.parametrize(("judge", "mode"), [
    (Reports(output_mode="json_schema"), "json_schema"),   # the mode it reports
    (Reports(output_mode=None), None),                     # a reporting judge before any call: not guessed
    (JsonOnly(json_mode=True), "json_object"),             # no report: what it asked for
    (JsonOnly(json_mode=False), "text"),
    (Bare(), None),                                        # no ability: nothing
    (OfflineJudge(), None),
])
def test_the_output_mode_recorded_with_a_score(judge: Judge, mode: str | None) -> None:
    assert output_mode(judge) == mode


@pytest.mark.parametrize(("judge", "info"), [
    (Reports(), JudgeInfo("json_schema", REPORT)),
    (Reports(output_mode=None), JudgeInfo(None, REPORT)),
    (JsonOnly(), JudgeInfo(None, None)),
    (Bare(), JudgeInfo(None, None)),
])
def test_what_a_job_note_keeps_of_its_judge(judge: Judge, info: JudgeInfo) -> None:
    assert judge_info(judge) == info


@pytest.mark.parametrize(("judge", "endpoint"), [
    (Reports(endpoint="http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1"),
    (OfflineJudge(), "offline"),
    (Bare(), ""),
])
def test_a_judges_endpoint_identity(judge: Judge, endpoint: str) -> None:
    assert judge_endpoint(judge) == endpoint


def test_a_tripped_breaker_stops_a_judge_that_can_stop_and_only_that() -> None:
    able = Reports()
    breaker = Breaker(Limits(1, None), lambda: 10, on_trip=judge_stop(able))
    breaker.record(False, "rate limited (429)")
    assert able.stopped == ["stopped after 1 judge calls failed in a row (the last: rate limited (429))"]
    assert judge_stop(Bare()) is None


@pytest.mark.parametrize("judge", [Reports(), Bare(), OfflineJudge()])
def test_a_guarded_judge_is_its_judge_to_the_harness(judge: Judge) -> None:
    """The same model, width, cacheability and endpoint: the cache keys a guarded run writes are the judge's."""
    guarded = GuardedJudge(judge, Breaker(Limits(1, None), lambda: 10))
    assert isinstance(guarded, Judge)
    assert (guarded.model, guarded.concurrency, guarded.cacheable, judge_endpoint(guarded)) == (
        judge.model, judge.concurrency, judge.cacheable, judge_endpoint(judge))
    assert isinstance(guarded, HasEndpoint)


def test_a_guarded_judge_makes_no_call_once_its_breaker_trips() -> None:
    judge = Bare()
    breaker = Breaker(Limits(1, None), lambda: 10)
    guarded = GuardedJudge(judge, breaker)
    request = JudgeRequest(model="bare", messages=(Message("user", "hi"),))
    guarded.complete(request)
    breaker.trip("stopped by the operator")
    with pytest.raises(JudgeError, match="stopped by the operator"):
        guarded.complete(request)
    assert judge.calls == 1
