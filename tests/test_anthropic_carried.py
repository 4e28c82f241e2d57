"""What a Claude run carries from one turn to the next, through the real `anthropic` SDK against the
local Messages API server: the code execution container (named on every later request), citations on
text, and the `caller` and `toolset_name` of tool calls (sent back as the API gave them), across
turns, a suspension, a snapshot written as JSON and a run store."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import anthropic
import pytest
from messages_api import MessagesAPI, Response, message, text, tool_use

from agent import Agent, Approval, Budget, RetryPolicy, RunResult, Snapshot, StopReason, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.errors import ConfigError
from agent.models.anthropic import AnthropicModel, code_execution

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
CONTAINER = {"id": "container_011CZ", "expires_at": "2026-12-01T18:33:00Z"}
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
RAN: list[dict[str, Any]] = []


@tool
def lookup(region: str) -> str:
    """Look up the sales of a region."""
    RAN.append({"region": region})
    return f"{region}: 120"


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy (a person approves first)."""
    RAN.append({"deploy": target})
    return f"deployed {target}"


def agent_for(url: str) -> Agent:
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=url, server_tools=[code_execution()])
    return Agent(
        "carrier", model, tools=[lookup, deploy], budget=Budget(max_turns=10, max_seconds=60), retry=FAST
    )


def run(*responses: Response) -> tuple[Any, MessagesAPI]:
    RAN.clear()
    with MessagesAPI(*responses) as api:
        return agent_for(api.url).run("Do the task."), api


def ran_code(id: str = "srvtoolu_C1") -> list[dict[str, Any]]:
    """A code execution the API ran, and its result."""
    call = {"type": "server_tool_use", "id": id, "name": "code_execution", "input": {"code": "open('a','w')"}}
    done = {"stdout": "", "stderr": "", "return_code": 0, "content": []}
    return [call, {"type": "code_execution_tool_result", "tool_use_id": id, "content": done}]


# A text citing a web search result (its title unknown: null, which the API wants back) and a document.
CITATIONS = [
    {
        "type": "web_search_result_location",
        "cited_text": "West sales rose 12% in 2026.",
        "url": "https://example.com/sales",
        "title": None,
        "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0",
    },
    {
        "type": "char_location",
        "cited_text": "The West leads.",
        "document_index": 0,
        "document_title": None,
        "start_char_index": 0,
        "end_char_index": 15,
    },
]
CITED: dict[str, Any] = {"type": "text", "text": "The West leads.", "citations": CITATIONS}

# A call made by code the code execution tool runs (programmatic tool calling).
BY_CODE = {"type": "code_execution_20260120", "tool_id": "srvtoolu_P1"}
PROGRAM: dict[str, Any] = {
    "type": "server_tool_use",
    "id": "srvtoolu_P1",
    "name": "code_execution",
    "input": {"code": "..."},
}


