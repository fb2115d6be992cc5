"""One module per backend, each defining ``HARNESS`` (see ``conformance_tests/harness.py``)."""
