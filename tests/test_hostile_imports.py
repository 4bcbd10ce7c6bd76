"""Hostile files at the tool importers (issue 23 items 7 and 8): each is made here, from the real fixtures, and
each is refused by `python -m lib import` with exit 2 and one line naming the file, the row and the field; no
traceback, nothing written. A zip bomb is refused in bounded memory."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from lib.store import Store
from tests.test_cli import ROOT, assert_usage_error, cli

FIXTURES = Path(__file__).parent / "fixtures" / "imports"
DEEP = 200_000


def _inspect_json() -> dict:
    return json.loads((FIXTURES / "inspect_rag.json").read_text(encoding="utf-8"))


def _promptfoo() -> dict:
    # a well-formed results.json that each case breaks in one place: the base of a refusal, never a test of how
    # promptfoo's real files are read (tests/test_tool_imports.py reads files promptfoo writes in the session)
    return json.loads((FIXTURES / "promptfoo_hostile_base.json").read_text(encoding="utf-8"))


def _set(path: list, value: object, base: Callable[[], dict]) -> str:
    doc = base()
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(doc)


def _raw(path: list, raw: str, base: Callable[[], dict]) -> str:
    """The document with one value replaced by raw JSON text (what json.dumps cannot write)."""
    return _set(path, "@@RAW@@", base).replace('"@@RAW@@"', raw)


DUPLICATE_ID = '"kettle-1", "id": "kettle-9"'
BIG_INT = "1" * 5000
ID_40 = "1234567890" * 4
NESTED = "[" * DEEP + "]" * DEEP

# (case, file name, text, what the one line must name)
CASES: list[tuple[str, str, Callable[[], str], tuple[str, ...]]] = [
    ("inspect: eval is a list", "log.json", lambda: _set(["eval"], [1, 2], _inspect_json), ("field 'eval'",)),
    ("inspect: a sample is a list", "log.json", lambda: _set(["samples", 1], ["x"], _inspect_json),
     ("row 2", "field 'samples'")),
    ("inspect: an id that is a list", "log.json", lambda: _set(["samples", 0, "id"], ["a"], _inspect_json),
     ("row 1", "field 'samples.id'")),
    ("inspect: a 40-digit id", "log.json", lambda: _raw(["samples", 0, "id"], ID_40, _inspect_json),
     ("row 1", "field 'samples.id'", "40 digits")),
    ("inspect: a 5,000-digit integer", "log.json", lambda: _raw(["samples", 2, "epoch"], BIG_INT, _inspect_json),
     ("row 3", "field 'samples.epoch'", "5000 digits")),
    ("inspect: a key given twice", "log.json",
     lambda: _raw(["samples", 0, "id"], DUPLICATE_ID, _inspect_json), ("field 'id'", "appears twice")),
    ("inspect: 200,000-deep nesting", "log.json",
     lambda: _raw(["samples", 0, "metadata"], NESTED, _inspect_json), ("nested too deeply",)),
    ("inspect: scores that are a list", "log.json", lambda: _set(["samples", 0, "scores"], [1], _inspect_json),
     ("row 1", "field 'samples.scores'")),
    ("inspect: a grader role that is text", "log.json",
     lambda: _set(["eval", "model_roles"], {"grader": "gpt"}, _inspect_json), ("field 'eval.model_roles.grader'",)),
    ("promptfoo: a result that is a list", "results.json",
     lambda: _set(["results", "results", 0], [1], _promptfoo), ("row 1", "field 'results.results'")),
    ("promptfoo: vars that are text", "results.json",
     lambda: _set(["results", "results", 1, "vars"], "q", _promptfoo), ("row 2", "field 'results.results.vars'")),
    ("promptfoo: a provider id that is a list", "results.json",
     lambda: _set(["results", "results", 0, "provider"], {"id": ["x"]}, _promptfoo),
     ("row 1", "field 'results.results.provider'")),
    ("promptfoo: an assertion that is null", "results.json",
     lambda: _set(["results", "results", 0, "gradingResult", "componentResults"], [None], _promptfoo),
     ("row 1", "field 'results.results.gradingResult.componentResults[1]'")),
    ("promptfoo: a 40-digit test index", "results.json",
     lambda: _raw(["results", "results", 0, "testIdx"], ID_40, _promptfoo),
     ("row 1", "field 'results.results.testIdx'")),
    ("promptfoo: a key given twice", "results.json",
     lambda: _raw(["results", "results", 0, "testIdx"], '0, "testIdx": 7', _promptfoo), ("field 'testIdx'",)),
    ("promptfoo: 200,000-deep nesting", "results.json",
     lambda: _raw(["results", "results", 0, "vars"], NESTED, _promptfoo), ("nested too deeply",)),
    ("promptfoo: a 5,000-digit score", "results.json",
     lambda: _raw(["results", "results", 0, "gradingResult", "componentResults", 0, "score"], BIG_INT, _promptfoo),
     ("row 1", "5000 digits")),
    ("promptfoo: a question over the field limit", "results.json",
     lambda: _set(["results", "results", 1, "vars", "query"], "q" * 1_000_001, _promptfoo),
     ("row 2", "field 'question'", "over the limit of 1,000,000 (EVALDRIFT_MAX_FIELD_CHARS")),
    ("inspect: an answer over the field limit", "log.json",
     lambda: _set(["samples", 0, "output", "completion"], "a" * 1_000_001, _inspect_json),
     ("row 1", "field 'answer'", "over the limit of 1,000,000 (EVALDRIFT_MAX_FIELD_CHARS")),
]


@pytest.mark.parametrize(("name", "text", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hostile_tool_file_is_refused_in_one_line_naming_file_row_and_field(
        fresh_db: Path, tmp_path: Path, name: str, text: Callable[[], str], names: tuple[str, ...]) -> None:
    path = tmp_path / name
    path.write_text(text(), encoding="utf-8")
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "hostile"))
    assert str(path) in line, line
    for part in names:
        assert part in line, (part, line)
    with Store(fresh_db) as store:
        assert "hostile" not in store.run_ids()


# -- .eval zips: members checked before reading, bombs in bounded memory ------------------------------------------
def _zstd_eval(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    """An Inspect-style .eval whose members are Zstandard frames (method 93) declaring the given sizes.

    Python's zipfile cannot write method 93: each frame is stored, then the headers are patched to say
    Zstandard and the declared (uncompressed) size.
    """
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for name, (frame, _) in members.items():
            z.writestr(name, frame)
    data = bytearray(path.read_bytes())
    for name, (_, declared) in members.items():
        raw = name.encode()
        for sig, method_at, size_at in ((b"PK\x03\x04", 8, 22), (b"PK\x01\x02", 10, 24)):
            start = 0
            while (at := data.find(sig, start)) >= 0:
                name_at = at + (30 if sig == b"PK\x03\x04" else 46)
                if data[name_at:name_at + len(raw)] == raw:
                    struct.pack_into("<H", data, at + method_at, 93)
                    struct.pack_into("<I", data, at + size_at, declared)
                    break
                start = at + 4
    path.write_bytes(bytes(data))
    return path


def _fixture_members() -> dict[str, bytes]:
    """The real fixture's header and samples, uncompressed."""
    from lib.intake.importers.inspect import _member

    with zipfile.ZipFile(FIXTURES / "inspect_rag.eval") as z:
        return {n: _member(z, n) for n in z.namelist() if n == "header.json" or n.startswith("samples/")}


