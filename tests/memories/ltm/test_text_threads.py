"""Index terms are the same whichever threads compute them at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from memories.ltm.text import bm25_terms

TEXTS = [
    "Caroline was running errands and adopted two puppies yesterday",
    "Melanie's kids loved camping; they were singing and roasting marshmallows",
    "The deployment pipelines kept failing while the engineers were debugging connections",
] * 200


def test_terms_are_the_same_from_many_threads_at_once() -> None:
    expected = [bm25_terms(text) for text in TEXTS]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(5):
            assert list(pool.map(bm25_terms, TEXTS)) == expected
