"""``chatmem export | import | migrate``: move conversations between stores and files
without ever losing data by default (see ``chatmem.core._transfer``)."""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from .._transfer import (
    ImportConflictError,
    ImportIncompleteError,
    ImportResult,
    count_conversations,
    export_conversations,
    import_conversations,
    migrate,
)
from ._args import SubParsers, add_command, add_page_size, closing, conversation_id_arg
from ._errors import CliError, UsageError
from ._progress import ProgressBar
from ._stores import normalise_url, open_store, resolve_url


def _export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url = resolve_url(getattr(args, "url", None), writes=False, command="export")
    ids = args.ids or None
    with closing(open_store(url, option="--url", read_only=True)) as repo:
        if args.output == "-":
            result = export_conversations(repo, out, ids, page_size=args.page_size)
            where = "stdout"
        else:
            # Written beside the target and renamed into place: a failed export never leaves
            # a truncated file where a previous good one was.
            target = Path(args.output)
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
            except OSError as exc:
                raise UsageError(f"--output: cannot write {target}: {exc.strerror}") from None
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    result = export_conversations(repo, f, ids, page_size=args.page_size)
                os.replace(tmp, target)
            except BaseException:
                os.unlink(tmp)
                raise
            where = str(target)
    for cid in result.vanished:
        print(f"chatmem: warning: {cid!r} was deleted while exporting; not written", file=err)
    print(f"exported {result.written} conversations to {where}", file=err)
    return 0


def _summary(result: ImportResult) -> str:
    parts = [f"imported {result.conversations} conversations ({result.messages} messages)"]
    if result.skipped_existing:
        parts.append(f"skipped {len(result.skipped_existing)} already in the store")
    if result.deleted:
        parts.append(f"deleted {len(result.deleted)} (empty in the file, --replace)")
    if result.empty:
        parts.append(f"ignored {len(result.empty)} empty records")
    return ", ".join(parts)


def _stdin() -> TextIO:
    """stdin decoded as strict UTF-8 whatever the locale (a C locale would otherwise smuggle
    undecodable bytes in as surrogates)."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # replaced by a text stream (tests, embedding)
        return sys.stdin
    return io.TextIOWrapper(buffer, encoding="utf-8", errors="strict")


def _import(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url = resolve_url(getattr(args, "url", None), writes=True, command="import")
    try:
        source = _stdin() if args.input == "-" else open(args.input, encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise UsageError(f"FILE: cannot read {args.input}: {exc.strerror}") from None
    try:
        with closing(open_store(url, option="--url", read_only=False)) as repo:
            result = import_conversations(
                repo, source, replace=args.replace, skip_existing=args.skip_existing
            )
    except ImportConflictError as exc:
        raise CliError(
            f"{exc}. Pass --replace to overwrite them or --skip-existing to keep them."
        ) from None
    except ImportIncompleteError as exc:
        for cid in exc.result.skipped_existing:
            print(f"skipped {cid!r}: already in the store", file=err)
        print(f"before the failure: {_summary(exc.result)}", file=err)
        again = "the same command" if args.replace else "it again with --skip-existing"
        raise CliError(f"{exc}. Once the store is fixed, run {again} to add the rest.") from None
    finally:
        if args.input != "-":
            source.close()
    for cid in result.skipped_existing:
        print(f"skipped {cid!r}: already in the store", file=err)
    print(_summary(result), file=err)
    return 0


def _migrate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    source_url, target_url = normalise_url(args.source), normalise_url(args.target)
    if source_url == target_url:
        raise UsageError("--to: is the same URL as --from")
    with (
        closing(open_store(source_url, option="--from", read_only=True)) as source,
        closing(open_store(target_url, option="--to", read_only=False)) as target,
    ):
        bar = ProgressBar(None, stream=err, label="migrating ")
        if bar.enabled:
            bar.total = count_conversations(source, page_size=args.page_size)
            bar.restart_clock()
        try:
            result = migrate(source, target, page_size=args.page_size, progress=bar)
        finally:
            bar.close()
    if result.vanished:
        print(f"chatmem: warning: {result.vanished} deleted in the source meanwhile", file=err)
    print(
        f"migrated {result.conversations} conversations: {result.copied} copied "
        f"({result.messages} messages), {result.unchanged} already up to date",
        file=err,
    )
    return 0


def register(sub: SubParsers) -> None:
    """``chatmem export | import | migrate``."""
    export = add_command(
        sub,
        "export",
        _export,
        summary="write conversations as JSON Lines (all, or the ids given)",
        description=(
            "Write conversations as JSON Lines, one per line. An ID the store does not hold\n"
            "is an error (exit 1) and nothing is written; an empty record is never written."
        ),
    )
    export.add_argument(
        "ids", nargs="*", type=conversation_id_arg, metavar="ID", help="conversation id(s)"
    )
    export.add_argument(
        "-o",
        "--output",
        default="-",
        metavar="FILE",
        help="file to write, replaced only once complete (default stdout)",
    )
    add_page_size(export)
    imp = add_command(
        sub,
        "import",
        _import,
        writes=True,
        summary="read JSON Lines into a store (never overwrites unless --replace)",
        description=(
            "Read an export file into a store. The whole file is validated, and the store\n"
            "checked for conversations it already holds, before anything is written: by\n"
            "default an existing conversation is an error (exit 1, nothing written).\n"
            "A record with no messages deletes only with --replace. If the store fails\n"
            "part-way, the error lists exactly which conversations were written."
        ),
    )
    imp.add_argument(
        "input", nargs="?", default="-", metavar="FILE", help="file to read (default stdin)"
    )
    mode = imp.add_mutually_exclusive_group()
    mode.add_argument(
        "--replace",
        action="store_true",
        help="replace conversations the store already holds (an empty record deletes)",
    )
    mode.add_argument(
        "--skip-existing",
        action="store_true",
        help="leave conversations the store already holds as they are, and list them",
    )
    migrate_cmd = add_command(
        sub,
        "migrate",
        _migrate,
        url=False,
        summary="copy every conversation from one store to another",
        description=(
            "Copy every conversation from --from to --to with content and created_at exact.\n"
            "Running it again copies only what changed; a conversation that differs is\n"
            "replaced in --to, and one only --to holds is kept. --from is only read (a\n"
            "missing SQLite file is an error). Progress with rate and ETA on a terminal."
        ),
    )
    migrate_cmd.add_argument(
        "--from", dest="source", required=True, metavar="URL", help="store to read"
    )
    migrate_cmd.add_argument(
        "--to", dest="target", required=True, metavar="URL", help="store to write"
    )
    add_page_size(migrate_cmd)
