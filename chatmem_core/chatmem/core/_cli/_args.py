"""Shared pieces of the command-line grammar: argument types that name the option they check,
the ``--url`` option, and ``add_command`` so each command group registers itself in a line."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO, TypeAlias

from .._errors import InvalidArgumentError
from .._sync.repository import BaseChatMemoryRepository
from .._validation import sql_identifier, validate_conversation_id
from ._stores import DEFAULT_URL, URL_ENV

if TYPE_CHECKING:
    SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
else:
    SubParsers = argparse._SubParsersAction

# A command: (parsed arguments, stdout, stderr) -> exit code.
Handler = Callable[[argparse.Namespace, TextIO, TextIO], int]


def positive_int(text: str) -> int:
    """argparse type: an int >= 1 (argparse names the option in its error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def conversation_id_arg(text: str) -> str:
    """argparse type: a conversation id the store would accept (checked before any I/O)."""
    try:
        return validate_conversation_id(text)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


def table_name_arg(text: str) -> str:
    """argparse type: a SQL table name (checked here so the error names ``--table-name``)."""
    try:
        return sql_identifier(text)
    except InvalidArgumentError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


def add_url_option(parser: argparse.ArgumentParser, *, writes: bool) -> None:
    """``--url`` on a command; its help says where the default comes from."""
    if writes:
        text = f"store URL (required unless ${URL_ENV} is set; never the demo store)"
    else:
        text = f"store URL (default: ${URL_ENV}, else the demo store {DEFAULT_URL})"
    parser.add_argument("--url", default=argparse.SUPPRESS, metavar="URL", help=text)


def add_command(
    sub: SubParsers,
    name: str,
    handler: Handler,
    *,
    summary: str,
    description: str,
    url: bool = True,
    writes: bool = False,
    epilog: str | None = None,
) -> argparse.ArgumentParser:
    """Register subcommand ``name`` (``summary`` in the command list, ``description`` atop
    its own help) running ``handler``; ``writes`` makes ``--url`` mandatory."""
    parser = sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if url:
        add_url_option(parser, writes=writes)
    parser.set_defaults(handler=handler, writes=writes)
    return parser


def add_page_size(parser: argparse.ArgumentParser, default: int = 1000) -> None:
    """``--page-size N``: how many ids one round trip to the store lists."""
    parser.add_argument(
        "--page-size",
        type=positive_int,
        default=default,
        metavar="N",
        help=f"conversation ids listed per round trip to the store (default {default})",
    )


@contextmanager
def closing(repo: BaseChatMemoryRepository) -> Iterator[BaseChatMemoryRepository]:
    """Close a repository built from a URL (its connections) when the command ends."""
    try:
        yield repo
    finally:
        close = getattr(repo, "close", None)
        if callable(close):
            close()
