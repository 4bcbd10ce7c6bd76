"""Judge calls an ablation does not need: arms whose prompts do not change, repeats of a deterministic judge.

Every case runs the real OpenAI SDK against a loopback server whose model is
the offline judge, and counts the calls the server received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from lib.core.calls import JudgeRequest, Message
from lib.core.prompts import DEFAULT_TEMPLATES
from lib.core.samples import EvalSample
from lib.diagnosis.ablation import LEAK, AblationResult, AblationSpec, per_sample_deltas, run_ablation
from lib.diagnosis.ablation._plan import MIN_PROBED, PROBE, identical_repeats, probe_size
from lib.diagnosis.ablation._verdicts import CLEAN, MEASURED, UNCHANGED
from lib.judging import OfflineJudge
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from tests.conftest import offline_responder
from tests.support import synthetic_runs as syn
from tests.support.openai_server import OpenAIServer
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, PROJECTED, REPLAY

FAITH = DEFAULT_TEMPLATES["faithfulness"]
MODEL = "judge-model"


def reference_only(i: int, f: syn.Facts) -> EvalSample:
    """The answer's second fact is stated by the reference, not by the passages."""
    return EvalSample(f"s{i:03d}", f.question, f"{f.fact1} {f.fact2}", (f.fact1, f.filler), f"{f.fact1} {f.fact2}")


def noisy_responder(body: dict) -> str:
    """A judge whose verdicts change with the request seed, as a sampling model's do."""
    judge = OfflineJudge(noise=0.2)
    request = JudgeRequest(judge.model, tuple(Message(m["role"], m["content"]) for m in body["messages"]), 0.0,
                           body.get("seed"))
    return judge.complete(request).text


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(offline_responder) as srv:
        yield srv


def ablate(db: Path, srv: OpenAIServer, blanks: tuple[str, ...], *, n: int, template: str = FAITH,
           binding: str = PROJECTED, repeats: int = 2) -> AblationResult:
    with Store(db) as store:
        syn.record(store, "r1", syn.samples(reference_only, n), "faithfulness", template, binding, judge_model=MODEL)
        # every sample judged: these count the calls the two economies save on their own (the sequential
        # ablation's stops are tests/test_sequential_ablation.py's)
        spec = AblationSpec("r1", ("faithfulness",), blanks, repeats=repeats, judge=MODEL, endpoint=srv.base_url,
                            sequential=False)
        judge = OpenAIJudge(MODEL, base_url=srv.base_url, api_key="sk-test", timeout=10.0, concurrency=4)
        result = run_ablation(store, spec, judge)
    assert result is not None
    return result


def cells(result: AblationResult) -> dict[str, tuple[str, str]]:
    return {v.arm: (v.kind, v.why) for v in result.verdicts}


# -- arms that need no call ---------------------------------------------------------------------------------

def test_an_arm_the_template_does_not_render_costs_no_call(fresh_db: Path, server: OpenAIServer) -> None:
    # the projected faithfulness template renders answer and contexts: blanking question changes no prompt
    result = ablate(fresh_db, server, ("question",), n=20)
    assert cells(result) == {"question": (CLEAN, UNCHANGED), "question+ground_truth": (CLEAN, UNCHANGED)}
    baseline = probe_size(20) * 2 + (20 - probe_size(20))   # repeats stop after the probe: the rest once
    assert server.n_calls == baseline                    # the baseline, nothing else
    assert result.calls == baseline and result.cached == 0 and result.judgings == baseline
    assert result.not_rejudged == 2 * 2 * 20 and result.planned == 3 * 2 * 20
    assert "80 judgings not re-judged (prompt unchanged)" in result.accounting
    assert all("prompt unchanged: not re-judged" in v.sentence for v in result.verdicts)
    with Store(fresh_db) as store:   # no per-sample changes to show for an arm never judged
        deltas = per_sample_deltas(store, result.ablation_id, "faithfulness", "question")
    assert deltas.empty and list(deltas.columns) == ["sample_id", "baseline", "ablated", "delta"]


