"""The tests' warm interpreter (tests/support/warm_python.py) runs a script as `python [options] script` would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.warm_python import WarmPython

SCRIPT = "import json, sys; print(json.dumps({'argv': sys.argv[1:], 'isolated': sys.flags.isolated}))"


@pytest.mark.parametrize(("flags", "args", "code", "out"), [
    ((), ["x", "-I"], 0, '{"argv": ["-I"], "isolated": 0}'),           # options after the script are its own
    (("-I",), ["-I", "x"], 0, None),                                     # an option the warm process runs with
    ((), ["-I", "x"], 2, ""),                                            # one it does not: refused, not ignored
])
def test_a_warm_python_runs_the_script_with_its_arguments_and_only_the_options_it_was_started_with(
        tmp_path: Path, flags: tuple[str, ...], args: list[str], code: int, out: str | None) -> None:
    script = tmp_path / "show.py"
    script.write_text(SCRIPT, encoding="utf-8")
    argv = [str(script) if a == "x" else a for a in args]
    with WarmPython(sys.executable, ("json",), flags=flags) as warm:
        proc = subprocess.run([str(warm.path), *argv], capture_output=True, text=True, timeout=30)
    assert proc.returncode == code, proc.stderr
    if out is None:
        assert proc.stdout.strip() == '{"argv": [], "isolated": 1}'
    else:
        assert proc.stdout.strip() == out
    if code == 2:
        assert "-I needs a warm interpreter started with it" in proc.stderr
