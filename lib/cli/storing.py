"""`python -m lib store copy SRC DST`: move a whole history between stores, every table checked.

SRC and DST are each a DuckDB file, a team store URL (`ducklake:postgres:...`, lib/store/README.md "A team
store") or, for SRC only, an exported Parquet dataset's folder. DST must hold no rows yet. Every table is
copied in one transaction and compared, rows and checksum, before it commits (lib.store.copy).
"""

from __future__ import annotations

import argparse

from lib.cli.common import EXIT_OK, UsageError


def _name(location: str) -> str:
    from lib.store import lake

    return lake.parse(location).name if lake.is_lake(location) else location


def cmd_store(args: argparse.Namespace) -> int:
    from lib.store import Store, lake
    from lib.store.copy import copy_store, open_any
    from lib.store.parquet import is_dataset

    if not lake.is_lake(args.dst) and is_dataset(args.dst):
        raise UsageError(f"{args.dst} is a Parquet dataset, which is read-only: copy into a file or a team store "
                         "(or export with lib.store.parquet.export_parquet)")
    with open_any(args.src) as src, Store(args.dst) as dst:   # a file, or a team store's URL
        checked = copy_store(src, dst)
    for c in checked:
        print(f"{c.table}: {c.rows} rows, checksum {c.checksum}")
    print(f"copied {sum(c.rows for c in checked)} rows in {len(checked)} tables from {_name(args.src)} to "
          f"{_name(args.dst)}: each table's rows and checksum match")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `store` command and its actions."""
    p = sub.add_parser("store", help="move a whole history between stores (file, team store, dataset)")
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    a = acts.add_parser("copy", help="copy every table into an empty store, checked by row counts and checksums")
    a.add_argument("src", metavar="SRC", help="a DuckDB file, a store URL (ducklake:postgres:...) or a dataset folder")
    a.add_argument("dst", metavar="DST", help="an empty (or absent) DuckDB file, or a new team store's URL")
    p.set_defaults(func=cmd_store)
