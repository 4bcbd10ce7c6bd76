"""A Python with heavy modules already imported, forking one child per command (a fork server), for the tests.

    PYTHON warm_python.py SOCKET MODULE[,MODULE...]

Runs inside another tool's environment (the Ragas one) or the tests' own (the dashboards' servers): imports the
modules once, then listens on the UNIX socket SOCKET. Each connection (from the client tests/support/warm_python.py
writes) hands over its stdin, stdout and stderr and sends its argv, environment and working folder; a forked child,
in a session of its own (as `start_new_session`), runs `script args...` or `-m module args...` on those as
`PYTHON script args...` or `PYTHON -m module args...` would, and its exit status goes back to the client (a
negative one for a signal, which the client then dies of). A signal the client gets (SIGTERM, SIGINT, ...) is sent
on to the child's process group; a client gone (SIGKILLed) gets its child's group SIGKILLed. The warm process
ends when its stdin closes (the test process is gone) or on SIGTERM, and kills the children it still has.
Imports only the standard library itself: it never imports evaldrift.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import threading
from contextlib import suppress

# the interpreter options a command may pass, and the sys.flags attribute each sets
FLAGS = {"-I": "isolated", "-E": "ignore_environment", "-s": "no_user_site", "-S": "no_site",
         "-B": "dont_write_bytecode"}
HEAD = 8   # a request is its length in HEAD bytes (big-endian), then that much JSON; then signal numbers, a byte each


class _Refused(Exception):
    """An interpreter option this warm process was not started with."""


class _Child:
    """A command running in a forked child: its client's connection and the child's pidfd."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.heard = True   # the client's connection is open: its signals are read

    def signal(self, sig: int) -> None:
        """Send `sig` to the child's process group (its session's), as a signal to the client's group would."""
        with suppress(ProcessLookupError):
            os.killpg(self.pid, sig)


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    msg, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    data = bytearray(msg)
    while len(data) < HEAD or len(data) < HEAD + int.from_bytes(data[:HEAD], "big"):
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("the client left before its request was in")
        data += chunk
    size = int.from_bytes(data[:HEAD], "big")
    return json.loads(bytes(data[HEAD:HEAD + size])), fds


def _run(request: dict) -> int:
    """In the child: run the command as `python [options] script|-m module args` would; its exit code."""
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    argv = list(request["argv"])
    while argv and argv[0].startswith("-") and argv[0] != "-m":   # only an option this interpreter runs with
        option = argv.pop(0)
        if not getattr(sys.flags, FLAGS.get(option, "-"), False):
            print(f"warm python: {option} needs a warm interpreter started with it", file=sys.stderr)
            return 2   # python's own exit for an option it does not take
    if argv == ["-m"]:
        print("Argument expected for the -m option", file=sys.stderr)
        return 2
    if argv[:1] == ["-m"]:
        sys.argv = argv[1:]                   # runpy puts the module's file in sys.argv[0]
        sys.path[0] = os.getcwd()              # `python -m` puts the working folder first
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
        runpy.run_path(sys.argv[0], run_name="__main__")
    return 0


def _fork(conn: socket.socket, request: dict, fds: list[int], sockets: list[socket.socket],
          pidfds: list[int]) -> int | None:
    """Fork the command's child: None in the child (which has run the command: sys.exit follows), its pid here."""
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sock in (*sockets, conn):   # the listener, the clients' connections and the pidfds: the child holds none
        sock.close()
    for pidfd in pidfds:
        os.close(pidfd)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    request["code"] = _run(request)
    return None


def _serve(listener: socket.socket) -> dict | None:
    """Serve until stdin closes or SIGTERM; in a forked child, return its request (with its "code") instead."""
    children: dict[int, _Child] = {}       # by the client connection's fd
    by_pidfd: dict[int, _Child] = {}
    poll = select.poll()
    poll.register(listener, select.POLLIN)
    poll.register(0, select.POLLIN)
    try:
        while True:
            for fd, _ in poll.poll():
                if fd == 0:                 # the test process is gone (its pipe closed)
                    return None
                if fd == listener.fileno():
                    conn, _ = listener.accept()
                    try:
                        request, fds = _read_request(conn)
                    except (OSError, ValueError):
                        conn.close()
                        continue
                    pid = _fork(conn, request, fds, [listener, *(c.conn for c in children.values())],
                                list(by_pidfd))
                    if pid is None:
                        return request
                    child = _Child(conn, pid)
                    conn.sendall(f"{pid}\n".encode())
                    children[conn.fileno()] = child
                    by_pidfd[child.pidfd] = child
                    poll.register(conn, select.POLLIN)
                    poll.register(child.pidfd, select.POLLIN)
                elif fd in by_pidfd:        # a child ended: its exit status to its client
                    child = by_pidfd.pop(fd)
                    _, status = os.waitpid(child.pid, 0)
                    poll.unregister(child.pidfd)
                    if child.heard:
                        poll.unregister(child.conn)
                    children.pop(child.conn.fileno())
                    os.close(child.pidfd)
                    with suppress(OSError):   # a client gone
                        child.conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                    child.conn.close()
                else:                        # a client's signals, or the client gone
                    child = children[fd]
                    try:
                        got = child.conn.recv(64)
                    except OSError:
                        got = b""
                    if not got:
                        poll.unregister(fd)
                        child.heard = False
                        child.signal(signal.SIGKILL)
                    for sig in got:
                        child.signal(sig)
    finally:
        if os.getpid() == _SERVER_PID:
            for child in children.values():   # commands still running when the warm process ends
                child.signal(signal.SIGKILL)


_SERVER_PID = os.getpid()


def main() -> None:
    path, modules = sys.argv[1], sys.argv[2].split(",")
    for name in filter(None, modules):
        importlib.import_module(name)
    # a forked child has none of this process's threads: a worker a module needs would be missing there (a daemon
    # helper, such as the flush loop importing Ragas starts, is left behind as it was before this check)
    if any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        raise SystemExit(f"warm python: importing {modules} started a thread; this process cannot fork for it")
    gc.freeze()   # the imported heap is every child's too: its collections need not walk it (1.6 CPU s a Ragas file)
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    request = _serve(listener)
    if request is None:
        return
    sys.exit(request["code"])   # in a child: the interpreter's own exit (atexit, threads joined, streams flushed)


if __name__ == "__main__":
    main()
