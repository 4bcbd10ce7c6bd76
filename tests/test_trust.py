"""Where the key goes and what code runs are the operator's settings, never a stored spec, a database or a URL.

Two loopback OpenAI-compatible servers: A is the judge this server's operator
configured (OPENAI_BASE_URL, with OPENAI_API_KEY), B is where a stored
ablation spec says it was judged. Resume, Retry, a crafted database row and a
crafted URL never send a request (and so never the key) to B; a move to A
happens only after the user confirms it. An external scorer runs only when
EVALDRIFT_SCORERS names it. The call cache and the ablation id tell endpoints
apart, and credentials in OPENAI_BASE_URL are shown nowhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.app import trust
from lib.core.endpoints import normalise, redact
from lib.core.errors import InputError, TrustError
from lib.core.settings import load
from lib.diagnosis.ablation import AblationSpec, run_ablation
from lib.jobs import JobRunner
from lib.jobs._demo import run_plans
from lib.judging.openai_judge import OpenAIJudge
from lib.store import Store
from tests.conftest import offline_responder, small_demo
from tests.support.cli import run_cli
from tests.support.openai_server import Fault, OpenAIServer
from tests.support.polling import wait_for

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"
MODEL = "evaldrift-test-model"
MARKER = "sk-MARKER-trust"
SECRET = "s3cr3t-in-url"
WAIT = 60.0
NIGHTS = 2


@pytest.fixture
def server_a() -> Iterator[OpenAIServer]:
    with OpenAIServer(offline_responder) as srv:
        yield srv


@pytest.fixture
def server_b() -> Iterator[OpenAIServer]:
    with OpenAIServer(offline_responder) as srv:
        yield srv


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A private copy of the demo's first nights (small_demo): where a call goes does not depend on the history's
    length, and the Ablation page's first run on them costs a third of its first run on the whole demo."""
    return small_demo(NIGHTS, tmp_path / "team.duckdb")


@pytest.fixture(scope="module")
def night() -> str:
    """The run every test ablates: the last of the demo's first nights (the same in every test's copy `db`)."""
    return run_plans(NIGHTS)[-1].run_id


