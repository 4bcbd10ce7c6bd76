"""Waiting in tests: one poll for a condition, and the AppTest re-run a progress fragment would make.

- `wait_for(check, timeout=...)`: `check()` until it returns something true or `timeout` seconds pass; its last
  value either way, so the caller's assert says what was missing. Pauses grow from `pause` by `growth` up to
  `max_pause`: a slow job is asked less often, which is CPU the other xdist worker gets.
- `rerun_until(at, done, timeout=...)`: an AppTest re-run until `done(at)` (what a page's `st.fragment(run_every=...)`
  does in the browser), pausing 0.2 s growing to the fragment's own 1 s, since each re-run renders the whole page.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

T = TypeVar("T")


def wait_for(check: Callable[[], T], *, timeout: float, pause: float = 0.05, growth: float = 1.0,
             max_pause: float = 1.0) -> T:
    """`check()`'s first true value, or its last value once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    while not (value := check()) and time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(max_pause, pause * growth)
    return value


def rerun_until(at: AppTest, done: Callable[[AppTest], bool], *, timeout: float) -> AppTest:
    """`at` re-run until `done(at)` or the timeout (checked first without a re-run)."""
    fresh = True

    def settled() -> bool:
        nonlocal fresh
        if not fresh:
            at.run()
        fresh = False
        return done(at)

    wait_for(settled, timeout=timeout, pause=0.2, growth=1.5)
    return at
