"""The `finish` tool: the only way the model can end a run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.stops import FinishKind

FINISH_TOOL = "finish"

FINISH_SPEC: dict[str, Any] = {
    "name": FINISH_TOOL,
    "description": (
        "End your work. kind='done' when the task is complete (code will check it; "
        "if a check fails you get the reason and keep working); kind='give_up' when "
        "the task cannot be done (missing access, data that does not exist, denied "
        "permission), with a note saying why and what you found; kind='need_help' "
        "when only a person can decide or answer, with the question as the note. "
        "Never end a turn without calling a tool."
    ),
    "strict": True,
    "input_schema": {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": [k.value for k in FinishKind]},
            "note": {
                "type": "string",
                "description": "The result, the reason for giving up, or the question.",
            },
        },
        "required": ["kind", "note"],
        "additionalProperties": False,
    },
}


@dataclass(frozen=True)
class Signal:
    """A well-formed `finish` call."""

    kind: FinishKind
    note: str


def parse_finish(arguments: dict[str, Any]) -> Signal | str:
    """The signal in a `finish` call, or an error message for the model."""
    kinds = ", ".join(repr(k.value) for k in FinishKind)
    kind = arguments.get("kind")
    if kind is None:
        return f"Error: finish needs a 'kind', one of {kinds}, and a 'note'."
    if not isinstance(kind, str) or kind not in {k.value for k in FinishKind}:
        return f"Error: finish kind {kind!r} is unknown; use one of {kinds}."
    note = arguments.get("note", "")
    if not isinstance(note, str):
        return "Error: finish 'note' must be a string."
    if kind != FinishKind.DONE and not note.strip():
        return f"Error: finish kind {kind!r} needs a note saying why (give_up) or the question (need_help)."
    extra = set(arguments) - {"kind", "note"}
    if extra:
        return f"Error: finish takes only 'kind' and 'note', not {sorted(extra)}."
    return Signal(FinishKind(kind), note)
