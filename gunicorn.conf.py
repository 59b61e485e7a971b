"""Gunicorn settings read from the project root (`gunicorn memoryproject.wsgi`)."""


def post_worker_init(worker):  # noqa: ANN001, ANN201 (gunicorn's hook signature)
    """Load the word segmenter and the embedding model in each new worker before it serves,
    so the first requests after a start or a worker restart are not a second slower."""
    from memories.ltm.embedder import embedder
    from memories.ltm.text import warm_up

    warm_up()
    try:
        embedder()
    except Exception:  # noqa: BLE001 - a remote embedder may be down now; recall reports it later
        worker.log.warning("the embedder could not be loaded at start", exc_info=True)
