# Generated from chatmem_jdbc/chatmem/jdbc/_native/_async/__init__.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The fast paths, one module per database beside its dialect, in both twins: ``_async/`` is
the source and ``_sync/`` is generated from it by scripts/unasync.py."""