def test_every_request_after_code_ran_names_its_container_even_after_a_turn_without_code() -> None:
    first = message(*ran_code(), tool_use("lookup", {"region": "west"}), container=CONTAINER)
    second = message(tool_use("lookup", {"region": "east"}))  # no code ran: the API names no container
    result, api = run(first, second, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert "container" not in api.bodies[0]
    assert [b.get("container") for b in api.bodies[1:]] == [CONTAINER["id"], CONTAINER["id"]]


def test_a_later_container_replaces_the_earlier_one() -> None:
    newer = {"id": "container_022AB", "expires_at": "2026-12-01T19:00:00Z"}
    first = message(*ran_code(), tool_use("lookup", {"region": "west"}), container=CONTAINER)
    second = message(*ran_code("srvtoolu_C2"), tool_use("lookup", {"region": "east"}), container=newer)
    result, api = run(first, second, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert api.bodies[2]["container"] == newer["id"]


def test_calls_made_by_code_are_answered_in_its_container_with_their_caller_sent_back() -> None:
    call = tool_use("lookup", {"region": "west"}, id="toolu_P") | {"caller": BY_CODE}
    paused = message(PROGRAM, call, container=CONTAINER)
    finished = {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_P1",
        "content": {"stdout": "120"},
    }
    result, api = run(paused, message(finished, text("West: 120."), DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert RAN == [{"region": "west"}]
    assert api.bodies[1]["container"] == CONTAINER["id"]
    assert api.bodies[1]["messages"][1]["content"] == [PROGRAM, call]


def test_the_server_refuses_results_for_calls_made_by_code_without_the_container() -> None:
    # The API's own check (programmatic tool calling: the container's id goes with the results).
    call = tool_use("lookup", {"region": "west"}, id="toolu_P") | {"caller": BY_CODE}
    messages = [
        {"role": "user", "content": "Sum the sales."},
        {"role": "assistant", "content": [PROGRAM, call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_P", "content": "120"}]},
    ]
    with MessagesAPI(message(text("unused"))) as api:
        client = anthropic.Anthropic(base_url=api.url, api_key="sk-test", max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="container_id is required"):
            client.messages.create(model=MODEL, max_tokens=100, messages=messages)  # type: ignore[arg-type]
        reply = client.messages.create(model=MODEL, max_tokens=100, messages=messages, container="c_1")  # type: ignore[arg-type]
    assert reply.content[0].type == "text"  # named, the same results are taken


def test_citations_and_the_fields_of_a_call_go_back_as_the_api_gave_them() -> None:
    member = tool_use("screenshot", {}, id="toolu_S") | {
        "toolset_name": "computer",
        "caller": {"type": "direct"},
    }
    result, api = run(message(CITED, member), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    sent = api.bodies[1]["messages"][1]["content"]
    assert sent == [CITED, member]


def test_what_a_run_carries_survives_a_suspension_a_json_snapshot_and_the_store(tmp_path: Path) -> None:
    first = message(
        *ran_code(), CITED, tool_use("deploy", {"target": "prod"}, id="toolu_D"), container=CONTAINER
    )
    with MessagesAPI(first, message(DONE)) as api:
        paused = agent_for(api.url).run("Deploy.")
        assert paused.reason is StopReason.NEED_HELP, paused.note
        assert paused.snapshot is not None
        snap = Snapshot.from_json(json.loads(json.dumps(paused.snapshot.to_json())))
        resumed = agent_for(api.url).resume(snap, Approval())
        assert resumed.reason is StopReason.SUCCESS, resumed.note
    with MessagesAPI(first, message(DONE)) as stored:
        catalog = Catalog()
        catalog.register("carrier", lambda state: agent_for(stored.url))
        url = str(tmp_path / "runs.db")
        store = open_store(url)
        try:
            waiting = asyncio.run(Runner(store, catalog).start("carrier", "Deploy."))
            assert waiting.reason is StopReason.NEED_HELP, waiting.note
        finally:
            store.close()
        store = open_store(url)  # another process: the run read back from the file
        try:
            done = asyncio.run(Runner(store, catalog).resume(waiting.run_id, approved=True))
            assert done.reason is StopReason.SUCCESS, done.note
        finally:
            store.close()
    for server in (api, stored):
        after = server.bodies[1]
        assert after["container"] == CONTAINER["id"]
        assert after["messages"][1]["content"][2] == CITED


def test_the_temporal_wire_carries_the_container_citations_and_callers_to_the_next_request() -> None:
    from agent.journal import Reply, Result, Task
    from agent.models._messages import part_of
    from agent.models.base import ModelRequest
    from agent.temporal import _wire as w

    call = tool_use("lookup", {"region": "west"}, id="toolu_P") | {"caller": BY_CODE}
    reply = Reply(tuple(map(part_of, [CITED, PROGRAM, call])), provider_data={"container": CONTAINER})
    request = ModelRequest("sys", (Task("t"), reply, Result("toolu_P", "120")), [], 100)
    wired = w.request_from_json(json.loads(json.dumps(w.request_json(request))))
    assert list(wired.journal) == list(request.journal)
    params = AnthropicModel(MODEL, api_key="sk-test").params(wired)
    assert params["container"] == CONTAINER["id"]
    assert params["messages"][1]["content"][:3] == [CITED, PROGRAM, call]


@pytest.mark.slow
def test_a_temporal_run_carries_the_container_and_citations_across_an_approval() -> None:
    from temporal_server import TemporalServer

    from agent.temporal import TemporalRuns, build_worker

    first = message(
        *ran_code(), CITED, tool_use("deploy", {"target": "prod"}, id="toolu_D"), container=CONTAINER
    )

    async def scenario(api: MessagesAPI, address: str) -> None:
        catalog = Catalog()
        catalog.register("carrier", lambda state: agent_for(api.url))
        runs = await TemporalRuns.connect(address, task_queue="carried")
        async with await build_worker(runs.client, catalog, task_queue="carried", heartbeat_seconds=2.0):
            asked = await runs.start("carrier", "Deploy.")
            assert isinstance(asked, RunResult)
            assert asked.reason is StopReason.NEED_HELP, asked.note
            done = await runs.approve(asked.run_id)
            assert done.reason is StopReason.SUCCESS, done.note

    server = TemporalServer()
    try:
        with MessagesAPI(first, message(DONE)) as api:
            asyncio.run(scenario(api, server.address))
    finally:
        server.stop()
    after = api.bodies[1]
    assert after["container"] == CONTAINER["id"]
    assert after["messages"][1]["content"][2] == CITED


def test_the_container_is_still_named_after_the_turn_that_reported_it_was_compacted_away() -> None:
    first = message(*ran_code(), tool_use("lookup", {"region": "r0"}), container=CONTAINER)
    more = [message(tool_use("lookup", {"region": f"r{i}"})) for i in range(1, 6)]
    full = message(tool_use("lookup", {"region": "r6"}), input_tokens=190_000)  # past compact_at of 200k
    result, api = run(first, *more, full, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    last = api.bodies[-1]
    assert "compacted to save context" in json.dumps(last["messages"])
    assert "srvtoolu_C1" not in json.dumps(last["messages"])  # the reply that ran code is gone
    assert last["container"] == CONTAINER["id"]


def test_a_field_the_sdk_does_not_know_yet_goes_back_with_its_block_as_the_sdk_itself_sends_it() -> None:
    said = text("Done.") | {"evidence": {"kind": "future", "ids": [1, 2]}}
    call = tool_use("lookup", {"region": "west"}, id="toolu_F") | {"priority": "high"}
    result, api = run(message(said, call), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert api.bodies[1]["messages"][1]["content"] == [said, call]


# -- a container that has expired ---------------------------------------------------------------------


def test_a_request_refused_for_an_expired_container_is_sent_again_at_once_in_a_new_one() -> None:
    # Anthropic's docs: a container that has expired cannot be reused; send the request again
    # without the `container` parameter to get a new one.
    newer = {"id": "container_022AB", "expires_at": "2026-12-01T19:00:00Z"}
    first = message(*ran_code(), tool_use("lookup", {"region": "west"}), container=CONTAINER)
    second = message(*ran_code("srvtoolu_C2"), tool_use("lookup", {"region": "east"}), container=newer)
    RAN.clear()
    with MessagesAPI(first, second, message(DONE)) as api:
        api.expired_containers.add(CONTAINER["id"])
        result = agent_for(api.url).run("Do the task.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.turns == 3
    assert [b.get("container") for b in api.bodies] == [None, CONTAINER["id"], None, newer["id"]]
    told = api.bodies[2]["messages"][-1]["content"][-1]
    assert CONTAINER["id"] in told["text"] and "expired" in told["text"]
    assert api.bodies[3]["messages"][2] == api.bodies[1]["messages"][2]  # the note was for that request only


def test_an_expired_container_while_code_in_it_waits_for_tool_results_ends_the_run_with_a_clear_error() -> (
    None
):
    call = tool_use("lookup", {"region": "west"}, id="toolu_P") | {"caller": BY_CODE}
    RAN.clear()
    with MessagesAPI(message(PROGRAM, call, container=CONTAINER), message(DONE)) as api:
        api.expired_containers.add(CONTAINER["id"])
        result = agent_for(api.url).run("Do the task.")
    assert result.reason is StopReason.ERROR
    assert result.error_type == "container_expired"
    assert CONTAINER["id"] in result.note and "programmatic tool calling" in result.note
    assert len(api.requests) == 2  # no request without the container, which the API refuses too


# -- the container option: Agent Skills, a container to begin in ----------------------------------------

XLSX = {"type": "anthropic", "skill_id": "xlsx", "version": "latest"}


def skills_agent(url: str, **container: Any) -> Agent:
    model = AnthropicModel(
        MODEL, api_key="sk-test", base_url=url, server_tools=[code_execution()], container=container
    )
    return Agent("skilled", model, tools=[lookup], budget=Budget(max_turns=10, max_seconds=60), retry=FAST)


def test_skills_are_loaded_on_every_request_with_the_container_the_run_works_in() -> None:
    first = message(*ran_code(), tool_use("lookup", {"region": "west"}), container=CONTAINER)
    with MessagesAPI(first, message(DONE)) as api:
        result = skills_agent(api.url, skills=[XLSX]).run("Make a spreadsheet.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert [b["container"] for b in api.bodies] == [
        {"skills": [XLSX]},
        {"id": CONTAINER["id"], "skills": [XLSX]},
    ]


def test_a_run_begins_in_the_container_it_is_given_until_a_reply_names_another() -> None:
    newer = {"id": "container_022AB", "expires_at": "2026-12-01T19:00:00Z"}
    first = message(tool_use("lookup", {"region": "west"}))  # no code ran: no container named
    second = message(*ran_code(), tool_use("lookup", {"region": "east"}), container=newer)
    with MessagesAPI(first, second, message(DONE)) as api:
        model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url, container="container_given")
        result = Agent("given", model, tools=[lookup], retry=FAST).run("Go on with the work.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert [b["container"] for b in api.bodies] == ["container_given", "container_given", newer["id"]]


def test_an_expired_container_given_is_replaced_its_skills_kept_and_not_named_again() -> None:
    # The reply in the new container ran no code, so it names none (the API names a container only
    # when a container tool ran): the next request must not fall back to the expired one given, which
    # the API refuses again, and the model is told once that its files are gone.
    with MessagesAPI(message(tool_use("lookup", {"region": "west"})), message(DONE)) as api:
        api.expired_containers.add("container_old")
        result = skills_agent(api.url, id="container_old", skills=[XLSX]).run("Make a spreadsheet.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert [b["container"] for b in api.bodies] == [
        {"id": "container_old", "skills": [XLSX]},
        {"skills": [XLSX]},
        {"skills": [XLSX]},
    ]
    notes = [b for b in api.bodies if "has expired" in json.dumps(b["messages"][-1])]
    assert len(notes) == 1


@pytest.mark.parametrize(
    ("container", "server_tools", "says"),
    [
        ({"skills": [XLSX]}, [], "code_execution()"),
        ({"skills": [{"skill_id": "xlsx"}]}, [code_execution()], "needs a type"),
        ({"skills": [{"type": "anthropic"}]}, [code_execution()], "skill_id"),
        ({"id": 7}, [], "container id"),
        ({"skill": [XLSX]}, [code_execution()], "'id' and 'skills'"),
    ],
)
def test_a_container_option_the_api_would_refuse_is_a_clear_config_error(
    container: dict[str, Any], server_tools: list[dict[str, Any]], says: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        AnthropicModel(MODEL, api_key="sk-test", server_tools=server_tools, container=container)


# -- tool definitions the API reads more of: programmatic tool calling, tool search, strict ---------------


def test_tool_options_reach_the_tool_definitions_so_code_may_call_a_tool() -> None:
    # Programmatic tool calling: the API lets code call only a tool whose allowed_callers name it.
    options = {"lookup": {"allowed_callers": ["code_execution_20260120"], "strict": True}}
    call = tool_use("lookup", {"region": "west"}, id="toolu_P") | {"caller": BY_CODE}
    finished = {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_P1",
        "content": {"stdout": "120"},
    }
    RAN.clear()
    with MessagesAPI(message(PROGRAM, call, container=CONTAINER), message(finished, DONE)) as api:
        model = AnthropicModel(
            MODEL, api_key="sk-test", base_url=api.url, server_tools=[code_execution()], tool_options=options
        )
        result = Agent("ptc", model, tools=[lookup], retry=FAST).run("Sum the sales.")
    assert result.reason is StopReason.SUCCESS, result.note
    for body in api.bodies:
        (spec,) = [t for t in body["tools"] if t["name"] == "lookup"]
        assert spec["allowed_callers"] == ["code_execution_20260120"] and spec["strict"] is True
        assert spec["input_schema"]["properties"] == {"region": {"type": "string"}}
        assert all("allowed_callers" not in t for t in body["tools"] if t["name"] != "lookup")


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"lookup": {"input_schema": {}}}, "may not set ['input_schema']"),
        ({"lookup": {"cache_control": {"type": "ephemeral"}}}, "cache="),
        ({"lookup": ["code_execution_20260120"]}, "must be a mapping of fields"),
    ],
)
def test_tool_options_the_tool_gives_itself_are_a_clear_config_error(
    options: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        AnthropicModel(MODEL, api_key="sk-test", tool_options=options)


MEMORY: dict[str, str] = {}


@tool
def memory(command: str, path: str, file_text: str = "") -> str:
    """The memory tool's commands, on a dict."""
    if command == "create":
        MEMORY[path] = file_text
        return f"created {path}"
    return MEMORY.get(path, f"no file {path}")


def test_a_tool_the_api_defines_is_declared_by_its_type_and_run_by_the_agents_tool_of_its_name() -> None:
    # The memory tool (memory_20250818) is run by the client: the API defines its input.
    write = tool_use(
        "memory", {"command": "create", "path": "/memories/notes.md", "file_text": "West leads."}
    )
    MEMORY.clear()
    with MessagesAPI(message(write), message(DONE)) as api:
        model = AnthropicModel(
            MODEL, api_key="sk-test", base_url=api.url, tool_options={"memory": {"type": "memory_20250818"}}
        )
        result = Agent("remembers", model, tools=[memory], retry=FAST).run("Note what you learn.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert MEMORY == {"/memories/notes.md": "West leads."}
    (declared,) = [t for t in api.bodies[0]["tools"] if t["name"] == "memory"]
    assert {k: v for k, v in declared.items() if k != "cache_control"} == {
        "name": "memory",
        "type": "memory_20250818",
    }
