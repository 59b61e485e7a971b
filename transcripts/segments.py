"""The segment format: one JSON header line, then one JSON line per event.

The header records the SHA-256 of the previous segment, so changing any stored byte breaks
the chain at that segment.

Lines end with `\n` and nothing else separates them. JSON already escapes every control
character inside strings; the three other characters some readers take for line breaks
(U+0085, U+2028, U+2029) are written escaped as well, so no string can ever split a line.
Segments written before they were escaped hold them raw inside strings and read back the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

FORMAT_VERSION = 1

# Characters json.dumps(ensure_ascii=False) leaves raw that str.splitlines() breaks lines at.
_LINE_BREAK_ESCAPES = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


def _line(obj: Any) -> str:
    """One segment line: compact JSON in which nothing but the final `\n` breaks a line.

    The escapes stand only inside strings (JSON puts these characters nowhere else), where
    they decode to the same characters.
    """
    return _dumps(obj).translate(_LINE_BREAK_ESCAPES)


def encode_segment(*, header: dict[str, Any], events: Sequence[dict[str, Any]]) -> bytes:
    lines = [_line({"format": FORMAT_VERSION, **header}), *(_line(e) for e in events)]
    return ("\n".join(lines) + "\n").encode()


def decode_segment(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and events of a segment; ValueError when it is not a well-formed segment."""
    text = data.decode().removesuffix("\n")
    if not text:
        raise ValueError("empty segment")
    lines = text.split("\n")
    header, *events = (json.loads(line) for line in lines)
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        raise ValueError("missing or unknown segment header")
    return header, events


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def event_digest(*, role: str, content: str, tool_call_id: str, metadata: dict[str, Any]) -> str:
    """What makes two events 'the same' when a client retries an append.

    Built from the unescaped JSON, so digests recorded before line breaks were escaped in
    segments still match a retry of the same events.
    """
    payload = _dumps([role, content, tool_call_id, metadata])
    return hashlib.sha256(payload.encode()).hexdigest()
