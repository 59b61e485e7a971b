"""The top of the service: the URL table, liveness and readiness, `/metrics` and the path
converters. It sees every layer and nothing imports it (an import-linter contract); Django
finds it by name through `ROOT_URLCONF`."""
