"""An inbox form posted with an `Origin` or `Referer` that cannot be read is refused (403), never a 500.

Each form of the inbox (sign-in, sign-out, answer, approve, deny, label, promote) checks where it was
posted from with `urlsplit` of the `Origin` (else `Referer`) header, which raises ValueError for a URL
whose IPv6 host is never closed (`http://[`, `http://[::1`). So anyone who reaches the port, without a
token, had a 500 and an ERROR line with a traceback in the service's log for each such post. It is an
origin that is not this service's: refused as a cross-site post, nothing read or changed."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient
from test_auditX_inbox_addresses import TOKEN, served  # noqa: F401  a signed-in client, one run waiting

from agent.durable.runner import Runner

PATHS = [
    "/inbox/login",
    "/inbox/logout",
    "/inbox/RUN/answer",
    "/inbox/RUN/deny",
    "/inbox/review/runs/RUN/label",
]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "sent",
    [{"Origin": "http://["}, {"Origin": "http://[::1"}, {"Referer": "http://[127.0.0.1:8000/inbox"}],
)
def test_an_origin_that_cannot_be_read_is_refused_as_cross_site(
    served: tuple[TestClient, Runner],  # noqa: F811
    path: str,
    sent: dict[str, str],
) -> None:
    client, runner = served
    [run] = runner.store.list_runs(None, 10)
    form = f"token={TOKEN}&answer=INV-0913&segments={run.segments}&label=fine&by=ana"
    headers = {**sent, "Content-Type": "application/x-www-form-urlencoded"}
    refused = client.post(path.replace("RUN", run.run_id), content=form, headers=headers)
    assert refused.status_code == 403, (path, sent, refused.status_code, refused.text[:300])
    assert "cross-site" in refused.text
    [now] = runner.store.list_runs(None, 10)
    assert (str(now.status), now.segments) == ("waiting", run.segments)


def test_a_readable_origin_of_this_service_is_still_taken(
    served: tuple[TestClient, Runner],  # noqa: F811
) -> None:
    client, _ = served
    for sent in ({"Origin": "http://127.0.0.1:8000"}, {"Referer": "http://127.0.0.1:8000/inbox?page=1"}):
        headers = {**sent, "Content-Type": "application/x-www-form-urlencoded"}
        signed = client.post(
            "/inbox/login", content=f"token={TOKEN}", headers=headers, follow_redirects=False
        )
        assert signed.status_code == 303, (sent, signed.status_code)
