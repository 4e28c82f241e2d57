"""`from agent import Runner, open_store`: durable runs' entry points from the package, as the README
writes them, without `import agent` loading the durable runner or a store driver."""

import subprocess
import sys

import pytest

import agent
from agent.durable.runner import Runner
from agent.durable.store import open_store


def test_runner_and_open_store_come_from_agent() -> None:
    from agent import Runner as FromAgent
    from agent import open_store as opened

    assert FromAgent is Runner and opened is open_store
    assert {"Runner", "open_store"} <= set(agent.__all__)


def test_import_agent_loads_no_durable_module_until_asked() -> None:
    code = (
        "import sys, agent\n"
        "print(sorted(m for m in sys.modules if m.startswith(('agent.durable.runner', 'psycopg'))))\n"
        "from agent import *\n"
        "print(Runner.__module__, open_store.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "agent.durable.runner agent.durable.store"]


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="Runnr"):
        agent.Runnr  # noqa: B018
