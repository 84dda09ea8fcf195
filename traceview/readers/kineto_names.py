"""Event names that torch.profiler writes as invalid JSON, and their repair.

Kineto's Chrome-trace writer puts each event's name between quotes without escaping it. With
Python events (``with_stack=True``) a frame's name is ``<file>(<line>): <function>``, and files
and functions are not always plain: a module docstring's opening line (``quantization.py(0):`` then three quotes),
a dict-like ``co_filename`` of code that dynamo generates (``{"device": "cpu"}(12): run``), a
source line holding quotes and a newline (pytorch/pytorch#113001), Windows paths with bare
backslashes (``torch\\cuda\\__init__.py``, #98432), bytes that are not UTF-8 (#136180). One such
name makes the whole file invalid JSON, and every JSON reader refuses all of it.

:func:`repair_names` finds each ``"name": "…"`` value that is not a valid JSON string, takes its
end to be the first quote followed by the next key Kineto writes (or the object's end), and
escapes what lies between: quotes, backslashes that begin no JSON escape, control characters;
bytes that are not UTF-8 become U+FFFD. Readers call it only after the document failed to decode
inside a name (:func:`in_a_name`), read the repaired text again, and say how many names they
repaired (``TraceMeta.notes``).
"""

from __future__ import annotations

import re

# A name key, and where its value begins.
_NAME_KEY = re.compile(rb'"name"\s*:\s*"')
# A valid JSON string's rest (after its opening quote) and what follows a value in an object.
_VALID_REST = re.compile(rb'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"\s*[,}]')
# The end of a broken value: the first quote followed by one of the keys Kineto writes in an
# event object after its name (libkineto/src/output_json.cpp: ph, cat, name, pid, tid, ts, dur,
# id, bp, s, args), or by the object's end and what may follow that (a comma, the array's or the
# enclosing object's end): a quote and a brace inside the name ('{"device": "cpu"}(12): run') are
# followed by other text.
_BROKEN_END = re.compile(rb'"(?=\s*,\s*"(?:ph|cat|name|pid|tid|ts|dur|id|bp|s|args)"\s*:|\s*\}\s*[,\]}])')
# Inside a broken value: a valid escape (kept), or a character JSON does not allow there.
_UNESCAPED = re.compile(rb'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})|[\\"\x00-\x1f]')


def _escape(match: re.Match[bytes]) -> bytes:
    text = match.group()
    if len(text) > 1:
        return text  # (a valid escape)
    if text in (b"\\", b'"'):
        return b"\\" + text
    return b"\\u%04x" % text[0]


def _repaired_value(value: bytes) -> bytes:
    """A broken name's text as the inside of a valid JSON string."""
    value = value.decode("utf-8", errors="replace").encode("utf-8")
    return _UNESCAPED.sub(_escape, value)


def repair_names(raw: bytes | memoryview) -> tuple[bytes, int]:
    """``raw`` with every event name that is not a valid JSON string (or not UTF-8) escaped, and
    how many were; ``(raw, 0)`` where none needed it or one's end cannot be told."""
    raw = bytes(raw)
    parts: list[bytes] = []
    done = 0  # where the text not yet copied begins
    repaired = 0
    for key in _NAME_KEY.finditer(raw):
        start = key.end()
        if start < done:
            continue  # (a name key inside a value already repaired)
        valid = _VALID_REST.match(raw, start)
        if valid is not None and _is_utf8(raw, start, valid.end()):
            continue
        end = _BROKEN_END.search(raw, start)
        if end is None:
            return raw, 0
        parts += [raw[done:start], _repaired_value(raw[start:end.start()])]
        done = end.start()
        repaired += 1
    if not repaired:
        return raw, 0
    parts.append(raw[done:])
    return b"".join(parts), repaired


# How far before a decoding error its name key may lie (a name of a few thousand characters at most:
# a frame's file and function, or a source line).
_NAME_REACH = 1 << 16


def in_a_name(raw: bytes | memoryview, position: int) -> bool:
    """Whether the byte at ``position`` (where a decoding failed) lies in an event name's value:
    after the last name key within _NAME_REACH before it and no later than that value's end as
    :func:`repair_names` would take it. Repairs are tried only then: a document broken elsewhere
    (truncated, cut mid-event) is refused at once, however large."""
    window = bytes(raw[max(0, position - _NAME_REACH):position + 1])
    keys = list(_NAME_KEY.finditer(window))
    if not keys:
        return False
    start = max(0, position - _NAME_REACH) + keys[-1].end()
    end = _BROKEN_END.search(bytes(raw[start:position + _NAME_REACH]))
    return end is not None and start + end.start() >= position


def _is_utf8(raw: bytes, start: int, end: int) -> bool:
    """Whether ``raw[start:end]`` is UTF-8 (ASCII, the usual case, checked without decoding)."""
    chunk = raw[start:end]
    if chunk.isascii():
        return True
    try:
        chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
