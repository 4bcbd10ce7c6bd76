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

The parser and `main` live in lib.cli.parser; this face lists nothing, so a module of the command line
(lib.cli.watch_quiet, asked first by lib/__main__.py) is imported without loading the whole of it.
"""
