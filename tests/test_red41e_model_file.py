"""A model table file (`ENDSTATE_MODELS`) whose rows replace the built-in ones, as the table's
header says, even for an id the built-in table makes an alias; an alias that names no row, or that
carries prices it would ignore, is a clear error, not a model silently priced as unknown (or as
another model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, ConfigError
from agent.models.anthropic import AnthropicModel
from agent.models.catalog import ModelTable

DATED = "claude-haiku-4-5-20251001"  # an alias of claude-haiku-4-5 in the built-in table


def table(tmp_path: Path, text: str) -> ModelTable:
    path = tmp_path / "models.toml"
    path.write_text(text, encoding="utf-8")
    return ModelTable.load({"ENDSTATE_MODELS": str(path)})


def test_a_row_in_the_file_replaces_a_built_in_alias(tmp_path: Path) -> None:
    rows = table(tmp_path, f'[models."{DATED}"]\ninput = 2.0\noutput = 7.0\ncontext_window = 200_000\n')
    info = rows.get(DATED)
    assert info is not None and info.price is not None
    assert (info.price.input_per_mtok, info.price.output_per_mtok) == (2.0, 7.0)


def test_a_run_on_an_id_overridden_in_the_file_is_priced_by_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "models.toml"
    path.write_text(f'[models."{DATED}"]\ninput = 2.0\noutput = 7.0\n', encoding="utf-8")
    monkeypatch.setenv("ENDSTATE_MODELS", str(path))
    done = tool_use("finish", {"kind": "done", "note": "ok"})
    # an output count a call can have (at most 20 times its max_tokens: a larger one is no count)
    with MessagesAPI(message(done, input_tokens=1_000_000, output_tokens=10_000)) as api:
        model = AnthropicModel(DATED, api_key="sk-test", base_url=api.url)
        result = Agent("priced", model, budget=Budget(max_turns=2)).run("Go.")
    assert result.cost_usd == pytest.approx(2.0 + 7.0 / 100)  # not the built-in 1.0 + 5.0 / 100


def test_a_built_in_row_named_as_an_alias_in_the_file_follows_it(tmp_path: Path) -> None:
    rows = table(tmp_path, '[models."claude-sonnet-4-6"]\nalias_of = "claude-haiku-4-5"\n')
    assert rows.get("claude-sonnet-4-6") == rows.get("claude-haiku-4-5")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[models."claude-new-9"]\nalias_of = "claude-new-10"\n', r"alias_of 'claude-new-10' names no row"),
        ('[models."claude-new-9"]\nalias_of = 5\n', "alias_of must be a model id"),
        ('[models."claude-new-9"]\nalias_of = "  "\n', "alias_of must be a model id"),
        (
            '[models."claude-new-9"]\nalias_of = "claude-haiku-4-5"\ninput = 3.0\n',
            r"an alias takes no other keys.*\['input'\]",
        ),
    ],
)
def test_a_bad_alias_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        table(tmp_path, text)


def test_a_row_given_in_code_replaces_a_built_in_alias() -> None:
    rows = ModelTable.builtin().with_rows({DATED: {"input": 2.0, "output": 7.0}})
    info = rows.get(DATED)
    assert info is not None and info.price is not None
    assert (info.price.input_per_mtok, info.price.output_per_mtok) == (2.0, 7.0)
    assert rows.get("claude-haiku-4-5") == ModelTable.builtin().get("claude-haiku-4-5")