def test_only_the_arms_whose_prompts_change_are_judged(fresh_db: Path, server: OpenAIServer) -> None:
    # a replayed template that renders the reference: blanking it (alone or with question) changes the prompt
    result = ablate(fresh_db, server, ("question", "ground_truth"), n=20, template=LEAKY_FAITHFULNESS,
                    binding=REPLAY)
    assert cells(result) == {"question": (CLEAN, UNCHANGED), "ground_truth": (LEAK, MEASURED),
                             "question+ground_truth": (LEAK, MEASURED)}
    # baseline, ground_truth, the joint arm; the last asks what the ground_truth arm asked (question is not
    # rendered), so the call cache answers it
    # (the judge repeats itself: the probe's repeats stopped the rest, so each arm is judged once past it)
    # and the judge's floor (question, contexts and ground_truth blanked: a new prompt here), judged once too,
    # and the positive control beside it
    baseline = probe_size(20) * 2 + (20 - probe_size(20))
    assert server.n_calls + result.cached == baseline + 4 * 20 and result.cached >= 20 - 4
    assert result.judgings == baseline + 4 * 20 and result.calls == server.n_calls
    assert result.not_rejudged == 2 * 20
    assert ("Not re-judged (prompt unchanged, nothing measured): faithfulness with question blanked."
            in result.summary)


# -- repeats of a deterministic judge ------------------------------------------------------------------------

def test_a_deterministic_judge_is_repeated_only_on_the_probe(fresh_db: Path, server: OpenAIServer) -> None:
    n, repeats = 50, 3
    result = ablate(fresh_db, server, ("contexts",), n=n, repeats=repeats)
    probe = probe_size(n)
    assert probe == 13                                   # a quarter of the samples, at most PROBE
    probe_calls = probe * repeats + (n - probe)          # the baseline: the probe in every repeat, the rest once
    assert server.n_calls == probe_calls + 2 * n         # the contexts arm and the positive control: once each
    assert result.probe == probe and result.calls == server.n_calls
    assert result.repeats_skipped == 3 * repeats * n - server.n_calls
    assert "Repeats stopped: the judge gave identical verdicts in all 3 repeats of the first 13 samples" in \
        result.summary
    [v] = [v for v in result.verdicts if v.arm == "contexts"]
    assert v.noise == 0.0 and "repeats stopped" in v.sentence and v.n == n


def test_a_judge_whose_replies_vary_is_repeated_in_full(fresh_db: Path) -> None:
    n, repeats = 50, 3
    with OpenAIServer(noisy_responder) as srv:
        result = ablate(fresh_db, srv, ("contexts",), n=n, repeats=repeats)
        assert srv.n_calls == 3 * repeats * n   # the baseline, contexts and the positive control
    assert result.probe == 0 and result.repeats_skipped == 0 and "Repeats stopped" not in result.summary


# -- the rule that stops repeats, one row per branch ---------------------------------------------------------

def frame(rows: list[tuple[str, int, str, float | None, list[bool]]]) -> pd.DataFrame:
    return pd.DataFrame([{"metric": "faithfulness", "arm": "none", "rep": rep, "sample_id": sid, "status": status,
                          "score": score, "verdicts": json.dumps([{"label": x} for x in labels])}
                         for sid, rep, status, score, labels in rows])


def probe_rows(n: int = PROBE, *, vary: str | None = None, status: dict[str, str] | None = None,
               repeats: int = 3) -> pd.DataFrame:
    rows = []
    for i in range(n):
        sid = f"s{i:03d}"
        for rep in range(repeats):
            st = (status or {}).get(sid, "ok")
            labels = [True, rep == 1 if sid == vary else True]
            score = sum(labels) / 2 if st == "ok" else None
            rows.append((sid, rep, st, score, labels if st == "ok" else []))
    return frame(rows)


IDS = tuple(f"s{i:03d}" for i in range(PROBE))
RULE = [
    ("identical in every repeat", probe_rows(), 3, True),
    ("one item of one sample differs in one repeat", probe_rows(vary="s007"), 3, False),
    ("a failure in the probe says nothing", probe_rows(status={"s003": "failed"}), 3, False),
    ("excluded samples are skipped", probe_rows(status={f"s{i:03d}": "excluded" for i in range(PROBE - MIN_PROBED)}),
     3, True),
    ("too few judged samples", probe_rows(status={f"s{i:03d}": "excluded" for i in range(PROBE - MIN_PROBED + 1)}),
     3, False),
    ("the probe not finished", probe_rows(PROBE - 1), 3, False),
    ("one repeat: nothing to compare", probe_rows(repeats=1), 1, False),
]


@pytest.mark.parametrize(("rows", "repeats", "stops"), [r[1:] for r in RULE], ids=[r[0] for r in RULE])
def test_each_branch_of_the_rule_that_stops_repeats(rows: pd.DataFrame, repeats: int, stops: bool) -> None:
    assert identical_repeats(rows, ("faithfulness",), IDS, repeats) is stops
