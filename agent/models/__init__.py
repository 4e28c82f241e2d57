"""Model adapters: the scripted model for tests and offline runs, Anthropic for real ones."""

from agent.models.base import Model, ModelReply, ModelRequest, ToolCall
from agent.models.scripted import ScriptedModel, call, finish, reply, say

__all__ = [
    "Model",
    "ModelReply",
    "ModelRequest",
    "ScriptedModel",
    "ToolCall",
    "call",
    "finish",
    "reply",
    "say",
]
