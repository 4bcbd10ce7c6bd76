"""A jump's test, the split, with the judges the runs recorded: offline in-process, a model on the operator's
server (issue 10: Compare split only offline-judged runs, and no command split a jump at all)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lib.core.errors import InputError
from lib.core.prompts import DEFAULT_TEMPLATES, PROJECTED, REPLAY
from lib.core.samples import EvalSample
from lib.core.settings import load
from lib.diagnosis.trends import plan_split, run_split
from lib.store import Store
from tests.support.cli import run_cli
from tests.support.openai_server import OpenAIServer
from tests.support.reliability_support import ROOT, child_env
from tests.support.synthetic_runs import LEAKY_FAITHFULNESS, Facts, record, samples

MODEL = "evaldrift-test-model"
N = 12
KEY = "sk-split-operator"


def case(i: int, f: Facts) -> EvalSample:
    # fact1 is in the passages, fact2 only in the reference: a leaky template "supports" it
    return EvalSample(f"s{i:02d}", f.question, f"{f.fact1} {f.fact2}", (f.fact1, f.filler), f.fact2)


def two_runs(db: Path, judge_model: str) -> None:
    """Run a then run b, same outputs; b's faithfulness template renders the reference (the instrument moved)."""
    items = samples(case, N)
    with Store(db) as store:
        record(store, "a", items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED, day=0,
               judge_model=judge_model)
        record(store, "b", items, "faithfulness", LEAKY_FAITHFULNESS, REPLAY, day=1, judge_model=judge_model)


def split_cli(db: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli("split", "--db", db, "--run", "b", "--metric", "faithfulness", *args, env=child_env(**env))


def test_a_model_judged_jump_is_split_on_the_operators_server_after_a_yes(tmp_path: Path,
                                                                          openai_server: OpenAIServer) -> None:
    db = tmp_path / "s.duckdb"
    two_runs(db, MODEL)
    server = {"OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": KEY}

    unconfigured = split_cli(db)
    assert unconfigured.returncode == 2 and "OPENAI_BASE_URL" in unconfigured.stderr, unconfigured.stderr
    unconfirmed = split_cli(db, **server)
    assert unconfirmed.returncode == 2 and "--yes" in unconfirmed.stderr and f"{4 * N} samples" in unconfirmed.stderr
    assert openai_server.n_calls == 0                     # nothing is paid for before the yes

    done = split_cli(db, "--yes", "--json", **server)
    assert done.returncode == 0, done.stderr
    split = json.loads(done.stdout)
    assert split["a_with_a"] == pytest.approx(0.5) and split["b_with_b"] == pytest.approx(1.0)
    assert split["instrument"] == pytest.approx(0.5) and split["outputs"] == pytest.approx(0.0)
    assert "instrument" in split["sentence"]
    calls = openai_server.n_calls
    assert calls > 0
    sent = {{k.lower(): v for k, v in h.items()}.get("authorization") for h in openai_server.headers_seen}
    assert sent == {f"Bearer {KEY}"}                      # the operator's key, to the operator's server

    again = split_cli(db, "--yes", "--json", **server)
    assert again.returncode == 0 and json.loads(again.stdout)["instrument"] == pytest.approx(0.5)
    assert openai_server.n_calls == calls                 # asked again: answered from the call cache


def test_an_offline_judged_jump_is_split_without_asking(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    two_runs(db, "offline-lexical-v2")
    done = split_cli(db, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["instrument"] == pytest.approx(0.5)


@pytest.mark.parametrize(("judge_model", "environ", "paid", "error"), [
    ("offline-lexical-v2", {}, False, None),
    (MODEL, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}, True, None),
    (MODEL, {"OPENAI_API_KEY": KEY}, True, None),
    (MODEL, {}, None, "OPENAI_BASE_URL"),
    ("", {}, None, "no judge model"),
])
def test_the_split_plan_follows_the_recorded_judge_and_the_operators_settings(
        tmp_path: Path, judge_model: str, environ: dict[str, str], paid: bool | None, error: str | None) -> None:
    db = tmp_path / "s.duckdb"
    items = samples(case, 3)
    with Store(db) as store:
        for run_id, day in (("a", 0), ("b", 1)):
            record(store, run_id, items, "faithfulness", DEFAULT_TEMPLATES["faithfulness"], PROJECTED, day=day)
        if not judge_model:
            store.cursor().execute("UPDATE run_metrics SET judge_model = NULL")
        else:
            store.cursor().execute("UPDATE run_metrics SET judge_model = ?", [judge_model])
        settings = load(environ)
        if error:
            with pytest.raises(InputError, match=error):
                plan_split(store, "faithfulness", "a", "b", settings)
            return
        plan = plan_split(store, "faithfulness", "a", "b", settings)
        assert plan.paid is paid and plan.judgings == 4 * 3
        if not paid:
            assert run_split(store, plan).total == pytest.approx(0.0)


# -- the Compare page -------------------------------------------------------------------------------------------
def compare_page(db: Path, monkeypatch: pytest.MonkeyPatch, **environ: str):  # type: ignore[no-untyped-def]
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALDRIFT_DB", str(db))
    monkeypatch.setenv("EVALDRIFT_INBOX", str(db.parent / "inbox"))
    for k, v in environ.items():
        monkeypatch.setenv(k, v)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"run": "b", "run_b": "a", "metric": "faithfulness"})   # the link: no Overview first
    at.switch_page("pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page_text(at) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(e.value.replace("\\", "") for e in (*at.markdown, *at.caption, *at.info, *at.error))


def test_compare_splits_a_model_judged_jump_on_a_click_and_says_why_when_it_cannot(
        tmp_path: Path, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.duckdb"
    two_runs(db, MODEL)
    with monkeypatch.context() as m:
        at = compare_page(db, m)
        assert not any(b.key == "compare_split" for b in at.button)
        assert "OPENAI_BASE_URL" in page_text(at)
    at = compare_page(db, monkeypatch, OPENAI_BASE_URL=openai_server.base_url, OPENAI_API_KEY=KEY,
                      EVALDRIFT_JUDGE_MODEL=MODEL)
    assert f"{4 * N} samples" in page_text(at) and openai_server.n_calls == 0   # the cost, before any call
    at.button("compare_split").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert openai_server.n_calls > 0
    assert any("instrument" in e.value for e in at.info) and "+0.500" in page_text(at) + str(
        [mtr.value for mtr in at.metric])
