"""How facts compare: the normalised form that write fingerprints and recall dedupes by.

Below both pipelines, so recall never imports the write services to compare two facts.
"""

from __future__ import annotations

import re

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalise_fact(text: str) -> str:
    """Lower case, without punctuation, spaces or underscores."""
    return _NON_WORD.sub("", text.lower())
