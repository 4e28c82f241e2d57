"""red40: the budget `POST /runs/{id}/resume` adds: JSON's 2.0 is the whole number 2, and a value
refused is shown as it was sent."""

from __future__ import annotations

from test_service_defences import AUTH, Build, _finished, build  # noqa: F401 (the fixture)


def test_a_whole_number_written_as_a_float_is_more_turns(build: Build) -> None:  # noqa: F811
    """Before: {"more_turns": 2.0} was a 400 saying "'more_turns' must be a whole number above 0 ...,
    not 2.0" (Python's json.dumps(2.0) writes it so), which contradicts itself."""
    api = build()
    limited = {"agent": "csv-cleaner", "task": "Clean it", "state": {"scenario": "csv/ok-every-time"}}
    run_id = api.post("/runs", json=limited, headers=AUTH).json()["run_id"]
    before = _finished(api, run_id, 0)
    assert (before["stop_reason"], before["stop_limit"]) == ("limit", "turns")
    refused = api.post(f"/runs/{run_id}/resume", json={"more_turns": 2.5}, headers=AUTH)
    assert refused.status_code == 400 and refused.json()["error"].endswith("not 2.5")
    refused = api.post(f"/runs/{run_id}/resume", json={"more_turns": 1e19}, headers=AUTH)
    assert refused.status_code == 400 and "at most 9223372036854775807" in refused.json()["error"]
    taken = api.post(f"/runs/{run_id}/resume", json={"more_turns": 2.0, "more_tokens": 1e6}, headers=AUTH)
    assert taken.status_code == 202, taken.text
    after = _finished(api, run_id, before["segments"])
    assert after["stop_reason"] == "limit" and after["turns"] == before["turns"] + 2


def test_a_refused_amount_is_shown_as_sent(build: Build) -> None:  # noqa: F811
    """Before: {"more_turns": "2"} was refused as "... a whole number above 0 ..., not 2"."""
    api = build()
    for sent, shown in [("2", '"2"'), (True, "true"), (None, "null"), ([1], "[1]")]:
        refused = api.post("/runs/any/resume", json={"more_turns": sent}, headers=AUTH)
        assert refused.status_code == 400 and refused.json()["error"].endswith(f"not {shown}"), refused.text