@pytest.fixture
def served_by_a(db: Path, server_a: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The dashboard's settings: database `db`, the model judge on A with the operator's key."""
    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    monkeypatch.setenv("OPENAI_BASE_URL", server_a.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", MARKER)
    monkeypatch.setenv("EVALDRIFT_JUDGE_MODEL", MODEL)
    return db


def b_spec(run_id: str, server_b: OpenAIServer, **kw: object) -> AblationSpec:
    return AblationSpec(run_id, ("faithfulness",), ("ground_truth",), repeats=1, limit=20, judge=MODEL,
                        endpoint=server_b.base_url, **kw)  # type: ignore[arg-type]


def leave(db: Path, spec: AblationSpec, status: str, *, ablation_id: str | None = None,
          spec_dict: dict | None = None) -> str:
    """An ablation row as a process that died (status 'running') or failed ('failed') left it."""
    aid = ablation_id or spec.ablation_id
    with Store(db) as store:
        store.start_ablation(aid, spec.run_id, spec.suite, spec_dict or spec.to_dict(), spec.judge, 40)
        if status != "running":
            store.finish_ablation(aid, status, None)
    return aid


def open_ablation(**params: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def plain(elements) -> list[str]:
    """Element texts without the Markdown escapes the pages add to untrusted text (and the word joiners that keep
    a URL from being linked: lib.presentation.report.md_escape)."""
    return [re.sub(r"\\(.)", r"\1", e.value).replace("\u2060", "") for e in elements]


def buttons(at: AppTest) -> set[str]:
    return {b.key for b in at.button if b.key}


def wait_done(db_path: Path, ablation_id: str) -> str:
    """Status of the ablation once the worker (in this process, through the dashboard's runner) ends it."""
    from lib.app import ui

    store = ui.open_store(str(db_path))

    def status() -> str | None:
        row = store.ablation(ablation_id)
        return str(row["status"]) if row is not None and row["status"] in ("done", "failed") else None

    ended = wait_for(status, timeout=WAIT, pause=0.2)
    assert ended, f"ablation {ablation_id} did not finish in {WAIT:.0f} s"
    return ended


def authorizations(srv: OpenAIServer) -> set[str | None]:
    return {{k.lower(): v for k, v in h.items()}.get("authorization") for h in srv.headers_seen}


# -- the rule, one row per branch ---------------------------------------------------------------------------
A_URL = "http://127.0.0.1:9001/v1"
B_URL = "http://127.0.0.1:9002/v1"


@pytest.mark.parametrize(("spec_kw", "settings_env", "action", "endpoint_run"), [
    ({"scorer": "tests.support.scorers:constant"}, {"EVALDRIFT_SCORERS": "tests.support.scorers:constant"},
     trust.RUN, "offline"),
    ({"scorer": "builtins:print"}, {"EVALDRIFT_SCORERS": "tests.support.scorers:constant"}, trust.REFUSE, None),
    ({"scorer": "builtins:print"}, {}, trust.REFUSE, None),
    ({}, {}, trust.RUN, "offline"),                                                     # the offline judge
    ({"judge": MODEL, "endpoint": "offline"}, {}, trust.REFUSE, None),                  # no such offline judge
    ({"judge": MODEL, "endpoint": A_URL}, {"OPENAI_BASE_URL": A_URL}, trust.RUN, A_URL),
    ({"judge": MODEL, "endpoint": "HTTP://u:p@127.0.0.1:9001/v1/"}, {"OPENAI_BASE_URL": A_URL}, trust.RUN, A_URL),
    ({"judge": MODEL, "endpoint": B_URL}, {"OPENAI_BASE_URL": A_URL}, trust.CONFIRM, A_URL),
    ({"judge": MODEL, "endpoint": B_URL}, {}, trust.CONFIRM, "https://api.openai.com/v1"),
])
def test_a_stored_spec_runs_as_recorded_moves_after_confirmation_or_is_refused(
        spec_kw: dict, settings_env: dict, action: str, endpoint_run: str | None) -> None:
    spec = AblationSpec("r1", ("faithfulness",), ("ground_truth",), **spec_kw)
    settings = load(environ=settings_env)
    review = trust.review_spec(spec, settings)
    assert review.action == action
    if action == trust.REFUSE:
        assert review.spec is None and review.sentence
        with pytest.raises(TrustError):
            trust.server_judge(spec, settings)
        return
    assert review.spec is not None and review.spec.endpoint == endpoint_run
    if action == trust.CONFIRM:
        assert B_URL in review.sentence and endpoint_run in review.sentence
        assert review.spec.ablation_id != spec.ablation_id     # a new ablation: judgings are never mixed
        with pytest.raises(TrustError):                      # not without the confirmation
            trust.server_judge(spec, settings)
        return
    judge = trust.server_judge(spec, settings)
    if isinstance(judge, OpenAIJudge):
        assert judge.base_url == settings.base_url            # dialled from the settings, not the spec


def test_a_scorer_not_on_the_allow_list_is_refused_by_the_runner_and_never_called(
        db: Path, night: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = AblationSpec(night, ("faithfulness",), ("ground_truth",), repeats=1, limit=20,
                        scorer="builtins:print")
    with Store(db) as store:
        runner = JobRunner(store, lambda s: trust.server_judge(s, load(environ={})))
        runner.submit(spec)
        runner.wait(spec.ablation_id, timeout=WAIT)
        status = runner.status(spec.ablation_id)
        runner.shutdown()
    assert status.state == "failed" and "EVALDRIFT_SCORERS" in status.error
    assert "EvalSample(" not in capsys.readouterr().out        # print was never handed the samples


# -- the page: Resume, Retry, a crafted database, a crafted URL ------------------------------------------------
@pytest.mark.parametrize("how", ["resume", "retry", "crafted database", "crafted url"])
def test_the_key_never_reaches_an_endpoint_the_operator_did_not_configure(
        served_by_a: Path, night: str, server_a: OpenAIServer, server_b: OpenAIServer, how: str) -> None:
    spec = b_spec(night, server_b)
    params: dict[str, str] = {}
    if how == "crafted database":   # a row written by hand: an id of its own, credentials and junk in the spec
        raw = {**spec.to_dict(), "endpoint": server_b.base_url.replace("://", "://mallory:pw@")}
        aid = leave(served_by_a, spec, "running", ablation_id="abl-crafted", spec_dict=raw)
    else:
        aid = leave(served_by_a, spec, "failed" if how == "retry" else "running")
    if how == "crafted url":
        params = {"endpoint": server_b.base_url, "base_url": server_b.base_url, "scorer": "builtins:print",
                  "judge": MODEL}
    key = "abl_retry" if how == "retry" else "abl_resume"

    at = open_ablation(ablation=aid, **params)
    assert key not in buttons(at)                           # no one-click run of the stored endpoint
    warning = next(w for w in plain(at.warning) if "this server's judge is at" in w)
    assert server_b.base_url in warning and server_a.base_url in warning
    assert "mallory" not in " ".join(plain(at.warning))
    at.button(key=f"{key}_here").click().run()
    assert not at.exception, [e.value for e in at.exception]
    moved = at.query_params["ablation"]
    assert moved != aid
    assert wait_done(served_by_a, moved) == "done"

    assert server_b.n_calls == 0 and server_b.headers_seen == []
    assert server_a.n_calls > 0 and authorizations(server_a) == {f"Bearer {MARKER}"}


def test_resume_on_the_configured_endpoint_needs_no_confirmation(
        served_by_a: Path, night: str, server_a: OpenAIServer) -> None:
    spec = AblationSpec(night, ("faithfulness",), ("ground_truth",), repeats=1, limit=20, judge=MODEL,
                        endpoint=server_a.base_url)
    aid = leave(served_by_a, spec, "running")
    at = open_ablation(ablation=aid)
    at.button(key="abl_resume").click().run()
    assert wait_done(served_by_a, aid) == "done"
    assert server_a.n_calls > 0 and authorizations(server_a) == {f"Bearer {MARKER}"}


def test_the_page_refuses_a_stored_scorer_not_on_the_allow_list(
        served_by_a: Path, night: str, capsys: pytest.CaptureFixture[str]) -> None:
    spec = AblationSpec(night, ("faithfulness",), ("ground_truth",), repeats=1, limit=20, scorer="builtins:print")
    aid = leave(served_by_a, spec, "running")
    at = open_ablation(ablation=aid, scorer="builtins:print")
    assert not {"abl_resume", "abl_resume_here"} & buttons(at)
    assert any("EVALDRIFT_SCORERS" in t and "builtins:print" in t for t in plain(at.error))
    assert "EvalSample(" not in capsys.readouterr().out


# -- item 10: the cache and the ablation id know the endpoint ----------------------------------------------------
def test_a_cache_hit_never_crosses_endpoints(db: Path, night: str, server_a: OpenAIServer,
                                             server_b: OpenAIServer) -> None:
    server_b.fail_always(Fault("500"))
    on_a = AblationSpec(night, ("faithfulness",), ("ground_truth",), repeats=1, limit=20, judge=MODEL,
                        endpoint=server_a.base_url)
    on_b = AblationSpec(night, ("faithfulness",), ("ground_truth",), repeats=1, limit=20, judge=MODEL,
                        endpoint=server_b.base_url)
    assert on_a.ablation_id != on_b.ablation_id
    with Store(db) as store:
        first = run_ablation(store, on_a, OpenAIJudge(MODEL, base_url=server_a.base_url, max_attempts=1))
        second = run_ablation(store, on_b, OpenAIJudge(MODEL, base_url=server_b.base_url, max_attempts=1))
    # first's cache hits are its own repeated prompts (an arm that leaves the prompt as it was)
    assert first is not None and first.calls == server_a.n_calls > 0
    assert second is not None
    assert second.cached == 0                       # nothing judged on A is credited to B
    judgings = first.calls + first.cached           # B's failures are never cached: every judging asks B
    assert server_b.n_calls == judgings
    assert sum(second.failures.values()) == judgings     # ... and B's failures are B's


def test_one_server_spelled_two_ways_is_one_identity() -> None:
    plain = AblationSpec("r", ("faithfulness",), ("ground_truth",), judge=MODEL, endpoint="https://h.example/v1")
    spelled = AblationSpec("r", ("faithfulness",), ("ground_truth",), judge=MODEL,
                           endpoint="HTTPS://user:pw@H.example:443/v1/")
    assert plain.ablation_id == spelled.ablation_id
    assert OpenAIJudge(MODEL, base_url="https://user:pw@h.example/v1").endpoint == "https://h.example/v1"


# -- item 11: credentials in OPENAI_BASE_URL are shown nowhere (issue 23 item 10: and refused, never used) -------
def with_credentials(url: str) -> str:
    return url.replace("://", f"://judge-user:{SECRET}@")


def test_credentials_in_the_base_url_are_refused_and_shown_nowhere_in_cli_output_the_store_or_the_pages(
        db: Path, night: str, server_a: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("OPENAI_", "EVALDRIFT_"))}
    env.update(OPENAI_BASE_URL=with_credentials(server_a.base_url), OPENAI_API_KEY=MARKER)
    proc = run_cli("ablate", "--db", db, "--run", night, "--metric", "faithfulness", "--blank", "ground_truth",
                   "--judge", "openai", "--model", MODEL, "--repeats", "1", "--limit", "20", "--yes", env=env)
    assert proc.returncode == 2 and "must not carry credentials" in proc.stderr, proc.stderr
    assert server_a.n_calls == 0                    # refused before any call: never sent as Basic auth
    assert SECRET not in proc.stdout + proc.stderr and "judge-user" not in proc.stdout + proc.stderr
    with Store(db) as store:
        specs = store.cursor().execute("SELECT spec FROM ablations").fetchall()
        cache = store.cursor().execute("SELECT request FROM judge_cache").fetchall()
    assert all(SECRET not in s and "judge-user" not in s for (s,) in specs)
    assert all(SECRET not in r for (r,) in cache)

    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    monkeypatch.setenv("OPENAI_BASE_URL", with_credentials(server_a.base_url))
    monkeypatch.setenv("EVALDRIFT_JUDGE_MODEL", MODEL)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.switch_page("pages/ablation.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(plain([*at.markdown, *at.caption, *at.error, *at.warning, *at.info, *at.success]))
    assert "must not carry credentials" in shown
    assert SECRET not in shown and "judge-user" not in shown
    with pytest.raises(InputError) as refused:
        load()
    assert SECRET not in str(refused.value)


def test_redact_removes_the_userinfo_of_every_url_and_normalise_drops_query_and_credentials() -> None:
    assert redact("GET https://a:b@h/v1 and http://c@k:8/x") == "GET https://***@h/v1 and http://***@k:8/x"
    assert normalise("http://u:p@H:80/v1/?api-key=zzz#f") == "http://h/v1"
    assert normalise(None) == "https://api.openai.com/v1"
    assert normalise("offline") == "offline"
