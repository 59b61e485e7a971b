"""PostgreSQL backend: Django's own, with a bound on how long any call waits for the server."""
