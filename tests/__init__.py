"""The harness's own tests (``make test``); helpers in :mod:`tests.support`, broken ports in ``tests/ports``."""
