"""The watcher's figures: the demo replayed night by night, false alerts on null histories, detection of planted
steps, and the cost of a look with nothing new on a 20,000-run store.

    python tests/benchmarks/bench_watch.py demo [DEMO.duckdb] [--ablate]   # each night's messages (builds the
                                                                           # demo if absent); --ablate: watch --ablate
    python tests/benchmarks/bench_watch.py null [HISTORIES]     # alerts per 90-night history, judge noise only
    python tests/benchmarks/bench_watch.py steps [HISTORIES]    # detection rate and delay of 1x, 2x, 4x steps
    python tests/benchmarks/bench_watch.py quiet                # CPU of a look with nothing new, 20,000 runs
    python tests/benchmarks/bench_watch.py every [SECONDS]      # a run recorded to its message, under --every 1s

`demo` replays through the real look (lib.jobs.watch.look, its store state and outbox) with a notifier that
keeps the messages; `null` and `steps` look at an in-memory history night by night through the same core
(lib.diagnosis.watch: observe, then events against the facts already seen), which is what decides the messages.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from lib.diagnosis.watch import NEW, events, observe  # noqa: E402
from lib.jobs import watch as wj  # noqa: E402
from lib.store import Store  # noqa: E402
from tests.support.watch_history import SD, N, at, night  # noqa: E402

RUN_TABLES = ("runs", "run_metrics", "samples", "sample_scores")
SERIES_TABLES = ("rejudges", "rejudge_runs", "rejudge_scores")


class Keeper:
    """A notifier that keeps what it is given (one channel)."""

    channels = ("keeper://",)

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def send(self, channel: str, title: str, body: str) -> None:
        self.sent.append((title, body))


def replay_demo(demo: Path, *, ablate: bool = False) -> None:
    """Each of the demo's nights recorded in turn into an empty store, and a look 6 hours after it. The demo's
    re-judge of the episode (built with the demo) is recorded the night its last run is in. `ablate`: each look
    runs the ablations the suspects call for first (`watch --ablate`; the demo's judge is the free offline one)."""
    import duckdb

    from lib.core import settings

    work = Path(tempfile.mkdtemp()) / "replay.duckdb"
    Store(work).close()
    con = duckdb.connect(str(work))
    con.execute(f"ATTACH '{demo}' AS demo (READ_ONLY)")
    nights = con.execute("SELECT run_id, started_at FROM demo.runs ORDER BY started_at").fetchall()
    series = con.execute("SELECT series_id, max(run_id) FROM demo.rejudge_runs GROUP BY series_id").fetchall()
    con.execute("INSERT INTO prompts SELECT * FROM demo.prompts")
    con.execute("INSERT INTO labels SELECT * FROM demo.labels")
    con.close()
    keeper = Keeper()
    cpu = []
    for k, (rid, started) in enumerate(nights):
        con = duckdb.connect(str(work))
        con.execute(f"ATTACH '{demo}' AS demo (READ_ONLY)")
        for table in RUN_TABLES:
            con.execute(f"INSERT INTO {table} SELECT * FROM demo.{table} WHERE run_id = ?", [rid])
        for sid, last in series:
            if last == rid:
                for table in SERIES_TABLES:
                    con.execute(f"INSERT INTO {table} SELECT * FROM demo.{table} WHERE series_id = ?", [sid])
        con.close()
        before = len(keeper.sent)
        t = time.process_time()
        wj.look(work, keeper, now=started + timedelta(hours=6),
                ablating=wj.Ablating(0, settings.load()) if ablate else None)
        cpu.append(time.process_time() - t)
        for title, body in keeper.sent[before:]:
            print(f"night {k + 1:2d} {started:%Y-%m-%d}: {title}")
            for line in body.splitlines():   # the verdict and people's agreement, as the message says them
                if line.startswith(("- people's agreement", "- ablation", "- ablation of")):
                    print(f"    {line}")
    print(f"{len(keeper.sent)} messages over {len(nights)} nights; CPU a look: median {statistics.median(cpu):.2f} s, "
          f"max {max(cpu):.2f} s")


def _looks(levels: list[float], seed: int, first: int = 0) -> list[tuple[int, object]]:
    """A history recorded night by night with a look after each night from `first` on; the messages by night."""
    store = Store(":memory:")
    seen: set[str] = set()
    out = []
    for d, level in enumerate(levels):
        night(store, d, level, seed=seed)
        if d < first:
            continue
        decision = events(observe(store, at(d + 0.25)), seen, first_look=d == first)
        seen.update(k for e in decision.events for k, _ in e.facts)
        seen.update(k for k, _ in decision.silent)
        out += [(d, e) for e in decision.events]
    store.close()
    return out


def null_histories(n: int) -> None:
    counts = []
    t = time.process_time()
    for seed in range(n):
        sent = _looks([0.70] * 90, seed)
        counts.append(len(sent))
        for d, e in sent:
            print(f"  history {seed:2d} night {d:2d}: {e.kind}: {e.headline}", flush=True)   # type: ignore[attr-defined]
    mean = statistics.mean(counts)
    sd = statistics.stdev(counts) if len(counts) > 1 else 0.0
    print(f"{n} null histories of 90 nights (one metric, {N} samples, per-sample sd {SD}): alerts per history "
          f"mean {mean:.2f}, sd {sd:.2f}, min {min(counts)}, max {max(counts)}; histories with none: "
          f"{counts.count(0)}/{n}; {time.process_time() - t:.0f} CPU s")


def _threshold(seed: int, at_night: int) -> float:
    """The jump threshold the rule holds at night `at_night` of a null history: a trial step far beyond it, read
    back from the jump it makes (the threshold rests on the runs before it and on the step's paired change)."""
    from lib.diagnosis.trends import find_jumps

    store = Store(":memory:")
    for d in range(at_night):
        night(store, d, 0.70, seed=seed)
    night(store, at_night, 0.40, seed=seed)
    (jump,) = [j for j in find_jumps(store) if j.run_id.endswith(f"{at_night:03d}")]
    store.close()
    return jump.threshold


def planted_steps(n: int, *, at_night: int = 60, after: int = 10) -> None:
    for size in (1, 2, 4):
        delays = []
        thresholds = []
        for seed in range(n):
            threshold = _threshold(seed, at_night)
            thresholds.append(threshold)
            levels = [0.70] * at_night + [0.70 - size * threshold] * after
            sent = _looks(levels, seed, first=at_night - 1)
            hits = [d for d, e in sent if e.kind == NEW and e.run_id is not None  # type: ignore[attr-defined]
                    and int(str(e.run_id).split("-")[1]) >= at_night]             # type: ignore[attr-defined]
            if hits:
                delays.append(hits[0] - at_night)
        rate = len(delays) / n
        said = (f", delay in nights: median {statistics.median(delays):.0f}, max {max(delays)}" if delays else "")
        print(f"step of {size}x the jump threshold (±{statistics.median(thresholds):.3f} median over {n} histories) "
              f"at night {at_night}: detected in {len(delays)}/{n} ({rate:.0%}) within {after} nights{said}",
              flush=True)


def quiet(n_runs: int = 20_000) -> None:
    """A store of n_runs runs (five metrics each, one sample: the look with nothing new reads no sample), looked at
    once (the full look), then again with nothing new: that look's CPU, in process and as a command."""
    import os
    import subprocess

    import duckdb

    from tests.support.receivers import http_receiver

    work = Path(tempfile.mkdtemp()) / "big.duckdb"
    Store(work).close()
    con = duckdb.connect(str(work))
    con.execute("""INSERT INTO runs (run_id, started_at, label, pipeline, recorded_at)
                   SELECT printf('run-%06d', i), TIMESTAMP '2021-01-01 02:00' + i * INTERVAL 1 HOUR, '',
                          '{"retriever": "v1"}', now() FROM range(?) t(i)""", [n_runs])
    con.execute("""INSERT INTO run_metrics (run_id, suite, metric, judge_model, prompt_hash, binding, score, n,
                                            n_failed, n_excluded)
                   SELECT printf('run-%06d', i), 'main', m, 'offline-lexical-v2', 'p-' || m, 'projected',
                          0.7 + 0.01 * sin(i * 12.9898 + length(m)) , 400, 0, 0
                   FROM range(?) t(i), (VALUES ('faithfulness'), ('answer_relevance'), ('context_precision'),
                                               ('context_recall'), ('answer_correctness')) ms(m)""", [n_runs])
    con.close()
    with http_receiver() as rec:
        notifier = wj.AppriseNotifier([rec.json_url()])
        t = time.process_time()
        wj.look(work, notifier)   # now: the hourly runs ended years ago, so it announces the missing run
        full = time.process_time() - t
        cpu = []
        for _ in range(5):
            t = time.process_time()
            result = wj.look(work, notifier)
            cpu.append(time.process_time() - t)
            assert result.quick and not result.claimed
        env = {**os.environ, "EVALDRIFT_NOTIFY": rec.json_url(), "PYTHONPATH": str(ROOT)}
        process = []
        for _ in range(5):
            t0 = os.times()
            done = subprocess.run([sys.executable, "-m", "lib", "watch", "--db", str(work)], env=env, check=False,
                                  capture_output=True, text=True)
            t1 = os.times()
            assert (done.returncode, done.stdout.strip()) == (0, "nothing new"), done.stderr
            process.append(t1.children_user + t1.children_system - t0.children_user - t0.children_system)
        t0 = os.times()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        t1 = os.times()
        bare = t1.children_user + t1.children_system - t0.children_user - t0.children_system
    print(f"{n_runs:,} runs x 5 metrics: the first (full) look {full:.1f} CPU s; a look with nothing new "
          f"{statistics.median(cpu) * 1000:.0f} ms CPU in process (median of 5); `python -m lib watch` with "
          f"nothing new {statistics.median(process):.2f} CPU s as a whole process, its imports included (median of "
          f"5; max {max(process):.2f}; target under 1 s; `python -c pass` alone {bare:.2f} CPU s)")


def every(interval: int = 1, rounds: int = 3) -> None:
    """`watch --every INTERVAL` running: a run recorded meanwhile, and the time until the receiver has its message."""
    import os
    import signal
    import subprocess
    from datetime import datetime

    from tests.support.receivers import http_receiver

    work = Path(tempfile.mkdtemp()) / "every.duckdb"
    start = datetime.now().replace(microsecond=0) - timedelta(days=12, hours=-2)   # night 11 was 22 hours ago
    with Store(work) as store:
        for d in range(12):
            night(store, d, 0.70, start=start)
    took = []
    with http_receiver() as rec:
        env = {**os.environ, "EVALDRIFT_NOTIFY": rec.json_url(), "PYTHONPATH": str(ROOT)}
        child = subprocess.Popen([sys.executable, "-m", "lib", "watch", "--db", str(work), "--every",
                                  f"{interval}s"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(interval + 3)   # its first look is done
            for k in range(rounds):
                time.sleep(interval * (k + 1) / (rounds + 1))   # recorded at different points of the interval
                for _ in range(400):
                    try:
                        with Store(work) as store:
                            night(store, 12 + k, 0.30 if k % 2 == 0 else 0.70, start=start, hours=24,
                                  pipeline={"retriever": f"v{k + 2}"})
                        break
                    except Exception:   # a look holds the file
                        time.sleep(0.05)
                recorded = time.monotonic()
                rid = f"night-{12 + k:03d}"
                while not any(rid in t for t in rec.texts()) and time.monotonic() < recorded + 3 * interval + 30:
                    time.sleep(0.02)
                took.append(time.monotonic() - recorded)
        finally:
            child.send_signal(signal.SIGTERM)
            child.wait(timeout=60)
    print(f"watch --every {interval}s: a run recorded meanwhile reached the receiver after "
          + ", ".join(f"{t:.1f} s" for t in took) + f" (target: within {interval} + 5 s)")


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "demo"
    if what == "demo":
        rest = [a for a in argv[1:] if a != "--ablate"]
        demo = Path(rest[0]) if rest else Path(tempfile.gettempdir()) / "bench-watch-demo.duckdb"
        if not demo.exists():
            from lib.jobs import build_demo

            build_demo(demo)
        replay_demo(demo, ablate="--ablate" in argv)
    elif what == "null":
        null_histories(int(argv[1]) if len(argv) > 1 else 20)
    elif what == "steps":
        planted_steps(int(argv[1]) if len(argv) > 1 else 20)
    elif what == "quiet":
        quiet()
    elif what == "every":
        every(int(argv[1]) if len(argv) > 1 else 1)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
