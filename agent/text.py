"""Text that UTF-8 cannot hold (a lone surrogate, as in a file name decoded with `surrogateescape`),
and values that standard JSON cannot (NaN and the infinities); JSON read from outside, strictly; long
text clipped from its start."""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def flat_clip(text: str, limit: int) -> str:
    """`text`'s first `limit` characters (its last three `...` when it was cut), its blanks made single
    spaces. Read from a start that grows until it gives more than `limit`: the start's words are the
    first words of the whole, and a result of many megabytes is not split whole, word by word, for
    its first few hundred characters."""
    start = max(4 * limit, 64)
    while True:
        words = " ".join(text[:start].split())
        if len(words) > limit or start >= len(text):
            break
        start *= 4
    return words if len(words) <= limit else words[: limit - 3] + "..."


def without_lone_surrogates(text: str) -> str:
    """The text with every lone surrogate as U+FFFD (the replacement character)."""
    return LONE_SURROGATE.sub("\ufffd", text)


# Characters that `str.isprintable` calls printable but that show nothing or hide text: variation
# selectors (they can carry hidden text after any character) and the combining grapheme joiner.
_PRINTABLE_BUT_HIDDEN = re.compile("[\u034f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_KEPT = frozenset("\n\t ")  # line breaks and tabs lay out a preview or a diff


def visible(text: str) -> str:
    """`text` with every character that a page or a terminal would not show as itself (controls
    and escape sequences, bidi overrides and isolates, zero-width and other format characters,
    separators other than the space, lone surrogates, private-use and unassigned code points,
    variation selectors) as `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`; line breaks and tabs are kept, a
    carriage return is escaped. Text from a model or a tool is text from outside: a right-to-left
    override shows `evil.example\\u202e` as another address, a zero-width space makes two values
    look the same, an escape sequence retitles or rewrites the reader's terminal."""
    if all_shown(text):
        return text
    return "".join(c if shown(c) else escaped(c) for c in text)


def all_shown(text: str) -> bool:
    """True when `visible` keeps all of `text` (checked at C speed; a line break or tab says False)."""
    return text.isprintable() and not _PRINTABLE_BUT_HIDDEN.search(text)


def shown(char: str) -> bool:
    """True when `visible` keeps `char` as it is."""
    return char in _KEPT or (char.isprintable() and not _PRINTABLE_BUT_HIDDEN.match(char))


def says_something(text: str) -> bool:
    """True when `text` shows a character that is not a space: a text of blanks, or of characters
    that show nothing (zero-width spaces, controls, variation selectors), says nothing."""
    return any(shown(c) and not c.isspace() for c in text)


def escaped(char: str) -> str:
    """`char` as the escape `visible` writes: `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN` (YAML's double-quoted
    escapes too)."""
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def written(value: Any) -> str:
    """`repr(value)` as a plain `str`, or its type's name when its `repr` raises or gives no string."""
    try:
        text = repr(value)
    except Exception:
        text = None
    return (
        str.__str__(text)
        if isinstance(text, str)
        else f"<a {type(value).__qualname__} that cannot be written>"
    )


def one_line(text: str) -> str:
    """`text` to print on one terminal line: line breaks and tabs as spaces, and what `visible`
    escapes as escapes. A model's note or question is text from outside: printed as is, its escape
    sequences could retitle, clear or rewrite the reader's terminal, a carriage return put other
    words over it, or a zero-width character hide what it says."""
    return visible(text.replace("\r\n", " ").replace("\n", " ").replace("\t", " "))


SHOWN_DEPTH = 255  # levels of nesting a response shows (what a run may keep: `_codec.MAX_DEPTH`)
TOO_DEEP = f"(nested deeper than {SHOWN_DEPTH} levels: not shown)"


def json_ready(value: Any, depth: int = 0) -> Any:
    """`value` as standard JSON holds it: NaN and the infinities as null, lone surrogates as U+FFFD,
    what nests deeper than `SHOWN_DEPTH` as `TOO_DEEP`.

    What a run's state or a model's arguments may hold in Python; the service's responses and
    the command line's `--json` lines must still be JSON that any parser reads (a state stored
    deeper by an older release made every listing fail with a RecursionError)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, dict | list | tuple) and depth >= SHOWN_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {json_ready(k): json_ready(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v, depth + 1) for v in value]
    return value


def json_text(value: Any, **options: Any) -> str:
    """Standard JSON for `value` (see `json_ready`); `options` as for `json.dumps`."""
    return json.dumps(json_ready(value), allow_nan=False, **options)


class NotStandardJSON(ValueError):
    """Input that is not standard JSON; the message says what is wrong and what to send instead."""


def strict_json(raw: str | bytes, what: str) -> Any:
    """`raw` (`what`, as the message names it: "the body", "--state") read as standard JSON, or a
    `NotStandardJSON` saying why not: not JSON or not UTF-8, NaN or an infinity (1e999 too, which
    reads as one), a number too long to read (over 4300 digits), nesting deeper than the parser
    goes, a key twice in one object (readers disagree on which one counts)."""
    try:
        return json.loads(
            raw,
            parse_constant=functools.partial(_refuse_constant, what),
            parse_float=functools.partial(_finite, what),
            object_pairs_hook=functools.partial(_unique_keys, what),
        )
    except NotStandardJSON:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise NotStandardJSON(f"{what} is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise NotStandardJSON(f"{what} is not valid JSON here: it is nested too deeply") from exc
    except ValueError as exc:  # an integer of more digits than Python reads (4300)
        raise NotStandardJSON(f"{what} holds a number too long to read: {str(exc)[:120]}") from exc


def _refuse_constant(what: str, name: str) -> Any:
    raise NotStandardJSON(f"{what} is not standard JSON: {name} is not a JSON number; send a number or null")


def _finite(what: str, text: str) -> float:
    """A JSON number with a fraction or an exponent, refused when it reads as an infinity (1e999:
    too large for a double), as the literal Infinity is."""
    value = float(text)
    if math.isinf(value):
        raise NotStandardJSON(
            f"{what} holds the number {text[:40]}, too large to read (it would be an infinity); send a "
            "smaller number, or a string"
        )
    return value


def _unique_keys(what: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise NotStandardJSON(
                f"{what} holds the key {key[:80]!r} twice in one object (JSON readers disagree on which "
                "one counts); send each key once"
            )
        seen.add(key)
    return value  # not reached: some key came twice


# -- lookalike letters ----------------------------------------------------------------------------

# Scripts that a word may mix without suspicion (Unicode TS #39's "highly restrictive" level):
# Japanese, Chinese and Korean text mixes Han with kana, Bopomofo or Hangul, and Latin with all of them.
_MIXABLE = (
    frozenset({"Latin", "Han", "Hiragana", "Katakana"}),
    frozenset({"Latin", "Han", "Bopomofo"}),
    frozenset({"Latin", "Han", "Hangul"}),
)
_SCRIPT_OF_WORD = {"CJK": "Han", "IDEOGRAPHIC": "Han", "KATAKANA-HIRAGANA": ""}  # the last: both kanas'
MAX_LOOKALIKES = 5  # words named; past that, how many more
MAX_CHECKED_CHARS = 100_000  # of one value's words with letters beyond ASCII: a page shows at once
NOT_ALL_CHECKED = f"not all checked: only the first {MAX_CHECKED_CHARS:,} characters of words beyond ASCII"


def lookalikes(value: Any) -> list[str]:
    """What in `value` (a string, or JSON-like data whose keys and strings are read) a person should
    look at twice: each word (text between spaces) whose letters come from scripts that do not mix,
    such as an address whose first letter is a Cyrillic a (U+0430), which a page shows as the Latin
    address. Each as `"<word>" mixes Cyrillic "<letter>" (U+0430) with Latin`; letters in
    compatibility forms (fullwidth or mathematical letters) count as a script of their own. And each
    word written wholly in Cyrillic, Greek or Armenian letters that look Latin (Cyrillic
    "\u0440\u0430\u0443\u0440\u0430\u04cf" reads as paypal), unless its string holds a word of that
    script that cannot pass for Latin: then the string is written in that script, and its words are
    its own. Words past `MAX_CHECKED_CHARS` characters (of words beyond ASCII) are not read: the
    list ends saying so (`NOT_ALL_CHECKED`)."""
    found: dict[str, None] = {}  # in the order found, each once
    left, cut = MAX_CHECKED_CHARS, False
    for text in _strings(value):
        if text.isascii():
            continue
        words = [word for word in dict.fromkeys(text.split()) if not word.isascii()]
        checked = _first(words, left)
        left -= sum(map(len, checked))
        found.update(dict.fromkeys(filter(None, map(_mixed, checked))))
        found.update(dict.fromkeys(_reads_latin(checked)))
        if cut := len(checked) < len(words):
            break
    named = list(found)
    if len(named) > MAX_LOOKALIKES:
        named[MAX_LOOKALIKES:] = [f"and {len(named) - MAX_LOOKALIKES} more such words"]
    return [*named, NOT_ALL_CHECKED] if cut else named


def _first(words: list[str], chars: int) -> list[str]:
    """The first of `words` that together hold at most `chars` characters."""
    for i, word in enumerate(words):
        chars -= len(word)
        if chars < 0:
            return words[:i]
    return words


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth < SHOWN_DEPTH and isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, depth + 1)
            yield from _strings(item, depth + 1)
    elif depth < SHOWN_DEPTH and isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item, depth + 1)


def _mixed(word: str) -> str:
    """How `word` mixes scripts that do not mix, or "" when it does not."""
    if word.isascii():
        return ""
    letters: dict[str, list[str]] = {}
    for char in dict.fromkeys(word):
        script = _script(char)
        if script:
            letters.setdefault(script, []).append(char)
    if len(letters) < 2 or any(letters.keys() <= allowed for allowed in _MIXABLE):
        return ""
    main = max(letters, key=lambda s: (s == "Latin", len(letters[s])))
    others = "; ".join(f"{script} {_named(chars[:3])}" for script, chars in letters.items() if script != main)
    return f'"{visible(word[:80])}" mixes {others} with {main}'


# Letters that a page shows as Latin ones (prototypes in Unicode's confusables.txt): the letters a
# word in another script needs to pass for a Latin word or address.
_LOOKS_LATIN = frozenset(
    "\u0430\u0441\u0435\u04bb\u0456\u0458\u04cf\u043e"  # Cyrillic a c e h i j l o
    "\u0440\u051b\u0455\u0443\u0445\u0501\u051d\u04af"  # Cyrillic p q s y x d w y
    "\u0410\u0412\u0415\u041d\u0406\u0408\u041a\u041c\u041e"  # Cyrillic A B E H I J K M O
    "\u0420\u0421\u0405\u0422\u0425\u04ae\u051a\u051c\u04c0"  # Cyrillic P C S T X Y Q W l
    "\u03b1\u03b3\u03b9\u03bd\u03bf\u03c1\u03c5"  # Greek a y i v o p u
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a"  # Greek A B E Z H I K
    "\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7"  # Greek M N O P T Y X
    "\u0585\u057d\u0570\u0578\u0581\u0566\u054d\u0555"  # Armenian o u h n g q U O
)


def _reads_latin(words: list[str]) -> Iterator[str]:
    """How each of `words` (one string's) that is written wholly in letters of one other script that
    look Latin reads as Latin; none of a script that some other word shows the string is written in."""
    scripts = {word: _only_script(word) for word in words if not word.isascii()}
    written_in = {script for word, script in scripts.items() if script and not _looks_latin(word)}
    for word, script in scripts.items():
        if script and script not in written_in and _looks_latin(word):
            odd = [c for c in dict.fromkeys(word) if c in _LOOKS_LATIN][:4]
            yield f'"{visible(word[:80])}" is all {script} letters that look Latin: {_named(odd)}'


def _named(chars: list[str]) -> str:
    """Letters as a reader can find them: `"a" (U+0430), "o" (U+043E)`."""
    return ", ".join(f'"{visible(c)}" (U+{ord(c):04X})' for c in chars)


def _only_script(word: str) -> str:
    """The one script of `word`'s letters when it is Cyrillic, Greek or Armenian, else ""."""
    scripts = {_script(char) for char in word} - {""}
    return scripts.pop() if len(scripts) == 1 and scripts <= {"Cyrillic", "Greek", "Armenian"} else ""


def _looks_latin(word: str) -> bool:
    """Whether every letter of `word` passes for a Latin one, two letters at least."""
    letters = [char for char in word if char.isalpha()]
    return len(letters) >= 2 and all(char in _LOOKS_LATIN for char in letters)


@functools.lru_cache(maxsize=4096)  # a text holds few distinct letters, read once each
def _script(char: str) -> str:
    """The script of a letter or digit (the first word of its Unicode name, roughly), "" for other
    characters and ASCII digits; a compatibility form's is "compatibility form"."""
    if not (char.isalpha() or char.isdigit()) or (char.isascii() and char.isdigit()):
        return ""
    if unicodedata.normalize("NFKC", char) != char:
        return "compatibility form"
    first = unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]
    return _SCRIPT_OF_WORD.get(first, first.title())
