"""`endstate doctor`: against the local Messages API server, offline, and without a key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from messages_api import MessagesAPI, error, message, text
from ports import refused_port

from agent.cli.main import main

MODEL = "claude-sonnet-5-5"
Capture = pytest.CaptureFixture[str]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[MessagesAPI]:
    with MessagesAPI(models={MODEL: {}}) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.delenv("ENDSTATE_MODEL", raising=False)
        monkeypatch.delenv("ENDSTATE_MODELS", raising=False)
        yield server


def doctor(capsys: Capture, *args: str) -> tuple[int, list[str]]:
    code = main(["doctor", *args])
    return code, capsys.readouterr().out.splitlines()


def test_all_checks_hold(api: MessagesAPI, capsys: Capture) -> None:
    api.enqueue(message(text("OK"), input_tokens=8, output_tokens=2))
    code, lines = doctor(capsys)  # the default model
    assert code == 0
    assert [line.split()[0] for line in lines] == ["ok"] * 4
    assert [line.split()[1] for line in lines] == ["api", "model", "models", "round"]
    assert "sk-ant-test-key" not in "\n".join(lines)
    assert "context window 1,000,000 tokens" in lines[1] and "$2.00 in / $10.00 out" in lines[1]
    assert f"{MODEL} is active, max input 1,000,000 tokens" in lines[2]
    assert "8 input + 2 output tokens" in lines[3] and "first token after" in lines[3]
    assert [r.path for r in api.requests] == [f"/v1/models/{MODEL}", "/v1/messages"]
    assert api.bodies[1]["max_tokens"] == 16


def test_a_model_the_api_does_not_know_fails(api: MessagesAPI, capsys: Capture) -> None:
    api.enqueue(error(404, "model: claude-opus-5-5"))
    code, lines = doctor(capsys, "--model", "claude-opus-5-5")
    assert code == 1
    assert lines[2].startswith("fail") and "does not exist for this key" in lines[2]
    assert lines[3].startswith("fail") and "HTTP 404" in lines[3]


def test_a_model_without_a_price_fails_and_says_why(
    api: MessagesAPI, capsys: Capture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "models.toml"
    table.write_text(
        '[models."claude-next-1"]\ncontext_window = 1_000_000\nprice = "unknown"\n'
        'reason = "not on Anthropic\'s pricing page yet"\n'
    )
    monkeypatch.setenv("ENDSTATE_MODELS", str(table))
    api.models["claude-next-1"] = {}
    api.enqueue(message(text("OK")))
    code, lines = doctor(capsys, "--model", "claude-next-1")
    assert code == 1
    assert lines[1].startswith("fail      model table: claude-next-1: no known price")  # its window is known
    assert "pricing" in lines[1]
    assert [line.split()[0] for line in lines[2:]] == ["ok", "ok"]


def test_a_deprecated_model_holds_with_a_warning(api: MessagesAPI, capsys: Capture) -> None:
    api.models["claude-opus-4-5"] = {"lifecycle": "deprecated", "max_input_tokens": 200_000}
    api.enqueue(message(text("OK")))
    with pytest.warns(DeprecationWarning, match="claude-opus-4-5"):  # the SDK's own warning
        code, lines = doctor(capsys, "--model", "claude-opus-4-5")
    assert code == 0
    assert lines[1].startswith("warn") and "retires on 2027-01-22" in lines[1]
    assert lines[2].startswith("warn") and "is deprecated" in lines[2]


def test_a_rejected_key_fails(api: MessagesAPI, capsys: Capture) -> None:
    api.keys = {"sk-ant-another-key"}
    code, lines = doctor(capsys)
    assert code == 1
    assert lines[0].startswith("ok        api key")  # set, but:
    assert lines[2] == "fail      models API: the API refused the key: invalid x-api-key"
    assert lines[3].startswith("fail      round trip: Anthropic API returned HTTP 401")


def test_offline_it_says_what_it_could_not_check(monkeypatch: pytest.MonkeyPatch, capsys: Capture) -> None:
    port = refused_port()  # nothing listens there, and nothing can start to
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    code, lines = doctor(capsys, "--model", MODEL)
    assert code == 1
    assert lines[0].startswith("ok") and lines[1].startswith("ok")
    assert lines[2].startswith("unchecked models API: cannot reach the API")
    assert lines[3].startswith("unchecked round trip:") and "cannot connect" in lines[3]


def test_without_a_key_nothing_remote_is_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: Capture, tmp_path: object
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, lines = doctor(capsys, "--model", MODEL)
    assert code == 1
    assert lines[0].startswith("fail      api key:") and "ANTHROPIC_API_KEY" in lines[0]
    assert lines[1].startswith("ok        model table")
    assert lines[2:] == [
        "unchecked models API: needs credentials (set ANTHROPIC_API_KEY)",
        "unchecked round trip: needs credentials (set ANTHROPIC_API_KEY)",
    ]


def test_a_model_table_row_the_models_api_contradicts_is_a_warning_naming_both(
    api: MessagesAPI, capsys: Capture
) -> None:
    # The table's maximum output decides which max_tokens the adapter lets through to the API.
    api.models[MODEL] = {"max_tokens": 64_000}
    api.enqueue(message(text("OK")))
    code, lines = doctor(capsys)
    assert code == 0
    assert lines[2].startswith("warn") and "max output 128,000 where the API says 64,000" in lines[2]
    assert "ENDSTATE_MODELS" in lines[2]
