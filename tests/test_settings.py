"""Settings: defaults, environment overrides, secrets fallback, a repr that hides the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.core.errors import InputError, TrustError
from lib.core.settings import DEMO_DB, ROOT, SETTINGS, load
from lib.judging import OfflineJudge
from lib.judging.build import build_judge, settings_judge
from lib.judging.openai_judge import OpenAIJudge

KEY = "sk-live-never-print-me-0001"


def test_defaults() -> None:
    s = load(environ={})
    assert s.db_path == ROOT / "data" / "demo.duckdb" == DEMO_DB
    assert s.inbox is None   # beside each database (lib.intake.inbox.folder_for)
    assert s.judge_model == "offline-lexical-v2"
    assert s.base_url is None and s.api_key is None
    assert s.judge_concurrency == 8
    assert s.judge_timeout == 60.0
    assert s.is_demo


def test_environment_overrides_every_setting(tmp_path: Path) -> None:
    env = {
        "EVALDRIFT_DB": str(tmp_path / "runs.duckdb"),
        "EVALDRIFT_INBOX": str(tmp_path / "drop"),
        "EVALDRIFT_JUDGE_MODEL": "gpt-judge",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": KEY,
        "EVALDRIFT_JUDGE_CONCURRENCY": "3",
        "EVALDRIFT_JUDGE_TIMEOUT": "12.5",
    }
    s = load(environ=env)
    assert s.db_path == tmp_path / "runs.duckdb"
    assert s.inbox == tmp_path / "drop"
    assert s.judge_model == "gpt-judge"
    assert s.base_url == "http://127.0.0.1:9/v1"
    assert s.api_key == KEY
    assert (s.judge_concurrency, s.judge_timeout) == (3, 12.5)
    assert not s.is_demo


def test_inbox_defaults_to_a_folder_beside_the_database(tmp_path: Path) -> None:
    from lib.intake.inbox import folder_for

    settings = load(environ={"EVALDRIFT_DB": str(tmp_path / "x.duckdb")})
    assert folder_for(tmp_path / "x.duckdb", settings) == tmp_path / "inbox"


def test_load_reads_the_process_environment_by_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVALDRIFT_DB", str(tmp_path / "env.duckdb"))
    assert load().db_path == tmp_path / "env.duckdb"


def test_autouse_fixture_leaves_no_openai_or_evaldrift_variables() -> None:
    s = load()
    assert (s.api_key, s.base_url) == (None, None)
    assert s.db_path == DEMO_DB


def test_secrets_fill_what_the_environment_leaves_unset() -> None:
    s = load(environ={"EVALDRIFT_JUDGE_MODEL": "env-model", "OPENAI_BASE_URL": ""},
             secrets={"OPENAI_API_KEY": KEY, "EVALDRIFT_JUDGE_MODEL": "secret-model",
                      "OPENAI_BASE_URL": "http://secrets.example/v1", "EVALDRIFT_JUDGE_CONCURRENCY": 2})
    assert s.api_key == KEY
    assert s.judge_model == "env-model"  # the environment wins
    assert s.base_url == "http://secrets.example/v1"  # an empty variable counts as unset
    assert s.judge_concurrency == 2


def test_repr_hides_the_key() -> None:
    s = load(environ={"OPENAI_API_KEY": KEY})
    assert KEY not in repr(s) and KEY not in str(s)
    assert "api_key='set'" not in repr(s) and "api_key=set" in repr(s)
    assert "api_key=unset" in repr(load(environ={}))


def test_every_setting_is_a_field_and_named_in_the_table() -> None:
    s = load(environ={})
    for setting in SETTINGS:
        assert hasattr(s, setting.name)
        # the database defaults to a path made when read: the demo's
        assert getattr(s, setting.name) == setting.default or setting.name == "db_path"
        assert setting.env.startswith(("EVALDRIFT_", "OPENAI_"))
        assert setting.help


def test_the_settings_judge_is_the_offline_judge_for_offline_models() -> None:
    judge = settings_judge(load(environ={}), noise=0.0)
    assert isinstance(judge, OfflineJudge)
    assert (judge.model, judge.noise) == ("offline-lexical-v2", 0.0)
    assert settings_judge(load(environ={}), model="offline-lexical-v1").model == "offline-lexical-v1"


def test_the_settings_judge_is_an_openai_judge_for_other_models_without_showing_the_key() -> None:
    s = load(environ={"EVALDRIFT_JUDGE_MODEL": "gpt-judge", "OPENAI_API_KEY": KEY,
                      "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "EVALDRIFT_JUDGE_CONCURRENCY": "2"})
    judge = settings_judge(s)
    assert isinstance(judge, OpenAIJudge)
    assert (judge.model, judge.base_url, judge.concurrency) == ("gpt-judge", "http://127.0.0.1:9/v1", 2)
    assert KEY not in repr(judge)


SERVER = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}


@pytest.mark.parametrize(("model", "endpoint", "built", "refused"), [
    ("offline-lexical-v1", "offline", OfflineJudge, None),                      # an embedded judge
    ("offline-lexical-v9", "offline", None, "no offline judge"),                # an offline name that does not exist
    ("gpt-judge", "http://127.0.0.1:9/v1", OpenAIJudge, None),                  # the operator's server
    ("gpt-judge", "HTTP://127.0.0.1:9/v1/", OpenAIJudge, None),                 # the same server, spelt otherwise
    ("gpt-judge", "http://attacker.example/v1", None, "refused to judge on"),   # any other server: never
])
def test_one_builder_makes_every_judge_on_the_operators_terms(model: str, endpoint: str, built: type | None,
                                                               refused: str | None) -> None:
    settings = load(environ=SERVER)
    if refused:
        with pytest.raises(TrustError, match=refused):
            build_judge(model, endpoint, settings)
        return
    judge = build_judge(model, endpoint, settings)
    assert isinstance(judge, built) and judge.model == model
    if isinstance(judge, OpenAIJudge):
        assert judge.base_url == "http://127.0.0.1:9/v1"


# -- one validated reader for every setting (issue 40 item 13) -------------------------------------------------
# (variable, a value it must refuse, words the one line says): a row per setting, so a setting read without
# its check turns the suite red (test_every_setting_has_a_bad_value_row keeps the table whole).
BAD_VALUES = [
    ("EVALDRIFT_DB", "evals\n.duckdb", "control character"),
    ("EVALDRIFT_INBOX", "in\tbox", "control character"),
    ("EVALDRIFT_JUDGE_MODEL", "gpt judge", "one word"),
    ("OPENAI_BASE_URL", "http://user:pw@127.0.0.1:9/v1", "credentials"),
    ("OPENAI_API_KEY", "sk-live never", "one word"),
    ("EVALDRIFT_JUDGE_CONCURRENCY", "abc", "whole number from 1 to 1,000"),
    ("EVALDRIFT_JUDGE_CONCURRENCY", "0", "whole number from 1 to 1,000"),
    ("EVALDRIFT_JUDGE_CONCURRENCY", "-1", "whole number from 1 to 1,000"),
    ("EVALDRIFT_JUDGE_CONCURRENCY", "1e9", "whole number from 1 to 1,000"),
    ("EVALDRIFT_JUDGE_TIMEOUT", "abc", "seconds over 0"),
    ("EVALDRIFT_JUDGE_TIMEOUT", "0", "seconds over 0"),
    ("EVALDRIFT_JUDGE_TIMEOUT", "-1", "seconds over 0"),
    ("EVALDRIFT_JUDGE_TIMEOUT", "nan", "seconds over 0"),
    ("EVALDRIFT_JUDGE_TIMEOUT", "inf", "seconds over 0"),
    ("EVALDRIFT_BREAKER_FAILURES", "ten", "whole number from 0"),
    ("EVALDRIFT_JOB_DEADLINE", "-3", "seconds over 0"),
    ("EVALDRIFT_DB_DIR", "dbs\n", "control character"),
    ("EVALDRIFT_SCORERS", "tests.support.scorers", "module:function"),
    ("EVALDRIFT_ALLOWED_USERS", "alice", "e-mail address or @domain"),
    ("EVALDRIFT_ABLATION_USERS", "@team.example, bob", "e-mail address or @domain"),
    ("EVALDRIFT_RAGAS_PYTHON", "/usr/bin/python3\n", "control character"),
    ("EVALDRIFT_INSPECT_PYTHON", "/usr/bin/\x1bpython3", "control character"),
    ("EVALDRIFT_CALL_BUDGET", "2.5", "whole number from 0"),
    ("EVALDRIFT_IDENTITY_CLAIM", "preferred username", "one word"),
    ("EVALDRIFT_MAX_INPUT_BYTES", "0", "whole number from 1"),
    ("EVALDRIFT_MAX_FIELD_CHARS", "1e6", "whole number from 1"),
    ("EVALDRIFT_NOTIFY", "json://127.0.0.1:9/hook\x07", "control character"),
    ("EVALDRIFT_NOTIFY", "team-alerts", "Apprise URLs"),
    ("EVALDRIFT_NOTIFY_FILE", "alerts\n.txt", "control character"),
    ("EVALDRIFT_PUBLIC_URL", "evaldrift.team.example", "http:// or https://"),
    ("EVALDRIFT_PUBLIC_URL", "https://evaldrift.team.example/?token=x", "no query"),
]


def test_every_setting_has_a_bad_value_row() -> None:
    assert {s.env for s in SETTINGS} == {row[0] for row in BAD_VALUES}


@pytest.mark.parametrize(("variable", "value", "words"), BAD_VALUES, ids=[f"{r[0]}={r[1]!r}" for r in BAD_VALUES])
def test_a_bad_setting_is_one_line_naming_the_variable_exit_2(variable: str, value: str, words: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_cli import assert_usage_error, cli

    with pytest.raises(InputError) as refused:
        load(environ={variable: value})
    assert variable in str(refused.value) and words in str(refused.value)
    monkeypatch.setenv(variable, value)
    line = assert_usage_error(cli("templates", "--metric", "faithfulness"))   # any command: settings come first
    assert line.startswith(f"error: {variable}: ") and words in line, line
    if variable == "OPENAI_API_KEY":
        assert value not in line   # a key is never echoed, even a malformed one


@pytest.mark.parametrize("url", [
    "https://bob:hunter2@llm.example/v1\n",           # credentials, and a newline a mounted secret file left
    "https://llm.example/v1?api-key=hunter2\t",       # a key in the query, and a tab
])
def test_a_base_url_refused_for_a_control_character_never_echoes_its_secret(url: str) -> None:
    """The URL's own refusals redact it; the control-character refusal, made first, echoed it whole (on main:
    "got 'https://bob:hunter2@llm.example/v1\\n'" on stderr and on the page)."""
    with pytest.raises(InputError) as refused:
        load(environ={"OPENAI_BASE_URL": url})
    assert "OPENAI_BASE_URL" in str(refused.value) and "control character" in str(refused.value)
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("EVALDRIFT_JUDGE_CONCURRENCY", "1", 1), ("EVALDRIFT_JUDGE_CONCURRENCY", " 1000 ", 1000),
    ("EVALDRIFT_JUDGE_TIMEOUT", "0.5", 0.5), ("EVALDRIFT_JUDGE_TIMEOUT", "86400", 86400.0),
    ("EVALDRIFT_BREAKER_FAILURES", "0", 0), ("EVALDRIFT_CALL_BUDGET", "0", 0),
    ("EVALDRIFT_MAX_FIELD_CHARS", "1", 1),
    ("EVALDRIFT_SCORERS", "a.b:c, lib.judging.scorers.inspect_scorer:rescore@/data/logs/RUN 1.eval",
     ("a.b:c", "lib.judging.scorers.inspect_scorer:rescore@/data/logs/RUN 1.eval")),
    ("EVALDRIFT_ALLOWED_USERS", "@team.example, eve@x.example", ("@team.example", "eve@x.example")),
])
def test_the_bounds_of_each_range_are_accepted(variable: str, value: str, expected: object) -> None:
    setting = next(s for s in SETTINGS if s.env == variable)
    assert getattr(load(environ={variable: value}), setting.name) == expected


def test_the_dashboard_says_a_bad_concurrency_in_one_sentence_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("EVALDRIFT_DB", str(tmp_path / "e.duckdb"))
    monkeypatch.setenv("EVALDRIFT_JUDGE_CONCURRENCY", "abc")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = [e.value.replace("\\", "").replace("\u2060", "") for e in at.error]
    assert "EVALDRIFT_JUDGE_CONCURRENCY" in error and "whole number from 1 to 1,000" in error
