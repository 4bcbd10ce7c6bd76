"""The mutation pass over the verdict rule: which small changes to the classifier, the floor and the analysis
does no test notice?

    python tests/benchmarks/mutants.py                 # every mutant of every target; prints the survivors
    python tests/benchmarks/mutants.py --list          # the mutants, not run
    python tests/benchmarks/mutants.py --only _verdicts --jobs 2
    python tests/benchmarks/mutants.py --match "abs(self.mean) > self.noise"   # one mutant

Each mutant is one change to one function listed in TARGETS, made on the parsed code (ast) and written, as
`ast.unparse` gives it back, into a temporary copy of the repository (lib/, tests/ and the top-level files), where
the target's test files run (`pytest -x`: the first failure kills the mutant). The operators are the ones a
wrong rule is made of:

- CMP:  a comparison's boundary moved (`<` and `<=`, `>` and `>=`) or flipped (`==` and `!=`, `is` and `is not`);
- BOOL: `and` and `or` exchanged;
- NOT:  a `not` dropped;
- IF:   an `if` dropped (its test made False: the branch never runs, its `else` always does);
- SWAP: two adjacent `if ...: return ...` statements exchanged (in classify, the order is the rule).

A mutant that survives changes either nothing a user can see (an equivalent mutant: say why beside it in
lib/diagnosis/README.md), or something no test pins: add a row. Not part of the pytest suite (tests/benchmarks is
not collected); it asserts nothing and exits 0, printing the survivors and their count.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# module -> (the functions and properties mutated, the pytest arguments whose tests must notice: the cheap tables,
# and of tests/test_verdict_cases.py only the cases that reach these functions, so a mutant costs seconds)
TARGETS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "lib/diagnosis/ablation/_verdicts.py": (
        ("classify", "headroom", "null_bound", "falls", "rendered_forbidden", "far", "beyond_effect",
         "excludes_zero", "shows_move", "beyond_noise"),
        ("tests/test_verdicts.py", "tests/test_sequential.py")),
    "lib/diagnosis/ablation/_floor.py": (
        ("floor_arm", "floor_level", "floor_scores", "same_prompts"),
        ("tests/test_floor.py",)),
    "lib/diagnosis/ablation/_analysis.py": (
        ("band_of", "replay_mismatch", "_joint_notes"),
        ("tests/test_verdicts.py", "tests/test_floor.py", "tests/test_verdict_cases.py", "-k",
         "not test_verdict_cases or replay_check or replay_move or leak_of_the_set or sample_template or "
         "identical_repeats")),
}
COPIED = ("lib", "tests", "pages", "data", "app.py", ".pytest.ini", ".streamlit")

_FLIP: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                           ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is",
           ast.IsNot: "is not"}


@dataclass(frozen=True)
class Mutant:
    """One change: where, what it was, what it became, and how to make it on a fresh tree."""

    module: str
    function: str
    line: int
    operator: str
    was: str
    became: str
    apply: Callable[[ast.Module], None]

    def describe(self) -> str:
        return f"{self.module}:{self.line} {self.function} {self.operator}: {self.was}  ->  {self.became}"


def _functions(tree: ast.Module, names: tuple[str, ...]) -> Iterator[ast.FunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            yield node


def _nodes(tree: ast.Module, names: tuple[str, ...]) -> list[tuple[str, ast.AST]]:
    """Every node inside the target functions, in a fixed order (the k-th node is the same in every parse)."""
    return [(f.name, n) for f in _functions(tree, names) for n in ast.walk(f)]


def _returns(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and bool(stmt.body) and isinstance(stmt.body[-1], ast.Return)


def mutants(module: str, names: tuple[str, ...]) -> list[Mutant]:
    """Every mutant of the target functions of one module (see the module docstring for the operators)."""
    source = (ROOT / module).read_text(encoding="utf-8")
    tree = ast.parse(source)
    out: list[Mutant] = []

    nodes = _nodes(tree, names)

    def seg(n: ast.AST) -> str:
        return " ".join((ast.get_source_segment(source, n) or ast.unparse(n)).split())

    for k, (fn, node) in enumerate(nodes):
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _FLIP:
                    new = copy.deepcopy(node)
                    new.ops[i] = _FLIP[type(op)]()
                    out.append(Mutant(module, fn, node.lineno, "CMP", seg(node), ast.unparse(new),
                                      _set_op(names, k, i, _FLIP[type(op)])))
        elif isinstance(node, ast.BoolOp):
            other = ast.Or if isinstance(node.op, ast.And) else ast.And
            new = copy.deepcopy(node)
            new.op = other()
            out.append(Mutant(module, fn, node.lineno, "BOOL", seg(node), ast.unparse(new),
                              _set_bool(names, k, other)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append(Mutant(module, fn, node.lineno, "NOT", seg(node), ast.unparse(node.operand),
                              _drop_not(names, k)))
        elif isinstance(node, ast.If):
            out.append(Mutant(module, fn, node.lineno, "IF", f"if {seg(node.test)}:", "if False:",
                              _drop_if(names, k)))
        if hasattr(node, "body") and isinstance(node.body, list):
            body = node.body
            for j in range(len(body) - 1):
                if _returns(body[j]) and _returns(body[j + 1]):
                    a, b = body[j], body[j + 1]
                    assert isinstance(a, ast.If) and isinstance(b, ast.If)
                    out.append(Mutant(module, fn, a.lineno, "SWAP", f"if {seg(a.test)}: ... (line {a.lineno})",
                                      f"after if {seg(b.test)}: ... (line {b.lineno})", _swap(names, k, j)))
    return out


def _nth(tree: ast.Module, names: tuple[str, ...], k: int) -> ast.AST:
    return _nodes(tree, names)[k][1]


def _set_op(names: tuple[str, ...], k: int, i: int, op: type) -> Callable[[ast.Module], None]:
    def apply(tree: ast.Module) -> None:
        node = _nth(tree, names, k)
        assert isinstance(node, ast.Compare)
        node.ops[i] = op()
    return apply


def _set_bool(names: tuple[str, ...], k: int, op: type) -> Callable[[ast.Module], None]:
    def apply(tree: ast.Module) -> None:
        node = _nth(tree, names, k)
        assert isinstance(node, ast.BoolOp)
        node.op = op()
    return apply


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, by: ast.AST) -> None:
        self.target, self.by = target, by

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return self.by
        return super().generic_visit(node)


def _drop_not(names: tuple[str, ...], k: int) -> Callable[[ast.Module], None]:
    def apply(tree: ast.Module) -> None:
        node = _nth(tree, names, k)
        assert isinstance(node, ast.UnaryOp)
        _Replace(node, node.operand).visit(tree)
    return apply


def _drop_if(names: tuple[str, ...], k: int) -> Callable[[ast.Module], None]:
    def apply(tree: ast.Module) -> None:
        node = _nth(tree, names, k)
        assert isinstance(node, ast.If)
        node.test = ast.Constant(False)
    return apply


def _swap(names: tuple[str, ...], k: int, j: int) -> Callable[[ast.Module], None]:
    def apply(tree: ast.Module) -> None:
        body = _nth(tree, names, k).body  # type: ignore[attr-defined]
        body[j], body[j + 1] = body[j + 1], body[j]
    return apply


def _copy_tree(dest: Path) -> None:
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.duckdb*", ".git"))
        elif src.exists():
            shutil.copy2(src, dest / name)


def run_mutant(m: Mutant, tests: tuple[str, ...], timeout: float) -> tuple[Mutant, str, float]:
    """Apply one mutant to a fresh copy and run its tests: 'killed', 'survived' or 'timeout'."""
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="evaldrift-mutant-") as tmp:
        work = Path(tmp)
        _copy_tree(work)
        tree = ast.parse((ROOT / m.module).read_text(encoding="utf-8"))
        m.apply(tree)
        ast.fix_missing_locations(tree)
        (work / m.module).write_text(ast.unparse(tree) + "\n", encoding="utf-8")
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
                                   *tests], cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return m, "timeout", time.perf_counter() - t
    status = "survived" if proc.returncode == 0 else "killed"
    return m, status, time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="only the targets whose path contains this text (e.g. _verdicts)")
    parser.add_argument("--match", help="only the mutants whose description contains this text")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a mutant's tests may take")
    args = parser.parse_args(argv)
    plan = [(m, tests) for module, (names, tests) in TARGETS.items() if args.only is None or args.only in module
            for m in mutants(module, names) if args.match is None or args.match in m.describe()]
    if args.list:
        for m, _ in plan:
            print(m.describe())
        print(f"{len(plan)} mutants")
        return 0
    survivors: list[Mutant] = []
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for i, (m, status, took) in enumerate(pool.map(lambda p: run_mutant(p[0], p[1], args.timeout), plan), 1):
            print(f"[{i}/{len(plan)}] {status:8} {took:5.1f} s  {m.describe()}", flush=True)
            if status != "killed":
                survivors.append(m)
    print(f"\n{len(survivors)} of {len(plan)} mutants survived ({time.perf_counter() - started:.0f} s):")
    for m in survivors:
        print(f"  {m.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