def _zstd(data: bytes) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(level=3).compress(data)


def _bomb_frame(size: int) -> bytes:
    """A Zstandard frame of a sample JSON whose question is `size` bytes of 'a', compressed in streaming."""
    import io

    import zstandard

    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=1).stream_writer(out, closefd=False) as w:
        w.write(b'{"id": "bomb", "epoch": 1, "input": "')
        chunk = b"a" * (1 << 20)
        for _ in range(size >> 20):
            w.write(chunk)
        w.write(b'", "target": "t", "output": {"completion": "x"}, "scores": {}}')
    return out.getvalue()


def _peak_rss_mb(*args: object) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `python -m lib ...` in a wrapper that reports the child's peak resident memory."""
    wrapper = ("import resource, subprocess, sys; p = subprocess.run([sys.executable, '-m', 'lib', *sys.argv[1:]], "
               "capture_output=True, text=True); sys.stdout.write(p.stdout); sys.stderr.write(p.stderr); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
               "sys.exit(p.returncode)")
    proc = subprocess.run([sys.executable, "-c", wrapper, *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ))
    *rest, peak = proc.stderr.strip().splitlines()
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, "\n".join(rest) + "\n"), \
        int(peak) / 1024


GIB = 1 << 30


def test_a_zip_bomb_member_is_refused_before_it_is_read_in_bounded_memory(fresh_db: Path, tmp_path: Path) -> None:
    members = {n: (_zstd(b), len(b)) for n, b in _fixture_members().items()}
    members["samples/bomb_epoch_1.json"] = (_bomb_frame(GIB), GIB + 200)  # 1 GiB, declared honestly
    path = _zstd_eval(tmp_path / "bomb.eval", members)
    assert path.stat().st_size < 2_000_000
    proc, peak = _peak_rss_mb("import", "--db", fresh_db, path, "--run-id", "bomb")
    line = assert_usage_error(proc)
    assert "samples/bomb_epoch_1.json" in line and "over the limit of 536,870,912" in line, line
    assert "EVALDRIFT_MAX_INPUT_BYTES" in line
    assert peak < 400, f"peak {peak:.0f} MB"
    with Store(fresh_db) as store:
        assert "bomb" not in store.run_ids()


