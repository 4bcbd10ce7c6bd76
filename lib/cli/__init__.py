"""The command line: `python -m lib <command> ...`.

The CLI opens the database, calls the library, formats what it returns, and
turns the library's errors into one line on stderr. Exit codes:

| code | meaning |
|---|---|
| 0 | done; for `ablate`, every verdict is what the wiring table expects; for `lint`, no finding |
| 1 | `ablate`: a LEAK or an INSENSITIVE metric; `lint`: a template reads a field its metric must never receive |
| 2 | bad usage or input: unknown command, run, metric or field, a bad file or setting, the database held elsewhere |
| 3 | `ablate`: nothing decided: INCONCLUSIVE, or REPLAY MISMATCH (the run's score was not reproduced) |

`watch` exits 1 when it sent alerts and 3 when a delivery failed (kept pending for its next look).

Commands that only read (`ablate`, `lint`, `runs`, `report`) refuse a
database path that does not exist instead of creating an empty database.
`--db` defaults to EVALDRIFT_DB.
"""

from typing import Any

__all__ = ["build_parser", "main"]


def __getattr__(name: str) -> Any:
    """`main` and `build_parser` load the whole command line on first use, so a module of it (lib.cli.watch_quiet,
    asked first by lib/__main__.py) can be imported without it."""
    if name in __all__:
        from lib.cli import parser

        return getattr(parser, name)
    raise AttributeError(f"module 'lib.cli' has no attribute {name!r}")
