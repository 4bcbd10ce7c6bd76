"""The command line's start-up: `python -m lib --help`, a usage error and a command that needs no database import
neither pandas nor DuckDB nor the engines (they cost about 0.8 CPU s a start, paid before any work), and the
defaults the parser shows without importing the engines are the engines' own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "numpy", "pyarrow", "duckdb", "pydantic", "plotly", "streamlit", "openai", "lib.store",
         "lib.jobs", "lib.diagnosis")


def test_python_m_lib_help_imports_no_data_library_nor_engine() -> None:
    # the real entry, as a user starts it; -X importtime names every module the process imported
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "lib", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "ablate" in proc.stdout and "watch" in proc.stdout, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "lib.cli.parser" in imported   # the listing is the whole process's
    loaded = [m for m in HEAVY if m in imported]   # a package is imported before any module of it
    assert loaded == [], f"`python -m lib --help` imported {loaded}"


def test_a_usage_error_or_a_command_that_needs_no_database_imports_no_engine() -> None:
    cases = [
        ["frobnicate"],                                                           # no such command
        ["ablate", "--run", "x", "--metric", "faithfulness", "--min-effect", "2"],  # a bad option value
        ["templates", "--metric", "faithfulness"],                                # a command that reads no database
    ]
    # one process runs them in turn (each as `python -m lib` would: lib.cli.parser.main), naming what each imported
    code = ("import contextlib, io, json, sys\nfrom lib.cli.parser import main\n"
            f"for argv in {cases!r}:\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            "        code = main(argv)\n"
            f"    print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    seen = [json.loads(line) for line in proc.stdout.splitlines()]
    assert seen == [[2, []], [2, []], [0, []]], list(zip(cases, seen, strict=False))


def test_the_parsers_defaults_are_the_engines() -> None:
    from lib.cli import parser, sentinel
    from lib.diagnosis import ablation
    from lib.diagnosis import sentinel as engine

    spec = ablation.AblationSpec("r", ("faithfulness",), ("question",))
    assert parser.MIN_EFFECT == ablation.MIN_EFFECT == spec.min_effect
    assert parser.SWAPPABLE == ablation.SWAPPABLE
    assert (sentinel.PROBES, sentinel.REPEATS) == (engine.PROBES, engine.REPEATS)
    assert (sentinel.SOURCES, sentinel.FROM_RUN, sentinel.FROM_LABELS) == (engine.SOURCES, engine.FROM_RUN,
                                                                          engine.FROM_LABELS)
    # and what `ablate --help` and `sentinel pin --help` print
    assert f"(default {ablation.MIN_EFFECT})" in " ".join(run_cli("ablate", "--help").stdout.split())
    pin = " ".join(run_cli("sentinel", "pin", "--help").stdout.split())
    assert f"(default {engine.PROBES})" in pin and f"(default {engine.REPEATS})" in pin
