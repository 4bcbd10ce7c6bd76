"""Judges: the protocol, the offline judge, the OpenAI-compatible judge."""

from lib.judges.base import CallCache, Judge, JudgeReply, JudgeRequest, MemoryCache, Message, Usage
from lib.judges.offline import DEFAULT_MODEL as OFFLINE_MODEL
from lib.judges.offline import OfflineJudge
from lib.judges.openai_judge import OpenAIJudge

__all__ = [
           "OFFLINE_MODEL",
           "CallCache",
           "Judge",
           "JudgeReply",
           "JudgeRequest",
           "MemoryCache",
           "Message",
           "OfflineJudge",
           "OpenAIJudge",
           "Usage",
]
