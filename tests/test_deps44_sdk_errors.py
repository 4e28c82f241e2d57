"""What a failed call says, whichever `anthropic` release pyproject.toml lets a user install.

anthropic 2.17 wraps a stream's read failure in `APIConnectionError` (2.16 let httpx2's error out) and
writes `APIStatusError.message` as "400 <body> (request_id: ..., path: ...)". A stream that broke
off mid-way then read "cannot connect", and an error without the API's message repeated the status
and the request id. These tests hold on both releases."""

from __future__ import annotations

import asyncio

import anthropic
import httpx2
import pytest
from messages_api import MessagesAPI, Response, dropped, html_error

from agent import ModelError, TransientModelError
from agent.cli.doctor import _guarded
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelRequest

MODEL = "claude-haiku-4-5"


def failure(response: Response, **options: object) -> ModelError:
    with MessagesAPI(response) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url, **options)  # type: ignore[arg-type]
        request = ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [], 256)
        with pytest.raises(ModelError) as caught:
            asyncio.run(model.complete(request))
    return caught.value


def test_a_connection_broken_mid_stream_says_the_stream_broke_off_not_that_it_cannot_connect() -> None:
    exc = failure(dropped())
    assert isinstance(exc, TransientModelError) and exc.error_type == "connection"
    assert str(exc).startswith("Anthropic API: the stream broke off: RemoteProtocolError("), str(exc)


def test_an_error_with_no_body_says_so_once_with_its_request_id() -> None:
    exc = failure(Response(400, None))
    assert str(exc).startswith(
        "Anthropic API returned HTTP 400: the API sent no body (request-id req_test_0001)"
    )
    assert str(exc).count("req_test_0001") == 1 and "path" not in str(exc)


def test_an_error_without_the_apis_message_quotes_its_body() -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error"}}
    exc = failure(Response(400, body))
    said = 'HTTP 400 invalid_request_error: {"type": "error", "error": {"type": "invalid_request_error"}}'
    assert said + " (request-id req_test_0001)" in str(exc), str(exc)


def test_a_proxys_page_is_quoted_as_sent() -> None:
    exc = failure(html_error(502, size=120))
    assert str(exc).startswith("Anthropic API returned HTTP 502: <html><body>bad gateway"), str(exc)
    assert str(exc).endswith("</body></html>"), str(exc)


def test_doctor_quotes_what_the_api_said_not_the_sdks_summary() -> None:
    request = httpx2.Request("GET", "https://api.anthropic.com/v1/models/claude-haiku-4-5")
    response = httpx2.Response(
        502, request=request, text="<html>bad gateway</html>", headers={"request-id": "r1"}
    )
    error = anthropic.AsyncAnthropic(api_key="sk-ant-test")._make_status_error_from_response(response)

    async def probe() -> object:
        raise error

    finding = asyncio.run(_guarded("models API", probe))  # type: ignore[arg-type]
    assert (finding.status, finding.detail) == ("fail", "HTTP 502: <html>bad gateway</html>")


def test_an_organization_with_url_fetching_turned_off_is_told_how_to_send_its_media() -> None:
    # anthropic 2.17's OrganizationURLFetchDisabledError: a 400 no retry fixes, for every later call too.
    said = "URL sources, web_fetch and mcp_servers are disabled for this organization"
    details = {"error_code": "organization_url_fetch_disabled"}
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": said, "details": details}}
    exc = failure(Response(400, body))
    assert not isinstance(exc, TransientModelError) and exc.error_type == "bad_request"
    assert "HTTP 400 invalid_request_error (organization_url_fetch_disabled): " + said in str(exc)
    assert "send images and documents as base64 (Image.from_bytes" in str(exc), str(exc)
    assert "or Files API ids" not in str(exc)  # tool content refuses a file source: no way out there
