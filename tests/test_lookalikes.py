"""Lookalike letters: a pending call to an address whose first letter is a Cyrillic a (U+0430) read,
in the inbox and in `endstate pending`, exactly as a call to the Latin address. What the person
approves now says, outside the text the model wrote, which word mixes which scripts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_agents import LOOKALIKE_TO, SHOWN_TO
from test_probe26_hostile_pages import _sign_in, _start
from test_runner_agents import env_with_tests
from test_service_support import Server, wait_status

import agent.text
from agent.text import MAX_CHECKED_CHARS, MAX_LOOKALIKES, NOT_ALL_CHECKED, lookalikes

CATALOG = "hostile_agents:catalog"
CYRILLIC_A = "\u0430"
WARNING = f'"{LOOKALIKE_TO}" mixes Cyrillic "{CYRILLIC_A}" (U+0430) with Latin'


@pytest.mark.parametrize(
    ("word", "script"),
    [
        (LOOKALIKE_TO, "Cyrillic"),
        ("https://ex\u0430mple.com/login", "Cyrillic"),  # inside an address
        ("paypa\u0399.com", "Greek"),  # a Greek capital iota for the l
        ("\uff50aypal", "compatibility form"),  # a fullwidth p
        ("\U0001d429aypal", "compatibility form"),  # a mathematical bold p
        ("g\u0585\u0585gle.com", "Armenian"),  # two Armenian oh for the o's
    ],
)
def test_a_word_mixing_scripts_that_do_not_mix_is_named_with_its_odd_letters(word: str, script: str) -> None:
    [found] = lookalikes({"to": word})
    assert found.startswith(f'"{word}" mixes {script} ')
    odd = next(c for c in word if not c.isascii())
    assert f"(U+{ord(odd):04X})" in found


@pytest.mark.parametrize(
    "text",
    [
        SHOWN_TO,
        "Gr\u00fc\u00dfe aus Z\u00fcrich, na\u00efve caf\u00e9",  # Latin letters beyond ASCII
        "\u041f\u0440\u0438\u0432\u0435\u0442 world",  # two scripts, two words
        "\u6771\u4eac\u30bf\u30ef\u30fc iPhone\u7528 \ud55c\uad6d\uc5b4abc",  # Han with kana, Latin, Hangul
        "\u0633\u0644\u0627\u0645123",  # Arabic letters with ASCII digits
    ],
)
def test_words_whose_scripts_mix_as_writing_does_are_not_named(text: str) -> None:
    assert lookalikes([text, {"key": text}]) == []


PAYPAL_CYRILLIC = "\u0440\u0430\u0443\u0440\u0430\u04cf"  # Cyrillic er, a, u, er, a, palochka


@pytest.mark.parametrize(
    ("word", "script"),
    [
        (PAYPAL_CYRILLIC, "Cyrillic"),  # an address that is all Cyrillic, no Latin letter to mix with
        (PAYPAL_CYRILLIC + ".\u0441\u0441", "Cyrillic"),  # dots and all: .cc in Cyrillic
        ("\u0410\u0420\u0420\u04c0\u0415", "Cyrillic"),  # APPLE in capitals
        ("\u03a4\u039f\u039a\u03a5\u039f", "Greek"),  # TOKYO
        ("\u0585\u0578", "Armenian"),  # on
    ],
)
def test_a_word_all_in_letters_of_another_script_that_look_latin_is_named(word: str, script: str) -> None:
    [found] = lookalikes({"to": word, "memo": "pay the invoice"})
    assert found.startswith(f'"{word}" is all {script} letters that look Latin: ')
    assert f"(U+{ord(word[0]):04X})" in found


@pytest.mark.parametrize(
    "text",
    [
        # Russian and Greek text, whose words made of lookalike letters are its own ("wasp", "ABE")
        "\u041f\u0435\u0440\u0435\u0432\u0435\u0434\u0438 \u043d\u0430 "
        "\u0441\u0447\u0451\u0442 \u043e\u0441\u0430",
        "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0391\u0392\u0395",
        "Ok \u0441 5%",  # one letter is no word to read as another
        "\u043f\u0430\u0440\u043e\u043b\u044c",  # a Cyrillic word with letters no Latin one looks like
    ],
)
def test_words_of_text_written_in_their_own_script_are_not_named(text: str) -> None:
    assert lookalikes({"text": text}) == []


def test_keys_and_nested_values_are_read_and_the_list_is_capped() -> None:
    words = [f"b{CYRILLIC_A}d{i}" for i in range(MAX_LOOKALIKES + 3)]
    found = lookalikes({f"k{CYRILLIC_A}y": {"deep": [words]}})
    assert found[0].startswith(f'"k{CYRILLIC_A}y" mixes Cyrillic')
    assert len(found) == MAX_LOOKALIKES + 1
    assert found[-1] == "and 4 more such words"


def test_a_word_past_the_checked_length_is_not_read_and_the_list_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call with megabytes of words beyond ASCII would take the inbox seconds a page (each word's
    letters looked up); what is read is bounded, and the person told that the rest was not."""
    read: list[str] = []
    mixed = agent.text._mixed
    monkeypatch.setattr(agent.text, "_mixed", lambda word: read.append(word) or mixed(word))
    filler = [
        f"\u0441\u043b\u043e\u0432\u043e{i}" for i in range(MAX_CHECKED_CHARS // 6)
    ]  # 'word' in Russian
    assert sum(map(len, filler)) > MAX_CHECKED_CHARS
    found = lookalikes({"note": " ".join([LOOKALIKE_TO, *filler]), "to": f"b{CYRILLIC_A}d"})
    assert found == [WARNING, NOT_ALL_CHECKED]  # the second value is past the bound: not read
    assert sum(map(len, read)) <= MAX_CHECKED_CHARS
    assert lookalikes(" ".join(filler[:100]) + f" b{CYRILLIC_A}d") == [
        f'"b{CYRILLIC_A}d" mixes Cyrillic "{CYRILLIC_A}" (U+0430) with Latin'
    ]


def test_a_word_said_many_times_is_read_once_and_named_once() -> None:
    assert lookalikes([f"b{CYRILLIC_A}d " * 100_000, f"b{CYRILLIC_A}d"]) == [
        f'"b{CYRILLIC_A}d" mixes Cyrillic "{CYRILLIC_A}" (U+0430) with Latin'
    ]


def test_the_inbox_says_to_look_closely_at_a_call_whose_address_mixes_scripts(
    tmp_path: Path, page: object
) -> None:
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as server:
        odd = _start(server, tmp_path / "odd", "lookalike_mail", "waiting")
        plain = _start(server, tmp_path / "plain", "plain_mail", "waiting")
        with server.client() as api:
            listed = {item["run_id"]: item["look_closely"] for item in api.get("/pending").json()["pending"]}
        assert listed == {odd: [WARNING], plain: []}
        _sign_in(page, server)
        alert = page.locator(f"#run-{odd} .lookalikes")
        expect(alert).to_contain_text("Look closely:")
        expect(alert).to_contain_text(WARNING)
        assert page.locator(f"#run-{odd} pre.arguments").inner_text().count(LOOKALIKE_TO) == 1
        expect(page.locator(f"#run-{plain} .call code")).to_have_text("send_mail")
        assert page.locator(f"#run-{plain} .lookalikes").count() == 0  # Zurich, Tokyo: nothing to see
        page.locator(f"#run-{odd} form.approve button").click()
        with server.client() as api:
            wait_status(api, odd, "finished")
    [sent] = (tmp_path / "odd" / "sent.txt").read_text().splitlines()
    assert json.loads(sent)["to"] == LOOKALIKE_TO  # the call got what was shown


def test_pending_says_to_look_closely_at_a_call_whose_address_mixes_scripts(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    for run_id, script in (("odd", "lookalike_mail"), ("plain", "plain_mail")):
        (tmp_path / run_id).mkdir()
        state = f'{{"dir": "{tmp_path / run_id}", "script": "{script}"}}'
        _endstate("start", "mailer", "mail alice", "--state", state, "--run-id", run_id, "--catalog", CATALOG,
                  "--store", store, cwd=tmp_path)  # fmt: skip
    said = _endstate("pending", "--store", store, cwd=tmp_path)
    assert f"! look closely: {WARNING}" in said
    assert said.count("look closely") == 1, said


def _endstate(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        cwd=cwd, env=env_with_tests(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr
