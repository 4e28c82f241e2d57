"""lead45: a refusal whose cause (`details.error_code`) is not a model id's says what the cause is."""

from __future__ import annotations

from messages_api import Response
from test_deps44_sdk_errors import failure


def refused(status: int, kind: str, said: str, code: str | None) -> str:
    error = {"type": kind, "message": said} | ({"details": {"error_code": code}} if code else {})
    return str(failure(Response(status, {"type": "error", "error": error})))


def test_a_404_for_an_expired_file_says_so_and_not_to_check_the_model_id() -> None:
    """Before: every 404 was told to "check the model id (a retired model is not found)", also one whose
    cause the API named (a file past its `expires_at`, a thread not found): a fix that misleads."""
    text = refused(404, "not_found_error", "file abc has expired", "file_expired")
    assert "check the model id" not in text, text
    assert text.endswith(": the file's `expires_at` has passed, so its content is no longer available"), text


def test_a_cause_the_sdk_explains_is_told_in_its_words() -> None:
    text = refused(400, "invalid_request_error", "key disabled", "cmek_key_disabled")
    assert "customer-managed encryption key is disabled or revoked. Re-enable the key, then retry" in text


def test_a_cause_no_one_here_knows_gets_the_apis_words_and_no_guess() -> None:
    text = refused(404, "not_found_error", "the widget is gone", "widget_gone")
    said = "HTTP 404 not_found_error (widget_gone): the widget is gone (request-id req_test_0001)"
    assert text.endswith(said), text


def test_a_404_without_a_cause_still_says_to_check_the_model_id() -> None:
    text = refused(404, "not_found_error", "model: claude-nope", None)
    assert text.endswith(": check the model id (a retired model is not found) and the base URL"), text
