# Generated from chatmem_core/chatmem/core/longterm/_async/__init__.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The I/O modules of ``chatmem.core.longterm`` in both twins: ``_async/`` is the source,
``_sync/`` is generated from it by scripts/unasync.py."""
