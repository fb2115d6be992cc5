"""The ``chatmem`` command (argparse, no dependency): a demo, a look into any store by URL,
and moving data between stores and files. ``main`` is the console script's entry point."""

from ._app import build_parser, main

__all__ = ["build_parser", "main"]
