"""svc42: a request with two Authorization headers is refused, whichever order they come in.

Before, the first header counted: `Authorization: Bearer <token>` then `Authorization: Bearer wrong`
answered a run (and the other order was a 401), so what a request with a wrong token beside the
right one did depended on how a proxy ordered them. Now two are a 400 that changes nothing.
"""

from __future__ import annotations

import pytest
from test_service_defences import TOKEN, Build, build  # noqa: F401  (the fixture)

from agent.durable.store import RunStatus

RIGHT, WRONG = f"Bearer {TOKEN}", "Bearer wrong-token"


@pytest.mark.parametrize("order", [(RIGHT, WRONG), (WRONG, RIGHT), (RIGHT, RIGHT)])
def test_two_authorization_headers_are_refused_and_change_nothing(
    build: Build,  # noqa: F811
    order: tuple[str, str],
) -> None:
    api = build(runs=1)
    store = api.app.state.service.runner.store  # type: ignore[attr-defined]
    run_id = store.list_runs(RunStatus.WAITING)[0].run_id
    headers = [("Authorization", order[0]), ("Authorization", order[1])]
    response = api.post(f"/runs/{run_id}/answer", json={"answer": "INV-0913"}, headers=headers)
    assert response.status_code == 400, response.text
    assert response.json()["error"].startswith("send one Authorization header, not 2")
    assert store.get(run_id).status is RunStatus.WAITING
    one = api.post(f"/runs/{run_id}/answer", json={"answer": "INV-0913"}, headers={"Authorization": RIGHT})
    assert one.status_code == 202, one.text
