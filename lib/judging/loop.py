"""One asyncio event loop in a daemon thread: where a model judge's HTTP calls run.

A judge called from many harness threads used to make each call on its own
thread with the SDK's sync client: 16 to 64 threads taking turns at the
interpreter lock, each parsing and building its own request. Here the threads
only wait; every request runs as a task on one loop (the SDK's AsyncOpenAI
client over one connection pool), so more calls are in flight for less CPU.

The loop starts on first use, is restarted in a forked child (a loop thread
does not survive fork), and stops when its owner is garbage-collected or
closed.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread; `run(coro)` from any other thread waits for its result.

    Args:
        name: the thread's name (shown in a thread dump).
        setup: called on the loop thread once the loop runs; its return value is `state` (e.g. a client bound
            to this loop).
    """

    def __init__(self, name: str, setup: Callable[[], Any] | None = None) -> None:
        self._name = name
        self._setup = setup
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0
        self.state: Any = None

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is not None and self._pid == os.getpid() and not self._loop.is_closed():
                return self._loop
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                try:
                    loop.run_forever()
                finally:
                    loop.close()

            threading.Thread(target=serve, name=self._name, daemon=True).start()
            ready.wait()
            self._loop, self._pid = loop, os.getpid()
            if self._setup is not None:
                self.state = asyncio.run_coroutine_threadsafe(_call(self._setup), loop).result()
            return loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and wait for it (never call from the loop's own thread)."""
        loop = self._start()
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def close(self) -> None:
        """Stop the loop (idempotent); a later `run` starts a new one."""
        with self._lock:
            loop, self._loop = self._loop, None
            if loop is not None and self._pid == os.getpid() and not loop.is_closed():
                loop.call_soon_threadsafe(loop.stop)


async def _call(fn: Callable[[], T]) -> T:
    return fn()
