"""The logging set-up: pymilvus's client-side timestamp notice is dropped, its other lines kept."""

from __future__ import annotations

import logging

import pymilvus.client.iterator.query_iterator as query_iterator
import pymilvus.client.iterator.search_iterator as search_iterator


def _record(logger: logging.Logger, message: str) -> logging.LogRecord:
    return logger.makeRecord(logger.name, logging.WARNING, __file__, 1, message, (), None)


def test_the_client_side_ts_notice_of_milvus_iterators_is_dropped() -> None:
    # pymilvus configures its loggers when imported (here after Django's set-up): the filter
    # has to outlive that.
    for module in (query_iterator, search_iterator):
        logger = module.log
        notice = "failed to get mvccTs from milvus server, use client-side ts instead"
        assert not logger.filter(_record(logger, notice))
        assert not logger.filter(
            _record(logger, "failed to set up mvccTs from probe call, use client-side ts instead")
        )
        assert logger.filter(_record(logger, "failed to connect to milvus for setting up mvccTs"))
        assert logger.filter(_record(logger, "any other warning"))
