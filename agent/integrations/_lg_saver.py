"""A LangGraph checkpointer with sync methods only, for the integration's sync entry points.

`langgraph.run` and `langgraph.resume` are sync, as `graph.invoke` is, but drive the graph's
async stream; LangGraph's `SqliteSaver` and `PostgresSaver` have sync methods only (their async
ones raise `NotImplementedError`). Such a graph runs with `SyncSaver` around its checkpointer:
each async method calls its sync twin on the event loop, blocking it as `graph.invoke` blocks
its caller. The state stays in the caller's own saver.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from typing import Any

from agent._extras import needs_extra

with needs_extra("langgraph", "agent.integrations._lg_saver"):
    from langgraph.checkpoint.base import (
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
    )


class SyncSaver(BaseCheckpointSaver[Any]):
    """`inner`'s sync methods, also as its async ones."""

    def __init__(self, inner: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    @property
    def config_specs(self) -> list[Any]:
        return list(self.inner.config_specs)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> BaseCheckpointSaver[Any]:
        allowed = self.inner.with_allowlist(extra_allowlist)
        return self if allowed is self.inner else SyncSaver(allowed)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    def list(self, config: Any, **kwargs: Any) -> Iterator[CheckpointTuple]:
        return self.inner.list(config, **kwargs)

    def put(
        self, config: Any, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> Any:
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.inner.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    def get_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Mapping[str, Any]:
        return self.inner.get_delta_channel_history(config=config, channels=channels)

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        for found in self.list(config, **kwargs):
            yield found

    async def aput(
        self, config: Any, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def aget_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Mapping[str, Any]:
        return self.get_delta_channel_history(config=config, channels=channels)


async def sync_capable(graph: Any) -> Any:
    """`graph`, or (its checkpointer has sync methods only) a copy of it whose checkpointer is
    `SyncSaver` around the same saver: made once per graph, as a graph is compiled once."""
    saver = getattr(graph, "checkpointer", None)
    if not isinstance(saver, BaseCheckpointSaver) or not await _sync_only(saver):
        return graph
    try:
        return _COPIES[graph]
    except (KeyError, TypeError):
        pass
    copy = graph.copy(update={"checkpointer": SyncSaver(saver)})
    with contextlib.suppress(TypeError):  # a graph that cannot be weakly referenced is copied each run
        _COPIES[graph] = copy
    return copy


async def _sync_only(saver: BaseCheckpointSaver[Any]) -> bool:
    """Whether the saver's async methods are not implemented; asked once per saver class (for a
    saver that has them, a read of a thread no run has)."""
    kind = type(saver)
    if kind not in _SYNC_ONLY:
        sync_only = False
        try:
            await saver.aget_tuple({"configurable": {"thread_id": "", "checkpoint_ns": ""}})
        except NotImplementedError:
            sync_only = True
        except Exception:  # it has async methods; they failed for another reason, which the run will say
            pass
        _SYNC_ONLY[kind] = sync_only
    return _SYNC_ONLY[kind]


_SYNC_ONLY: dict[type, bool] = {}
_COPIES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
