"""Whose word a profile value is: free text from a key its tenant did not mark a trusted writer
waits for a reviewer instead of landing in Layer 1.

A profile value is injected into every recall as the user's own rule ("User / environment
profile: - Answer style: ..."). A sentence there is a standing instruction, so like an untrusted
agent's constraint it is the user's only when the user said it, a reviewer approved it or a
trusted key wrote it. Identifiers, numbers and flags (`brief_first`, `dev`, `Europe/Berlin`, 30,
true; at most two words) and the validated fields (language, timezone, roles) carry no
instruction and land.

The verification queue lives above Layer 1, in the memories app, which registers its recorder
here when it starts (`register_verification_recorder`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# A value of nothing but these reads as an identifier, not as a sentence to the model...
_IDENTIFIER = re.compile(r"[A-Za-z0-9_.:/@+#-]{1,64}")
# ...unless it strings three words or more together (`never_ask_before_deleting`): a sentence
# in snake case is still a sentence.
_WORD = re.compile(r"[A-Za-z]{2,}")
IDENTIFIER_WORDS = 2


class ProfileHoldReason:
    PREFERENCE = "untrusted_preference"
    PROFILE_FACT = "untrusted_profile_fact"


def reads_as_text(value: Any) -> bool:
    """True for a value that could say something to the model: any string that is not a bare
    identifier of at most two words, or a list or mapping holding one."""
    if isinstance(value, str):
        token = value.strip()
        if not token:
            return False
        return _IDENTIFIER.fullmatch(token) is None or len(_WORD.findall(token)) > IDENTIFIER_WORDS
    if isinstance(value, Mapping):
        return any(reads_as_text(key) or reads_as_text(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return any(reads_as_text(item) for item in value)
    return False


@dataclass(frozen=True)
class ProfileHold:
    """One untrusted free-text value to keep for a reviewer: `name` is its stable name
    (`preferences.preference.answer_style`, `facts.<key>@<project>`, `profile.display_name`),
    `part` the patch that approval applies."""

    external_id: str
    name: str
    memory_type: str  # preference, fact or profile
    value: Any
    part: dict[str, Any]

    @property
    def reason(self) -> str:
        if self.memory_type == "preference":
            return ProfileHoldReason.PREFERENCE
        return ProfileHoldReason.PROFILE_FACT


# (tenant, hold, actor) -> {"request_id": ..., "status": "pending" | "rejected"}
VerificationRecorder = Callable[..., dict[str, str]]
_recorders: list[VerificationRecorder] = []


def register_verification_recorder(recorder: VerificationRecorder) -> None:
    if recorder not in _recorders:
        _recorders.append(recorder)


def hold_for_verification(*, tenant: Any, hold: ProfileHold, actor: Any) -> dict[str, str]:
    """Keep `hold` in the verification queue (inside the caller's transaction); the queue's
    answer says the request and whether a reviewer already rejected the same value."""
    if not _recorders:
        raise RuntimeError("No verification queue is registered (the memories app sets it up).")
    return _recorders[0](tenant=tenant, hold=hold, actor=actor)
