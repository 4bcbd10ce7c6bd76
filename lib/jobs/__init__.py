"""What the dashboard and the CLI both run: long jobs on one background runner, their log, and the demo build.

One runner (`Runner`, parameterised by a `Work`: a job's id, lane, run and how its failure is recorded) holds
every kind of job: ablations (`JobRunner`, `run_guarded` for the CLI's own thread), re-judges
(`RejudgeRunner`), scored uploads (`ImportRunner`) and, configured by lib.app, the new-judge gate. A job's end
is kept in the job log (`lib.jobs.job_log`). Nothing here calls Streamlit.

Private modules: _runner, _ablation, _rejudge, _imports, _demo.
"""

from lib.jobs import job_log
from lib.jobs._ablation import FREE, MODEL, STOPPED, JobRunner, Outcome, lane_of, run_guarded
from lib.jobs._demo import N_RUNS, build_demo, ensure_demo
from lib.jobs._imports import DONE, FAILED, RUNNING, ImportRunner, ImportStatus, Upload
from lib.jobs._rejudge import RejudgeRunner, run_guarded_rejudge
from lib.jobs._runner import ONE, SHUTDOWN_SENTENCE, STOP_SENTENCE, Job, JobStatus, Runner, Work, print_failure

__all__ = [
    "DONE", "FAILED", "FREE", "MODEL", "N_RUNS", "ONE", "RUNNING", "SHUTDOWN_SENTENCE", "STOPPED", "STOP_SENTENCE",
    "ImportRunner", "ImportStatus", "Job", "JobRunner", "JobStatus", "Outcome", "RejudgeRunner", "Runner", "Upload",
    "Work", "build_demo", "ensure_demo", "job_log", "lane_of", "print_failure", "run_guarded", "run_guarded_rejudge",
]
