"""Cancel signals for tests: the loop checks its signal before each turn."""

from __future__ import annotations


class SetOnCheck:
    """A cancel signal that is set at its `n`-th check (the loop checks it before each turn)."""

    def __init__(self, n: int) -> None:
        self.checks, self.n = 0, n

    def is_set(self) -> bool:
        self.checks += 1
        return self.checks >= self.n
