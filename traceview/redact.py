"""Redaction: replace file paths, host names and user names with stable placeholders.

Pure functions over strings, shared by every output that can be handed to someone else
(``traceview export --redact`` today). Two kinds of replacement:

- *known secrets*, found in the trace metadata by :func:`secrets_of`: the recording host's name
  (and its short form before the first dot) becomes ``<host>``, user names seen in home-folder
  paths become ``<user>``. They are replaced wherever they appear as a whole word (not inside
  a longer word), so a file named ``myhost_1234.pt.trace.json`` becomes
  ``<host>_1234.pt.trace.json``. A host name shorter than three characters (``vm``) would
  mangle ordinary words in free text; it is replaced only where a value is the host itself (the
  report's host field, an XPlane file named ``vm.xplane.pb``).
- *patterns*, applied to any text by :func:`redact_text`: the folder part of an absolute path
  (``/home/alice/proj/train.py``, ``~/proj/train.py``, ``C:\\Users\\alice\\train.py``) becomes
  ``<path>/``, keeping only the file name (``<path>/train.py``).

Placeholders depend only on the input, so redacting the same traces twice gives the same bytes;
several distinct hosts (users) are numbered in the order given: ``<host-1>``, ``<host-2>``.
``redact_text`` is idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePath
from typing import Any


PATH_PLACEHOLDER = "<path>"
HOST_PLACEHOLDER = "host"
USER_PLACEHOLDER = "user"

# Characters that end a path component in free text (names, labels, file lists).
_COMPONENT = r"[^\s/\\\"'()<>\[\]{},;:|*?]+"
# ~/a/b/ or ~alice/a/ : the home-relative folder part.
_TILDE_DIR = re.compile(r"(?<![\w.\-<>/~])~[\w.\-]*/(?:" + _COMPONENT + r"/)*")
# /a/b/ : an absolute POSIX folder part (at least one folder), not inside a word or an a/b name.
_POSIX_DIR = re.compile(r"(?<![\w.\-<>/~])/(?:" + _COMPONENT + r"/)+")
# C:\a\b\ : a Windows folder part.
_WINDOWS_DIR = re.compile(r"(?<![\w])[A-Za-z]:\\(?:[^\s\\\"'<>|*?:]+\\)+")
# The user part of a home folder, to learn user names from paths.
_HOME_USER = re.compile(r"(?:/home/|/Users/|/users/|[A-Za-z]:\\Users\\)([^/\\\s\"'()<>:]+)")
# Never treated as a secret: too generic to be personal, and replacing them would mangle names.
_NOT_SECRET = frozenset({"", "localhost", "root", "user", "users", "home", "admin", "ubuntu", "runner"})
_MIN_SECRET_LEN = 3
# The profilers' default file names start with the host's name: TensorFlow / JAX write
# ``<host>.xplane.pb``; torch.profiler's tensorboard_trace_handler ``<host>_<pid>.<n>.pt.trace.json``.
_DEFAULT_NAME_HOST = re.compile(r"^([^._/\\]+)(?=[._])")


def redact_text(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with every known secret and every path folder replaced by its placeholder."""
    if not text:
        return text
    # Folders first: a secret replaced inside a path would hide the path from the patterns.
    out = _TILDE_DIR.sub(PATH_PLACEHOLDER + "/", text)
    out = _POSIX_DIR.sub(PATH_PLACEHOLDER + "/", out)
    out = _WINDOWS_DIR.sub(PATH_PLACEHOLDER + "\\\\", out)
    return _replace_secrets(out, secrets)


def redact_path(path: str | PurePath, secrets: Mapping[str, str]) -> str:
    """A file path reduced to ``<path>/<file name>`` (the file name itself redacted too; a
    name that starts as the profilers' default names do with the host's, loses it whatever its
    length)."""
    text = str(path)
    name = re.split(r"[/\\]", text)[-1]
    without_host = _DEFAULT_NAME_HOST.sub(lambda m: secrets[m.group(1)] if _is_host(m.group(1), secrets)
                                          else m.group(1), name, count=1)
    redacted = redact_text(without_host, secrets)
    return f"{PATH_PLACEHOLDER}/{redacted}" if name != text else redacted


