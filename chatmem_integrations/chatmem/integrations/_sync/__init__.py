# Generated from chatmem_integrations/chatmem/integrations/_async/__init__.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The I/O modules of ``chatmem.integrations``, in both twins: ``_async/`` is the source and
``_sync/`` is generated from it by scripts/unasync.py."""
