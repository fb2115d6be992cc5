"""The I/O modules of ``chatmem.core.longterm`` in both twins: ``_async/`` is the source,
``_sync/`` is generated from it by scripts/unasync.py."""
