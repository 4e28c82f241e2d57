"""`python -m agent.cli`: the same as the `endstate` command."""

from agent.cli.main import run

run()
