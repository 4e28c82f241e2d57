"""A run's stored journal damaged as a hand edit would (the damaged-journal tests' helper)."""

from __future__ import annotations

from agent.durable.store import open_store
from agent.durable.store._sql import ENTRIES, SqlStore


def drop_entry(store_url: str, run_id: str, last: bool) -> None:
    """Delete one of the run's stored journal entries: the second, or the last."""
    store = open_store(store_url)
    try:
        assert isinstance(store, SqlStore)
        where = f"(SELECT MAX(seq) FROM {ENTRIES} WHERE run_id = ?)" if last else "1"
        extra = (run_id,) if last else ()
        deleted = store._count(f"DELETE FROM {ENTRIES} WHERE run_id = ? AND seq = {where}", (run_id, *extra))
        assert deleted == 1
    finally:
        store.close()
