"""Judge calls through the OpenAI Batch API: the requests a job will send, submit, poll, collect, finish; and the
submitted jobs as the store holds them.

Private modules: _jobs (read without the openai SDK), _requests, _batch.
"""

from lib.diagnosis.batch._batch import ABLATION, REJUDGE, cancel, client_for, finish, poll, submit
from lib.diagnosis.batch._jobs import BatchJob, load, newest

__all__ = [
    "ABLATION", "REJUDGE", "BatchJob", "cancel", "client_for", "finish", "load", "newest", "poll", "submit",
]
