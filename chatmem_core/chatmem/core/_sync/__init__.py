# Generated from chatmem_core/chatmem/core/_async/__init__.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The I/O modules of ``chatmem.core``, in both twins: ``_async/`` is the source and
``_sync/`` is generated from it by scripts/unasync.py, file for file (the twins differ only by
the script's renames and the twin blocks it documents)."""
