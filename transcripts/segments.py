"""The segment format: one JSON header line, then one JSON line per event.

The header records the SHA-256 of the previous segment, so changing any stored byte breaks
the chain at that segment.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

FORMAT_VERSION = 1


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


def encode_segment(*, header: dict[str, Any], events: Sequence[dict[str, Any]]) -> bytes:
    lines = [_dumps({"format": FORMAT_VERSION, **header}), *(_dumps(e) for e in events)]
    return ("\n".join(lines) + "\n").encode()


def decode_segment(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and events of a segment; ValueError when it is not a well-formed segment."""
    lines = data.decode().splitlines()
    if not lines:
        raise ValueError("empty segment")
    header, *events = (json.loads(line) for line in lines)
    if not isinstance(header, dict) or header.get("format") != FORMAT_VERSION:
        raise ValueError("missing or unknown segment header")
    return header, events


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def event_digest(*, role: str, content: str, tool_call_id: str, metadata: dict[str, Any]) -> str:
    """What makes two events 'the same' when a client retries an append."""
    payload = _dumps([role, content, tool_call_id, metadata])
    return hashlib.sha256(payload.encode()).hexdigest()
