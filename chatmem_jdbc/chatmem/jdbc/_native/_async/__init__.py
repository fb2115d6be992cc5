"""The fast paths, one module per database beside its dialect, in both twins: ``_async/`` is
the source and ``_sync/`` is generated from it by scripts/unasync.py."""
