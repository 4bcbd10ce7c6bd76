"""A Python with heavy modules already imported, forking one child per command (a fork server), for the tests.

    PYTHON warm_python.py SOCKET MODULE[,MODULE...]

Runs inside another tool's environment (the Ragas one): imports the modules once, then listens on the UNIX
socket SOCKET. Each connection (from `warm_client`, written by tests/support/warm_python.py) hands over its
stdin, stdout and stderr and sends its argv, environment and working folder; a forked child runs the script
argv[0] as __main__ on those, exactly as `PYTHON script args...` would, and its exit code goes back.
Imports only the standard library itself: it never imports evaldrift.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import runpy
import socket
import sys
import traceback

# the interpreter options a command may pass, and the sys.flags attribute each sets
FLAGS = {"-I": "isolated", "-E": "ignore_environment", "-s": "no_user_site", "-S": "no_site",
         "-B": "dont_write_bytecode"}


class _Refused(Exception):
    """An interpreter option this warm process was not started with."""


def _serve_one(conn: socket.socket, listener: socket.socket) -> None:
    msg, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    chunks = [msg]
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    request = json.loads(b"".join(chunks))
    if os.fork():
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    listener.close()
    code = 1
    try:
        for target, fd in zip((0, 1, 2), fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        argv = list(request["argv"])
        try:
            while argv and argv[0].startswith("-"):   # an interpreter option: only one this interpreter runs with
                option = argv.pop(0)
                if not getattr(sys.flags, FLAGS.get(option, "-"), False):
                    raise _Refused(f"warm python: {option} needs a warm interpreter started with it")
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
        except _Refused as exc:
            print(exc, file=sys.stderr)
            code = 2   # python's own exit for an option it does not take
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        conn.sendall(str(code).encode())
    finally:
        os._exit(0)


def main() -> None:
    path, modules = sys.argv[1], sys.argv[2].split(",")
    for name in modules:
        importlib.import_module(name)
    gc.freeze()   # the imported heap is every child's too: its collections need not walk it (1.6 CPU s a Ragas file)
    sys.stdout.flush()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            _serve_one(conn, listener)
        finally:
            conn.close()
        while True:   # reap finished children
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break


if __name__ == "__main__":
    main()
