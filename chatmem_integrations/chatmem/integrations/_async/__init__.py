"""The I/O modules of ``chatmem.integrations``, written once: the modules here are the
source, ``_sync/`` holds the twins scripts/unasync.py generates from them (never edit those).
Each twin calls only its own kind of repository or client (see the package docstring)."""
