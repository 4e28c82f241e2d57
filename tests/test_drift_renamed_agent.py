"""drift: an agent renamed by a deploy (its catalog entry registered under another name) while a run of
it waits (SQLite and PostgreSQL).

An answer to the run is refused (`NotInCatalog`), as this catalog has no agent of the run's name. Before,
the refusal said to answer where that agent is deployed or to end the run: for a rename, which deploys
the same agent under a new name, that left ending the run (and its person's wait) as the only way out it
named. It now says the way that keeps the run: register the entry under the run's agent name too. Once
registered so, the run takes the answer.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_runner_agents import counter_state, make_counter

from agent import StopReason
from agent.durable.runner import Catalog, NotInCatalog, Runner
from agent.durable.store import open_store


def test_a_refused_answer_to_a_run_of_a_renamed_agent_says_how_to_keep_the_run(
    store_url: str, tmp_path: Path
) -> None:
    before = Catalog()
    before.register("counter", make_counter)
    old = Runner(open_store(store_url), before)
    try:
        first = asyncio.run(old.start("counter", "count", state=counter_state(tmp_path, "ask"), run_id="r1"))
        assert first.reason is StopReason.NEED_HELP
    finally:
        old.store.close()

    renamed = Catalog()
    renamed.register("tally", make_counter)
    new = Runner(open_store(store_url), renamed)
    try:
        with pytest.raises(NotInCatalog, match=r"renamed.*register its entry under 'counter' too") as said:
            asyncio.run(new.resume("r1", "3"))
        assert "endstate end r1" in str(said.value)  # still named, for an agent no deployment has
    finally:
        new.store.close()

    renamed.register("counter", make_counter)  # the way out it names
    both = Runner(open_store(store_url), renamed)
    try:
        assert asyncio.run(both.resume("r1", "3")).reason is StopReason.SUCCESS
    finally:
        both.store.close()
