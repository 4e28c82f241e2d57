"""The Endstate workflow as a worker from before replies carried who gave them (`by`): its `answer`,
`approve` and `deny` take no `by` (a rolling deploy has such workers polling), as at main 5080695."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from agent.temporal import _wire as w
    from agent.temporal._remote import now
    from agent.temporal.workflow import EndstateRun, Reply


@workflow.defn(name=w.WORKFLOW)
class BeforeAnswerer(EndstateRun):
    @workflow.run
    async def run(self, start: dict[str, Any]) -> dict[str, Any]:
        return await super().run(start)

    @workflow.update(name=w.ANSWER)
    async def answer(self, text: str, wait: bool = True, segments: Any = None) -> dict[str, Any]:  # type: ignore[override]
        return await self._take(Reply(text, None, now()), wait)

    @answer.validator
    def _answer_before(self, text: str, wait: bool = True, segments: Any = None) -> None:
        self._answer_ok(text, wait, segments)

    @workflow.update(name=w.APPROVE)
    async def approve(self, wait: bool = True, segments: Any = None) -> dict[str, Any]:  # type: ignore[override]
        return await self._take(Reply(None, True, now()), wait)

    @approve.validator
    def _approve_before(self, wait: bool = True, segments: Any = None) -> None:
        self._approve_ok(wait, segments)

    @workflow.update(name=w.DENY)
    async def deny(self, reason: str = "", wait: bool = True, segments: Any = None) -> dict[str, Any]:  # type: ignore[override]
        return await self._take(Reply(reason or None, False, now()), wait)

    @deny.validator
    def _deny_before(self, reason: str = "", wait: bool = True, segments: Any = None) -> None:
        self._deny_ok(reason, wait, segments)
