"""Helpers the reliability, kill, concurrency and security tests share (the browser ones are in browser.py).

- `mini_demo`: a small demo history (a few of the demo's nightly runs, scored
  for real by lib.jobs._demo) built once per test session; copy it before writing.
- `child_env`: the environment for a child process of the tests.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.browser import ROOT, copy_db

__all__ = ["LOCK_WORDS", "ROOT", "build_mini_demo", "child_env", "copy_db", "mini_demo", "mini_demo_run_ids"]

# Plans of lib.jobs._demo.run_plans: a clean run, the first leaking run (ground_truth rendered into
# faithfulness), and a leaking run after the retriever regression.
MINI_DEMO_PLANS = (0, 30, 58)


def build_mini_demo(path: Path, plans: tuple[int, ...] = MINI_DEMO_PLANS) -> Path:
    """Record the chosen demo nightly runs (scored by lib.jobs._demo.score_run) into `path`."""
    from lib.jobs._demo import demo_samples, run_plans, score_run
    from lib.store import Store

    main, canary = demo_samples()
    all_plans = run_plans()
    tmp = path.with_name(path.name + ".building")
    tmp.unlink(missing_ok=True)
    with Store(tmp) as store:
        for i in plans:
            plan = all_plans[i]
            store.record_run(score_run(plan, [d.regressed if plan.regressed else d.sample for d in main], canary))
    tmp.replace(path)
    return path


def mini_demo() -> Path:
    """The mini demo database, built once for this code and shared by every worker and session (conftest's
    built_once; it was built once per xdist worker, about 3 CPU s each). Read-only: copy it."""
    from tests.conftest import built_once

    return built_once("reliability-mini-demo", build_mini_demo)


def mini_demo_run_ids() -> list[str]:
    from lib.jobs._demo import run_plans

    plans = run_plans()
    return [plans[i].run_id for i in MINI_DEMO_PLANS]


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child process: no OPENAI_*/EVALDRIFT_* leaking in, the repo importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALDRIFT_"))}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


# Words that must never reach a user of the dashboard (a lock error, a traceback).
LOCK_WORDS = ("lock", "Traceback", "IOException", "IO Error", "held by another process", "StoreBusyError",
              "Conflicting")
