"""The PostgreSQL store used by a least-privilege role, as managed databases are run (pool).

The tables are made by their owner; the app's role has only SELECT, INSERT, UPDATE and DELETE on
them (PostgreSQL 15 gives no role CREATE on the public schema). A store whose schema is current
opens and runs. One that needs a migration said only "permission denied for schema public LINE 1:
CREATE TABLE IF NOT EXISTS endstate_schema ...": it now says the role cannot migrate it, from which
version to which, and what to do (open it once as the owner; the grant to give the role after).
A table that a later migration made and nobody granted says which grant is missing.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import pg
import psycopg
import pytest
from old_stores import write_old_store
from test_runner_agents import a_run_whose_worker_died, catalog, counted, counter_state, lease_ran_out
from test_service_support import endstate

from agent.durable.runner import Runner
from agent.durable.store import StoreError, open_store
from agent.durable.store._sql import latest_version
from agent.result import StopReason

_names = itertools.count(1)
GRANT = "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"


def app_role(owner_url: str) -> tuple[str, str]:
    """A new login role with only SELECT, INSERT, UPDATE and DELETE on the tables `owner_url`'s
    database holds now: (its name, the database's URL as it)."""
    role = f"endstate_app_{os.getpid()}_{next(_names)}"
    with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute(GRANT.format(role=role))
    return role, owner_url.replace("postgresql://postgres@", f"postgresql://{role}@")


def test_a_role_with_only_row_privileges_opens_a_current_store_and_runs(tmp_path: Path) -> None:
    owner = pg.shared_server().new_database()
    open_store(owner).close()  # the owner makes the tables
    _, app = app_role(owner)
    runner = Runner(open_store(app), catalog())
    try:
        asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "r", "ask")))
        assert asked.reason is StopReason.NEED_HELP
        assert asyncio.run(runner.resume(asked.run_id, "2")).reason is StopReason.SUCCESS
    finally:
        runner.store.close()
    job = a_run_whose_worker_died(app, tmp_path / "d")
    lease_ran_out(app, job)
    runner = Runner(open_store(app), catalog())
    try:
        assert [r.reason for r in asyncio.run(runner.recover())] == [StopReason.SUCCESS]
    finally:
        runner.store.close()
    assert counted(tmp_path / "r") == [1, 2]


def test_a_migration_the_role_may_not_make_says_what_to_do_and_the_owner_makes_it(tmp_path: Path) -> None:
    owner = pg.shared_server().new_database()
    write_old_store(owner, 10, [])
    role, app = app_role(owner)
    with pytest.raises(StoreError) as refused:
        open_store(app)
    said = str(refused.value)
    assert f"role {role!r} may not migrate" in said
    assert f"tables are at schema version 10, and this Endstate needs {latest_version('postgres')}" in said
    assert "endstate runs --store" in said and GRANT.format(role=role) in said
    assert "ALTER DEFAULT PRIVILEGES" in said
    done = endstate("runs", store=owner)  # the one-off command the error names, as the owner
    assert done.returncode == 0, done.stderr
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(GRANT.format(role=role))
    runner = Runner(open_store(app), catalog())
    try:
        asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "r", "plain")))
        assert asked.reason is StopReason.SUCCESS
    finally:
        runner.store.close()


def test_a_role_that_may_not_create_the_tables_says_so() -> None:
    owner = pg.shared_server().new_database()
    role, app = app_role(owner)  # no tables yet
    with pytest.raises(StoreError) as refused:
        open_store(app)
    said = str(refused.value)
    assert f"role {role!r} may not" in said and "has no tables yet" in said
    assert "endstate runs --store" in said


def test_a_table_not_granted_to_the_role_says_which_grant_is_missing(tmp_path: Path) -> None:
    owner = pg.shared_server().new_database()
    open_store(owner).close()
    role, app = app_role(owner)
    with psycopg.connect(owner, autocommit=True) as conn:  # a table a later migration made, not granted
        conn.execute(f"REVOKE ALL ON endstate_entries FROM {role}")
    runner = Runner(open_store(app), catalog())
    try:
        with pytest.raises(StoreError) as refused:
            asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "r", "ask")))
    finally:
        runner.store.close()
    said = str(refused.value)
    assert "permission denied for table endstate_entries" in said
    assert "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA" in said


def test_a_role_out_of_connections_says_how_many_the_store_holds() -> None:
    owner = pg.shared_server().new_database()
    open_store(owner).close()
    role, app = app_role(owner)
    with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as conn:
        conn.execute(f"ALTER ROLE {role} CONNECTION LIMIT 1")
    first = open_store(app)
    try:
        with pytest.raises(StoreError, match="too many connections") as refused:
            open_store(app)
    finally:
        first.close()
    assert "two connections" in str(refused.value) and "CONNECTION LIMIT" in str(refused.value)
