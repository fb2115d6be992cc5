"""The I/O modules of ``chatmem.integrations``, in both twins: ``_async/`` is the source and
``_sync/`` is generated from it by scripts/unasync.py."""
