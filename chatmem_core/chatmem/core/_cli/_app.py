"""The parser (one ``register`` per command group) and ``main``: exit codes, streams, and no
traceback for any user error."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from .._errors import (
    ChatMemoryError,
    InvalidArgumentError,
    MissingDependencyError,
    SchemaError,
)
from . import _demo, _inspect, _longterm, _move
from ._args import SubParsers
from ._errors import (
    EXIT_BROKEN_PIPE,
    EXIT_CODES_HELP,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    as_usage_error,
)
from ._stores import DEFAULT_URL, URL_ENV

# Each command group registers its subcommands; adding a group is one entry here.
COMMAND_GROUPS: list[Callable[[SubParsers], None]] = [
    _demo.register,
    _inspect.register,
    _move.register,
    _longterm.register,
]

DESCRIPTION = """\
chatmem: durable conversation memory for LLM applications.

Look into any chatmem store by URL (SQLite, PostgreSQL, MySQL/MariaDB, SQL Server,
Oracle, Redis, MongoDB, Cassandra, Neo4j), move conversations between stores and files,
and run a demo of the window memory."""

EPILOG = f"""\
store URLs: sqlite:///chat.db, postgresql://user:pw@host/db, redis://host:6379/0,
  mongodb://host/db, cassandra://host/keyspace, bolt://user:pw@host, ...
  Reading commands (ls, show, stats, export, migrate --from) never create a store and
  default to ${URL_ENV}, else the demo store {DEFAULT_URL}. Writing commands
  (rm, import, migrate --to) need --url or ${URL_ENV}.

{EXIT_CODES_HELP}

Run "chatmem COMMAND --help" for a command's options."""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps line breaks in descriptions and lists commands like options (no bare
    ``COMMAND`` line above them)."""

    def _format_action(self, action: argparse.Action) -> str:
        if isinstance(action, argparse._SubParsersAction):
            return "".join(self._format_action(a) for a in action._get_subactions())
        return super()._format_action(action)


def build_parser() -> argparse.ArgumentParser:
    """The whole command-line grammar."""
    parser = argparse.ArgumentParser(
        prog="chatmem",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"chatmem {__version__}")
    parser.add_argument(
        "--url",
        default=None,
        metavar="URL",
        help=f"store URL for the command (also accepted after it; default ${URL_ENV})",
    )
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    for register in COMMAND_GROUPS:
        register(sub)
    return parser


def _fail(message: str, code: int) -> int:
    print(f"chatmem: {message}", file=sys.stderr)
    return code


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `chatmem`: the help, as git/cargo/docker do; not an error
        parser.print_help()
        return EXIT_OK
    try:
        code: int = args.handler(args, sys.stdout, sys.stderr)
        sys.stdout.flush()  # a closed pipe surfaces here, inside the handling below
        return code
    except BrokenPipeError:
        raise
    except CliError as exc:
        return _fail(str(exc), exc.code)
    except InvalidArgumentError as exc:
        return _fail(str(as_usage_error(exc)), EXIT_USAGE)
    except SchemaError as exc:
        return _fail(f"{exc} (run `chatmem schema --url URL` for the DDL)", EXIT_NOT_FOUND)
    except (ChatMemoryError, MissingDependencyError) as exc:
        return _fail(str(exc), EXIT_NOT_FOUND)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except Exception as exc:  # no traceback for users; CHATMEM_DEBUG=1 shows it
        if os.environ.get("CHATMEM_DEBUG"):
            raise
        return _fail(
            f"unexpected {type(exc).__name__}: {exc} (set CHATMEM_DEBUG=1 for the traceback)",
            EXIT_NOT_FOUND,
        )


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``chatmem`` console script; returns the exit status."""
    try:
        return _run(argv)
    except BrokenPipeError:  # the reader went away (`chatmem ls | head -1`): stop quietly
        _silence_stdout()
        return EXIT_BROKEN_PIPE