def test_a_member_that_inflates_past_its_declared_size_is_refused_in_bounded_memory(
        fresh_db: Path, tmp_path: Path) -> None:
    members = {n: (_zstd(b), len(b)) for n, b in _fixture_members().items()}
    members["samples/bomb_epoch_1.json"] = (_bomb_frame(GIB), 12_000)   # 1 GiB, declared as 12 kB
    path = _zstd_eval(tmp_path / "liar.eval", members)
    proc, peak = _peak_rss_mb("import", "--db", fresh_db, path, "--run-id", "liar")
    line = assert_usage_error(proc)
    assert "samples/bomb_epoch_1.json" in line and "inflates past the 12,000 bytes" in line, line
    assert peak < 400, f"peak {peak:.0f} MB"


def test_members_together_over_the_limit_are_refused_naming_the_setting(
        fresh_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    members = _fixture_members()
    total = sum(len(b) for b in members.values())
    monkeypatch.setenv("EVALDRIFT_MAX_INPUT_BYTES", str(total - 1))
    path = _zstd_eval(tmp_path / "many.eval", {n: (_zstd(b), len(b)) for n, b in members.items()})
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "many"))
    assert "members together" in line and f"over the limit of {total - 1:,}" in line, line
    monkeypatch.setenv("EVALDRIFT_MAX_INPUT_BYTES", str(total))  # an operator who needs more raises it
    proc = cli("import", "--db", fresh_db, path, "--run-id", "many")
    assert proc.returncode == 0, proc.stderr


def test_a_whole_json_over_the_limit_is_refused_before_it_is_read(fresh_db: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_promptfoo()), encoding="utf-8")
    monkeypatch.setenv("EVALDRIFT_MAX_INPUT_BYTES", "1000")
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "big", "--format", "promptfoo"))
    assert re.search(r"the file is [\d,]+ bytes, over the limit of 1,000 \(EVALDRIFT_MAX_INPUT_BYTES", line), line


def test_a_hostile_eval_member_is_named_with_its_row_and_field(fresh_db: Path, tmp_path: Path) -> None:
    members = _fixture_members()
    name = sorted(n for n in members if n.startswith("samples/"))[1]
    sample = json.loads(members[name])
    sample["id"] = [sample["id"]]
    members[name] = json.dumps(sample).encode()
    path = _zstd_eval(tmp_path / "list-id.eval", {n: (_zstd(b), len(b)) for n, b in members.items()})
    line = assert_usage_error(cli("import", "--db", fresh_db, path, "--run-id", "x"))
    assert f"{path} {name}, row 2, field 'id'" in line, line
