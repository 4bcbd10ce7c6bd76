"""The tests' shared cache (tests/conftest.py built_once and the tool runs made once per test run) is cleaned by
whichever process builds next, while other processes (xdist workers, another checkout's CI) clean it too: an entry
listed by one may be gone when it reads it. A fresh clone's CI failed 79 tests at setup so (FileNotFoundError on a
stale demo file another worker had just removed)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.conftest as shared


def _gone(folder: Path, name: str) -> None:
    """An entry the listing sees but reading finds gone: what another process's clean-up leaves between the two."""
    (folder / name).symlink_to(folder / "removed meanwhile")


def test_a_cached_database_gone_between_listing_and_reading_does_not_fail_the_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared, "CACHE", tmp_path)
    _gone(tmp_path, "demo-0123456789abcdef.duckdb")
    made = shared.built_once("thing", lambda path: path.write_text("built"))
    assert made.read_text() == "built"


def test_a_tool_run_gone_between_listing_and_reading_does_not_fail_the_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.setattr(shared, "CACHE", tmp_path)
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "run-1")
    (tmp_path / "tool-runs").mkdir()
    _gone(tmp_path / "tool-runs", "inspect-run-0.json")
    made = shared._once_per_run("inspect", tmp_path_factory, lambda out: {"log": str(out / "log.eval")})
    assert made["log"].endswith("log.eval")
