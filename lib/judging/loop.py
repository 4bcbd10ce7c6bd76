"""One asyncio event loop in a daemon thread: where a model judge's HTTP calls run.

A judge called from many harness threads used to make each call on its own
thread with the SDK's sync client: 16 to 64 threads taking turns at the
interpreter lock, each parsing and building its own request. Here the threads
only wait; every request runs as a task on one loop (the SDK's AsyncOpenAI
client over one connection pool), so more calls are in flight for less CPU.

The loop starts on first use, is restarted in a forked child (a loop thread
does not survive fork), and stops when its owner is garbage-collected or
closed, after its teardown (closing the connections its state opened).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread; `run(coro)` from any other thread waits for its result.

    Args:
        name: the thread's name (shown in a thread dump).
        setup: called on the loop thread once the loop runs; its return value is `state` (e.g. a client bound
            to this loop).
        teardown: awaited on the loop with `state` before the loop stops (e.g. closing the client's
            connections, which must be closed on the loop that opened them).
    """

    def __init__(self, name: str, setup: Callable[[], Any] | None = None,
                 teardown: Callable[[Any], Awaitable[object]] | None = None) -> None:
        self._name = name
        self._setup = setup
        self._teardown = teardown
        self._thread: threading.Thread | None = None
        self._orphans: list[Any] = []   # states of a parent process's loop: never torn down here
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

            if self._loop is not None and self._pid != os.getpid() and self.state is not None:
                self._orphans.append(self.state)   # a forked child: the parent's connections are not ours
            thread = threading.Thread(target=serve, name=self._name, daemon=True)
            thread.start()
            ready.wait()
            self._loop, self._pid, self._thread = loop, os.getpid(), thread
            if self._setup is not None:
                self.state = asyncio.run_coroutine_threadsafe(_call(self._setup), loop).result()
            return loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the loop and wait for it (never call from the loop's own thread)."""
        loop = self._start()
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start `coro` on the loop; cancelling the returned future cancels the coroutine where it waits."""
        return asyncio.run_coroutine_threadsafe(coro, self._start())

    def close(self) -> None:
        """Tear the state down and stop the loop (idempotent); a later `run` starts a new one."""
        with self._lock:
            loop, self._loop = self._loop, None
            state, self.state = self.state, None
            if self._pid != os.getpid() and state is not None:
                self._orphans.append(state)   # a forked child: the parent's connections are not ours to close
            if loop is None or self._pid != os.getpid() or loop.is_closed():
                return
            teardown = self._teardown if state is not None else None

            async def finish(stop: bool) -> None:
                try:
                    if teardown is not None:
                        await teardown(state)
                finally:
                    if stop:
                        loop.stop()

            if threading.current_thread() is self._thread:   # collected on the loop's own thread
                loop.create_task(finish(True))
                return
            done = asyncio.run_coroutine_threadsafe(finish(False), loop)
        with contextlib.suppress(Exception):
            done.result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)


async def _call(fn: Callable[[], T]) -> T:
    return fn()
