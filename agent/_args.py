"""Command-line argument types that two faces (the CLI, the service's `serve` options) share."""

from __future__ import annotations

import argparse
from pathlib import Path


def given(text: str) -> str:
    """An argparse type: a value that is not empty. `--store "$STORE"`, `--catalog`, `--temporal`,
    `--host` and the like with the variable unset fell back to the default without a word (a local
    store for Temporal, every interface for loopback)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "must not be empty (an unset variable?): give one, or leave the option out"
        )
    return text


def given_path(text: str) -> Path:
    """`given`, as a path (an empty one was the working folder)."""
    return Path(given(text))
