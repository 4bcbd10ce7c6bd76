"""Cost before launch: the estimate counts what the ablation then does, and a paid launch is confirmed once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lib.core import settings
from lib.core.errors import InputError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED
from lib.diagnosis import cost
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.diagnosis.ablation._plan import probe_size
from lib.diagnosis.cost import AblationCost, estimate_ablation, needs_confirmation
from lib.judging.harness import repair_allowance
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from tests.conftest import offline_responder
from tests.support import synthetic_runs as syn
from tests.support.openai_server import OpenAIServer
from tests.test_ablation_economy import noisy_responder, reference_only
from tests.test_cli import cli

FAITH = DEFAULT_TEMPLATES["faithfulness"]
MODEL = "judge-model"
N = 40


@pytest.fixture
def db(fresh_db: Path) -> Path:
    with Store(fresh_db) as store:
        syn.record(store, "r1", syn.samples(reference_only, N), "faithfulness", FAITH, PROJECTED, judge_model=MODEL)
    return fresh_db


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(offline_responder) as srv:
        yield srv


def spec(srv: OpenAIServer, blanks: tuple[str, ...] = ("contexts", "question"), repeats: int = 3,
         sequential: bool = True) -> AblationSpec:
    return AblationSpec("r1", ("faithfulness",), blanks, repeats=repeats, judge=MODEL, endpoint=srv.base_url,
                        sequential=sequential)


def judge(srv: OpenAIServer) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=srv.base_url, api_key="sk-test", timeout=10.0, concurrency=4)


def test_the_estimate_is_the_calls_the_ablation_then_makes(db: Path) -> None:
    with OpenAIServer(noisy_responder) as srv, Store(db) as store:   # replies vary: every repeat runs
        before = estimate_ablation(store, spec(srv), cacheable=True)
        run_ablation(store, spec(srv), judge(srv))
        # baseline, contexts and the positive control; question needs none. The control stops once its rise is
        # shown (the first look, 20 samples): the estimate counts it in full, an upper bound
        assert before.requests == 3 * 3 * N and srv.n_calls == 2 * 3 * N + 3 * 20
        assert before.control == 3 * N and "Of the judgings, 120 give the items perfect support" in before.sentence
        # the upper bound adds what the job may also send: repairs of unreadable replies, and the refusals an
        # endpoint not asked before may answer while its output form is found (this one refuses nothing)
        assert before.repairs == repair_allowance(3 * 3 * N) and before.probes == 5
        assert before.calls == before.requests + before.repairs + before.probes >= srv.n_calls
        assert before.not_rejudged == 2 * 3 * N                         # question alone, and with ground_truth
        assert before.judgings == 5 * 3 * N and before.from_cache == before.stored == 0 and before.paid
        assert "no usage of this judge recorded" in before.sentence    # nothing recorded yet: 4 characters a token
        after = estimate_ablation(store, spec(srv), cacheable=True)
    # done: launching it again reads the stored result, and the estimate says so (issue 26: no paid launch offered)
    assert after.done and after.calls == 0 and after.stored == 2 * 3 * N + 3 * 20
    assert "already made" in after.sentence and "no call to the judge" in after.sentence


def test_a_deterministic_judge_makes_the_fewer_calls_the_estimate_names(db: Path, server: OpenAIServer) -> None:
    with Store(db) as store:
        before = estimate_ablation(store, spec(server), cacheable=True)
        run_ablation(store, spec(server), judge(server))
    # the positive control (N more, counted in full) stops at the first look once its rise is shown: 20 judged
    assert before.calls_if_identical == server.n_calls + N - 20 == probe_size(N) * 3 + (N - probe_size(N)) + 2 * N
    assert f"at most {before.calls} calls to the judge (360 requests; up to 72 to repair" in before.sentence
    assert "form is found), about " in before.sentence
    assert f"; {before.calls_if_identical} calls if the judge repeats itself exactly" in before.sentence


def test_what_the_cache_holds_is_counted_and_tokens_come_from_recorded_usage(db: Path, server: OpenAIServer) -> None:
    with Store(db) as store:
        # every sample judged, the positive control too (a sequential one stops it at its first look)
        run_ablation(store, spec(server, ("contexts",), repeats=1, sequential=False), judge(server))
        first_calls = server.n_calls
        # the same baseline requests, with ground_truth blanked instead: the cache answers the baseline
        other = spec(server, ("ground_truth",), repeats=1, sequential=False)
        est = estimate_ablation(store, other, cacheable=True)
    assert first_calls == 3 * N   # the baseline, contexts and the positive control
    assert est.from_cache == N and est.not_rejudged == 2 * N and est.calls == 0   # gt is not rendered either
    with Store(db) as store:
        est = estimate_ablation(store, spec(server, ("contexts",), repeats=2, sequential=False), cacheable=True)
    assert est.from_cache == 3 * N and est.requests == 3 * N   # repeat 0 is cached; repeat 1 has new seeds
    assert est.probes == 0 and est.calls == est.requests + est.repairs   # the endpoint's output form is known now
    assert "from the usage of" in est.rate_source
    # the server counts a prompt token per word; the calls left ask what the recorded ones asked (new seeds),
    # so the recorded rate (tokens per character) gives back the words the server will count
    words = sum(len(m["content"].split()) for body in server.requests for m in body["messages"])
    assert est.prompt_tokens == pytest.approx(words, rel=0.01)


CONFIRM = [
    # (id, paid, calls, budget, needs confirmation)
    ("the offline judge never asks", False, 500, None, False),
    ("a paid launch with nothing to call", True, 0, None, False),
    ("a paid launch and no budget", True, 1, None, True),
    ("a paid launch within the budget", True, 100, 100, False),
    ("a paid launch over the budget", True, 101, 100, True),
    ("a zero budget confirms every paid call", True, 1, 0, True),
]


@pytest.mark.parametrize(("paid", "calls", "budget", "asks"), [r[1:] for r in CONFIRM], ids=[r[0] for r in CONFIRM])
def test_each_branch_of_the_confirmation_rule(paid: bool, calls: int, budget: int | None, asks: bool) -> None:
    c = AblationCost(judgings=calls, stored=0, not_rejudged=0, from_cache=0, excluded=0, calls=calls,
                     calls_if_identical=calls, prompt_tokens=0, paid=paid)
    assert needs_confirmation(c, budget) is asks


def test_the_budget_setting_is_a_whole_number_of_calls() -> None:
    assert settings.load(environ={"EVALDRIFT_CALL_BUDGET": "250"}).call_budget == 250
    assert settings.load(environ={}).call_budget is None
    for bad in ("lots", "-1", "2.5"):
        with pytest.raises(InputError, match="EVALDRIFT_CALL_BUDGET"):
            settings.load(environ={"EVALDRIFT_CALL_BUDGET": bad})


def test_rejudge_and_ablation_share_one_request_key() -> None:
    a = cost.judge_request(MODEL, "http://127.0.0.1:9/v1/", "prompt", 3)
    b = cost.judge_request(MODEL, "http://127.0.0.1:9/v1", "prompt", 3)
    assert a.key == b.key and cost.judge_request("offline-lexical-v2", "offline", "p", 0).endpoint == ""


# -- the CLI: the cost first; a paid judge's calls only with --yes or within the budget ------------------------

CLI_CALLS = 240 + repair_allowance(240) + 5   # requests, repairs, refusals finding the output form (a new process)


def refused(proc) -> str:
    """Exit 2 with the cost printed first and the refusal as the last line (no traceback)."""
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    cost_line, error = proc.stderr.strip().splitlines()
    assert cost_line.startswith(f"cost: 320 judgings: at most {CLI_CALLS} calls to the judge (240 requests; up to "
                                f"48 to repair unreadable replies; up to 5 the server may refuse while its output "
                                f"form is found)") and error.startswith("error: ")
    return error


def ablate_cli(db: Path, *extra: str) -> list[str]:
    return ["ablate", "--db", str(db), "--run", "r1", "--metric", "faithfulness", "--blank", "contexts",
            "--repeats", "2", "--json", *extra]


def test_a_paid_ablation_without_yes_prints_the_cost_and_makes_no_call(db: Path, server: OpenAIServer,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    line = refused(cli(*ablate_cli(db)))
    assert f"up to {CLI_CALLS} calls to a paid judge" in line and "--yes" in line and "EVALDRIFT_CALL_BUDGET" in line
    assert server.n_calls == 0
    monkeypatch.setenv("EVALDRIFT_CALL_BUDGET", str(CLI_CALLS - 1))
    assert f"(EVALDRIFT_CALL_BUDGET is {CLI_CALLS - 1})" in refused(cli(*ablate_cli(db)))
    assert server.n_calls == 0
    monkeypatch.setenv("EVALDRIFT_CALL_BUDGET", str(CLI_CALLS))
    proc = cli(*ablate_cli(db))
    assert proc.returncode in (0, 1, 3), proc.stderr
    probe = probe_size(N)
    # the offline model repeats itself: repeats stop after the probe; the positive control stops at the first look
    deterministic = probe * 2 + (N - probe) + N + 20
    assert f"cost: 320 judgings: at most {CLI_CALLS} calls to the judge" in proc.stderr
    assert server.n_calls == deterministic


def test_yes_launches_a_paid_ablation(db: Path, server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    proc = cli(*ablate_cli(db, "--yes"))
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert server.n_calls == probe_size(N) * 2 + (N - probe_size(N)) + N + 20   # the control: its first look


def test_the_offline_judge_launches_without_asking(db: Path) -> None:
    proc = cli(*ablate_cli(db, "--judge", "offline"))
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert "offline judge, no API cost" in proc.stderr


# -- the Ablation page: the cost before launch, and one confirmation for a paid judge --------------------------

def open_page(monkeypatch: pytest.MonkeyPatch, db: Path, srv: OpenAIServer, **env: str):
    from streamlit.testing.v1 import AppTest

    for name, value in {"EVALDRIFT_DB": str(db), "OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "sk-test",
                        "EVALDRIFT_JUDGE_MODEL": MODEL, **env}.items():
        monkeypatch.setenv(name, value)
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.run()
    at.multiselect(key="abl_blanks").set_value(["contexts"]).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page_spec(srv: OpenAIServer) -> AblationSpec:
    return AblationSpec("r1", ("faithfulness",), ("contexts",), repeats=3, judge=MODEL,   # the page's default repeats
                        endpoint=srv.base_url)


def test_the_page_asks_once_before_a_paid_judge_s_calls(db: Path, server: OpenAIServer,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(monkeypatch, db, server)
    spec = page_spec(server)
    with Store(db) as store:
        expected = estimate_ablation(store, spec, cacheable=True)
    assert any(c.value.startswith("Before launch: ") and f"at most {expected.calls} calls to the judge" in c.value
               for c in at.caption)
    confirm = at.checkbox(key=f"abl_confirm_{spec.ablation_id}")
    assert confirm.label == f"Launch up to {expected.calls} calls to the paid judge {MODEL}"
    assert at.button(key="abl_launch").disabled and server.n_calls == 0
    confirm.check().run()
    assert not at.button(key="abl_launch").disabled
    at.button(key="abl_launch").click().run()
    assert not at.exception, [e.value for e in at.exception]
    from lib.app import ui

    store = ui.open_store(str(db))
    row = None
    for _ in range(300):
        row = store.ablation(spec.ablation_id)
        if row and row["status"] in ("done", "failed"):
            break
        __import__("time").sleep(0.2)
    assert row is not None and row["status"] == "done" and 0 < server.n_calls <= expected.calls


def test_within_the_budget_the_page_launches_without_asking(db: Path, server: OpenAIServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    spec = page_spec(server)
    with Store(db) as store:
        calls = estimate_ablation(store, spec, cacheable=True).calls
    at = open_page(monkeypatch, db, server, EVALDRIFT_CALL_BUDGET=str(calls))
    assert not [c for c in at.checkbox if c.key.startswith("abl_confirm_")]
    assert not at.button(key="abl_launch").disabled
    at = open_page(monkeypatch, db, server, EVALDRIFT_CALL_BUDGET=str(calls - 1))
    assert at.button(key="abl_launch").disabled and at.checkbox(key=f"abl_confirm_{spec.ablation_id}")
