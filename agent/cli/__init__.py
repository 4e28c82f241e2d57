"""The `endstate` command line: one module per group of subcommands."""

from agent.cli.main import main

__all__ = ["main"]
