"""A misspelt key in a case's `then:` (`expected:` for `expect:`) was refused with "must be a
mapping with action, expect and optionally text", naming neither the key at fault nor that the
rest was right. The error now names the unknown key."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.evals.case import CaseError, load_file

CASE = """\
cases:
  - name: invoice/which
    agent: invoice-downloader
    fixture: portal_online
    script: invoice/which-one
    expect: need_help
    then: {then}
    judge: [{{invoice_saved: {{invoice_id: INV-0913}}}}]
"""


def test_an_unknown_key_in_then_is_named(tmp_path: Path) -> None:
    path = tmp_path / "then.yaml"
    path.write_text(CASE.format(then="{action: answer, text: INV-0913, expected: success}"))
    with pytest.raises(CaseError) as raised:
        load_file(path)
    assert str(raised.value) == (
        f"{path}: case 'invoice/which': field 'then.expected': unknown key; the keys are action, expect, text"
    )


def test_then_that_is_no_mapping_says_what_it_takes(tmp_path: Path) -> None:
    path = tmp_path / "then.yaml"
    path.write_text(CASE.format(then="answer"))
    with pytest.raises(
        CaseError, match=r"field 'then': must be a mapping with action, expect and optionally text"
    ):
        load_file(path)


def test_a_right_then_loads(tmp_path: Path) -> None:
    path = tmp_path / "then.yaml"
    path.write_text(CASE.format(then="{action: answer, text: INV-0913, expect: success}"))
    [case] = load_file(path)
    assert case.then is not None and case.then.text == "INV-0913"
