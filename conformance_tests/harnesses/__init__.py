"""One module per backend, each defining ``HARNESS`` (see ``chatmem.testing.harness``)."""
