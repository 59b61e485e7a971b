"""Ledgers of Layers 2 and 3 live here; the memory items themselves live in Redis, ES and Milvus."""
