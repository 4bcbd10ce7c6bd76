"""Judges: the protocol, the offline judge, the OpenAI-compatible judge.

OpenAIJudge is imported on first use: the openai SDK costs half a second to
import, which every CLI call and child process would otherwise pay.
"""

from typing import TYPE_CHECKING

from lib.core.calls import JudgeReply, JudgeRequest, Message, Usage
from lib.judging.base import CallCache, Judge, MemoryCache
from lib.judging.offline import DEFAULT_MODEL as OFFLINE_MODEL
from lib.judging.offline import OfflineJudge

if TYPE_CHECKING:
    from lib.judging.openai_judge import OpenAIJudge

__all__ = ["OFFLINE_MODEL", "CallCache", "Judge", "JudgeReply", "JudgeRequest", "MemoryCache", "Message",
           "OfflineJudge", "OpenAIJudge", "Usage"]


def __getattr__(name: str) -> object:
    if name == "OpenAIJudge":
        from lib.judging.openai_judge import OpenAIJudge

        return OpenAIJudge
    raise AttributeError(name)
