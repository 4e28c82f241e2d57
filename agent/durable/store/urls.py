"""Store URLs: the SQLite path a URL names, and a URL fit to print (no password, in any form)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

MASK = "***"
_SECRET_PARAM = re.compile(r"(?i)([?&;](?:ssl)?pass(?:word|wd)?=)([^&#]*)")
# libpq's other form, `host=db user=u password=p dbname=runs`: key=value words, one a libpq key
_CONNINFO = re.compile(r"(?:\s*[A-Za-z_]+\s*=\s*(?:'[^']*'|\S*))+\s*")
_CONNINFO_KEY = re.compile(r"(?i)(?:^|\s)(?:host|hostaddr|port|dbname|user|password|service)\s*=")
_CONNINFO_SECRET = re.compile(r"(?i)(password\s*=\s*)('[^']*'|\S*)")


# a URL whose "://" is mistyped (`postgresql:/u:p@h/db`, `postgres//...`, `mysql:/x`): taken as a
# path, it made a SQLite file in folders of that name, the password in one
_MISTYPED = re.compile(r"(?i)[a-z][a-z0-9+.-]*:/|postgres(?:ql)?(?::|//)")
_USER_SECRET = re.compile(r"^([^@]*?[/:][^/:@]*:)([^@]*)(@)")


def mistyped_url(text: str) -> str | None:
    """`text` without its password when it starts as a URL whose `://` is mistyped, else None."""
    if "://" in text or text.lower().startswith("sqlite:") or not _MISTYPED.match(text):
        return None
    return _USER_SECRET.sub(lambda m: m.group(1) + MASK + m.group(3), text)


def conninfo(text: str) -> str | None:
    """`text` shown without its password when it is a libpq key=value connection string (which
    Endstate does not take: it names no file and no URL), else None."""
    if not (_CONNINFO.fullmatch(text) and _CONNINFO_KEY.search(text)):
        return None
    return _CONNINFO_SECRET.sub(lambda m: m.group(1) + MASK, text)


def sqlite_path(url: str) -> Path | None:
    """The file a SQLite store URL names, or None for another kind of URL.

    `sqlite:///runs.db` is relative to the working directory, `sqlite:////srv/runs.db`
    is absolute (as in SQLAlchemy); `sqlite:runs.db` and a bare path work too.
    """
    if url.startswith("sqlite:"):
        rest = url.removeprefix("sqlite:")
        return Path(rest[3:] if rest.startswith("///") else rest.removeprefix("//"))
    return None if "://" in url else Path(url)


def shown_url(url: str) -> str:
    """`url` with every password masked: `user:***@`, `?password=***`, whatever characters it holds."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    head, mark, tail = _split_query(rest)
    at = head.rfind("@")  # a password may hold '@' or '/': the user part ends at the last '@'
    if at >= 0 and ":" in head[:at]:
        head = head[: head.index(":")] + ":" + MASK + head[at:]
    query = _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, "&" + tail)[1:]
    return f"{scheme}://{head}{mark}{query}"


def secrets_in(url: str) -> list[str]:
    """Every password `url` holds, raw and percent-decoded, longest first (to scrub from text)."""
    found: list[str] = []
    _, sep, rest = url.partition("://")
    if sep:
        head, _, tail = _split_query(rest)
        at = head.rfind("@")
        if at >= 0 and ":" in head[:at]:
            password = head[head.index(":") + 1 : at]
            found.append(password)
            if "@" in password:  # libpq ends the password at its first '@' and reads the rest as host
                found.append(password.split("@", 1)[1] + "@")
        found += [m.group(2) for m in _SECRET_PARAM.finditer("&" + tail)]
    every = {s for s in found if s} | {unquote(s) for s in found if s}
    return sorted(every, key=len, reverse=True)


SHORT_SECRET = 8  # characters under which a password is masked only where it stands as a word of its own


def scrub(text: str, url: str | None) -> str:
    """`text` with the URL shown without its password and every password in it masked: wherever it
    is, or, a short one (a `p`), where it is not part of a longer word, so the words that happen to
    hold it stay readable (`port`, not `***ort`) while `:p@`, `password=p` and `"p"` are masked."""
    if not url:
        return text
    text = text.replace(url, shown_url(url))
    for secret in secrets_in(url):
        if len(secret) >= SHORT_SECRET:
            text = text.replace(secret, MASK)
        else:
            text = re.sub(_standing(secret), MASK, text)
    return text


def _standing(secret: str) -> str:
    """A pattern of `secret` where no letter or digit is beside its own letter or digit at an end."""
    before = r"(?<![^\W_])" if _ALNUM.match(secret[0]) else ""
    after = r"(?![^\W_])" if _ALNUM.match(secret[-1]) else ""
    return before + re.escape(secret) + after


_ALNUM = re.compile(r"[^\W_]")


def take_option(url: str, name: str) -> tuple[str, str | None]:
    """`url` without its query option `name`, and that option's value (None when it has none): an
    option of Endstate's own, which libpq would refuse as unknown."""
    scheme, sep, rest = url.partition("://")
    head, mark, query = _split_query(rest)
    if not sep or not mark:
        return url, None
    kept, value = [], None
    for part in query.split("&"):
        key, _, given = part.partition("=")
        if key == name:
            value = unquote(given)
        else:
            kept.append(part)
    if value is None:
        return url, None
    return f"{scheme}://{head}" + (f"?{'&'.join(kept)}" if kept else ""), value


def _split_query(rest: str) -> tuple[str, str, str]:
    """(everything before the query, '?' or '', the query): the query starts at the first '?'
    after the last '@' (a password may hold '?')."""
    at = rest.rfind("@")
    q = rest.find("?", at + 1 if at >= 0 else 0)
    return (rest, "", "") if q < 0 else (rest[:q], "?", rest[q + 1 :])
