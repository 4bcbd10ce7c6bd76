"""Read an Inspect AI log with Inspect's own reader; runs inside Inspect's environment, never imports evaldrift.

    python inspect_worker.py LOG

Inspect's maintainers call the .eval layout not frozen and `inspect_ai.log.read_eval_log` the stable
surface; it also reads logs Inspect has not finished (no header member yet). Prints one JSON object:
{"header": the log without its samples, "samples": [each sample]}, in the shape of the log's own JSON.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(sys.argv[1])
    data = log.model_dump(mode="json", exclude_none=True)
    samples = data.pop("samples", None) or []
    keep = ("id", "epoch", "input", "target", "output", "scores", "metadata", "error")
    print(json.dumps({"header": data, "samples": [{k: s[k] for k in keep if k in s} for s in samples]}))


if __name__ == "__main__":
    main()
