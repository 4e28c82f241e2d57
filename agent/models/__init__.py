"""Model adapters: the scripted model for tests and offline runs, Anthropic for real ones."""

from agent.models.base import Model, ModelReply, ModelRequest, StopKind, ToolCall, UnreadableReply
from agent.models.scripted import ScriptedModel, call, finish, reply, say

__all__ = [
    "Model",
    "ModelReply",
    "ModelRequest",
    "ScriptedModel",
    "StopKind",
    "ToolCall",
    "UnreadableReply",
    "call",
    "finish",
    "reply",
    "say",
]
