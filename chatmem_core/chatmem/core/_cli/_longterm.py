"""``chatmem memories ...`` and ``chatmem serve``: the long-term memory group, defined in
``chatmem.core.longterm._cli`` and plugged in here with this module's conventions (which
store, exit codes and error handling come from ``_app``)."""

from __future__ import annotations

import argparse
from typing import TextIO

from ._args import SubParsers, add_url_option
from ._stores import resolve_url

# memories subcommands that only read; the others (and serve) need an explicit store
READING = ("ls", "schema")


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..longterm import _cli as longterm_cli

    sub = getattr(args, "memories_command", None)
    writes = args.command == "serve" or sub not in READING
    name = args.command if sub is None else f"{args.command} {sub}"
    args.url = resolve_url(getattr(args, "url", None), writes=writes, command=name)
    return longterm_cli.run(args, out)


def register(sub: SubParsers) -> None:
    """Add the long-term group's parsers and route them to its ``run``."""
    from ..longterm import _cli as longterm_cli

    common = argparse.ArgumentParser(add_help=False)
    add_url_option(common, writes=False)
    longterm_cli.add_parsers(sub, common)
    for name in longterm_cli.COMMANDS:
        sub.choices[name].set_defaults(handler=_run, writes=True)
