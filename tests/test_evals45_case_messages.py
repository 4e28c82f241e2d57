"""Case files a team writes refused with what is wrong and how to fix it: a follow-up text that YAML
read as no text (`text: no` is false), a judge's argument misspelt."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.evals.case import CaseError, load_file


def _load(tmp_path: Path, text: str) -> list:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return load_file(path)


DENIED = """
cases:
  - name: mine/denied-push
    agent: ci-fixer
    fixture: failing_ci
    script: ci/denied-push
    expect: need_help
    then: {{action: deny, text: {text}, expect: gave_up}}
    judge: [pushed_only_after_approval]
"""


@pytest.mark.parametrize("text", ["no", "off", "42"])
def test_a_follow_up_text_yaml_reads_as_no_text_says_to_quote_it(tmp_path: Path, text: str) -> None:
    """`text: no` (YAML's false) on a denial was refused as "an 'answer' needs the person's answer"."""
    with pytest.raises(CaseError) as caught:
        _load(tmp_path, DENIED.format(text=text))
    said = str(caught.value)
    assert "field 'then.text'" in said and "must be a string" in said and "in quotes" in said
    assert "an 'answer'" not in said


def test_a_quoted_follow_up_text_loads(tmp_path: Path) -> None:
    (case,) = _load(tmp_path, DENIED.format(text='"no"'))
    assert case.then is not None and case.then.text == "no"


JUDGED = """
cases:
  - name: mine/offline
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: gave_up
    judge: [{judge}]
"""


@pytest.mark.parametrize(
    ("judge", "says"),
    [
        ("{note_explains: {word: [portal]}}", "unknown argument(s) 'word'; it takes: words, reasons"),
        ("{nothing_downloaded: {folder: x}}", "unknown argument(s) 'folder'; it takes: none"),
    ],
)
def test_a_misspelt_judge_argument_is_named_with_those_the_judge_takes(
    tmp_path: Path, judge: str, says: str
) -> None:
    with pytest.raises(CaseError) as caught:
        _load(tmp_path, JUDGED.format(judge=judge))
    assert "field 'judge'" in str(caught.value) and says in str(caught.value)


def test_a_missing_judge_argument_is_still_said_so(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="missing a required argument"):
        _load(tmp_path, JUDGED.format(judge="{file_absent: {}}"))
