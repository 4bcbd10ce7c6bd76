"""`python -m lib ...`: the evaldrift command line (see lib/cli.py)."""

import os
import sys

if __name__ == "__main__":
    from lib.cli.watch_quiet import quiet_watch

    try:   # `watch` with nothing new answers before the whole command line is imported (lib.cli.watch_quiet)
        quiet = quiet_watch(sys.argv[1:])
        if quiet is not None:
            sys.exit(quiet)
        from lib.cli.parser import main

        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    sys.exit(code)
