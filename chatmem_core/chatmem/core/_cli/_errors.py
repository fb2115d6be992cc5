"""The command's exit codes and the errors that carry them.

0 ok; 1 not found, a conflict, or the store failed; 2 usage or input error; 141 (128 +
SIGPIPE) when the reader of stdout went away, as ``cat`` or ``ls`` report it.
"""

from __future__ import annotations

from .._errors import InvalidArgumentError

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 128 + 13

EXIT_CODES_HELP = """\
exit status:
  0    success
  1    not found (unknown conversation id, missing store), a conflict (import without
       --replace), or the store failed (unreachable, schema missing)
  2    usage or input error (bad option or URL, malformed import file)
  141  stdout was closed early (e.g. piped into head), like other Unix tools

Data goes to stdout; progress, summaries, warnings and errors go to stderr."""

# library argument names -> the option or argument a command-line user typed
OPTION_NAMES = {
    "url": "--url",
    "table_name": "--table-name",
    "max_messages": "--window",
    "limit": "--page-size",
    "page_size": "--page-size",
    "conversation_id": "ID",
    "input": "FILE",
}


class CliError(Exception):
    """A user-facing failure: ``message`` printed after ``chatmem:``, then exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_NOT_FOUND) -> None:
        super().__init__(message)
        self.code = code


class UsageError(CliError):
    """Bad command-line input (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


def as_usage_error(exc: InvalidArgumentError, option: str | None = None) -> UsageError:
    """Rephrase a library argument error so it names the command-line option instead."""
    name = option or OPTION_NAMES.get(exc.argument, exc.argument)
    text = str(exc)
    prefix = f"{exc.argument}: "
    return UsageError(f"{name}: {text[len(prefix) :] if text.startswith(prefix) else text}")