def secrets_of(*metas: Any) -> dict[str, str]:
    """Host and user names found in trace metadata (``TraceMeta`` objects) → placeholder.

    Looks at ``host_name``, ``source``, the string values of ``extra`` and the notes. The same
    name in several traces gets one placeholder; distinct ones are numbered in argument order.
    """
    hosts: list[str] = []
    users: list[str] = []
    for meta in metas:
        host = str(getattr(meta, "host_name", "") or "").strip()
        if host:
            hosts.append(host)
        for text in _meta_texts(meta):
            users.extend(m.group(1) for m in _HOME_USER.finditer(text))
    return secrets_from(hosts=hosts, users=users)


def secrets_from(hosts: Iterable[str] = (), users: Iterable[str] = ()) -> dict[str, str]:
    """Placeholders for explicit host and user names (host ``a.b.c`` also covers ``a``). A host
    name too short to replace in free text is still in the map, for the fields that hold it."""
    secrets: dict[str, str] = {}
    host_names = _distinct(h for h in hosts if _nameable(h))
    for i, host in enumerate(host_names):
        label = _placeholder(HOST_PLACEHOLDER, i, len(host_names))
        secrets.setdefault(host, label)
        short = host.split(".", 1)[0]
        if _nameable(short):  # (one too short for free text is for fields: see the module's doc)
            secrets.setdefault(short, label)
    user_names = _distinct(u for u in users if _usable(u) and u not in secrets)
    for i, user in enumerate(user_names):
        secrets.setdefault(user, _placeholder(USER_PLACEHOLDER, i, len(user_names)))
    return secrets


def merge_secrets(*parts: Mapping[str, str]) -> dict[str, str]:
    """Several secret maps as one; the first placeholder given for a name wins."""
    merged: dict[str, str] = {}
    for part in parts:
        for key, value in part.items():
            merged.setdefault(key, value)
    return merged


def _is_host(name: str, secrets: Mapping[str, str]) -> bool:
    return secrets.get(name, "").startswith("<" + HOST_PLACEHOLDER)


def host_field(host: str, secrets: Mapping[str, str]) -> str:
    """A value that is a host's name and nothing else, redacted whatever the name's length."""
    return secrets.get(host.strip()) or redact_text(host, secrets)


def _replace_secrets(text: str, secrets: Mapping[str, str]) -> str:
    keys = tuple(sorted((k for k in secrets if len(k) >= _MIN_SECRET_LEN), key=lambda s: (-len(s), s)))
    if not keys:
        return text
    pattern = _secrets_pattern(keys)
    return pattern.sub(lambda m: secrets[m.group(0)], text)


_PATTERN_CACHE: dict[tuple[str, ...], re.Pattern[str]] = {}


def _secrets_pattern(keys: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation, longest first, each secret only as a whole word (letters/digits around it end it)."""
    pattern = _PATTERN_CACHE.get(keys)
    if pattern is None:
        body = "|".join(re.escape(k) for k in keys)
        pattern = re.compile(r"(?<![A-Za-z0-9])(?:" + body + r")(?![A-Za-z0-9])")
        if len(_PATTERN_CACHE) > 64:
            _PATTERN_CACHE.clear()
        _PATTERN_CACHE[keys] = pattern
    return pattern


def _meta_texts(meta: Any) -> list[str]:
    texts = [str(getattr(meta, "source", "") or "")]
    extra = getattr(meta, "extra", None) or {}
    texts.extend(str(v) for v in extra.values() if isinstance(v, str))
    texts.extend(str(n) for n in getattr(meta, "notes", None) or [])
    return texts


def _nameable(name: str) -> bool:
    """Whether a name can be a secret at all (not empty, not a generic one)."""
    return bool(name) and name.lower() not in _NOT_SECRET


def _usable(name: str) -> bool:
    """Whether a name is a secret to replace in free text too (long enough not to mangle words)."""
    return len(name) >= _MIN_SECRET_LEN and _nameable(name)


def _distinct(values: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        seen.setdefault(value, None)
    return list(seen)


def _placeholder(kind: str, index: int, count: int) -> str:
    return f"<{kind}>" if count == 1 else f"<{kind}-{index + 1}>"
