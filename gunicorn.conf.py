"""Gunicorn settings read from the project root (`gunicorn memoryproject.wsgi`)."""


def post_worker_init(worker):  # noqa: ANN001, ANN201 (gunicorn's hook signature)
    """Load the word segmenter, the embedding model and recall's background statements in each
    new worker before it serves, so the first requests after a start are not a second slower."""
    from memories.ltm.embedder import embedder
    from memories.ltm.text import warm_up
    from memories.recall.semantic import warm_up as semantic_warm_up

    warm_up()
    try:
        embedder()
        semantic_warm_up()
    except Exception:  # noqa: BLE001 - a remote embedder may be down now; recall reports it later
        worker.log.warning("the embedder could not be loaded at start", exc_info=True)
