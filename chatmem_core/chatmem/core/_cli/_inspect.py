"""``chatmem ls | show | rm | stats | schema``: look into any store by URL (reading never
creates a store), delete a conversation, print the schema a store needs."""

from __future__ import annotations

import argparse
import json
from contextlib import AbstractContextManager
from typing import Any, TextIO

from .._codec import message_to_dict
from .._messages import Message
from .._registry import repository_class_for_url, scheme_of
from .._sync.repository import BaseChatMemoryRepository
from .._transfer import ConversationNotFoundError, store_stats
from ._args import (
    SubParsers,
    add_command,
    add_page_size,
    closing,
    conversation_id_arg,
    table_name_arg,
)
from ._demo import describe
from ._errors import CliError, UsageError
from ._stores import open_store, resolve_url


def _reader(
    args: argparse.Namespace, command: str
) -> AbstractContextManager[BaseChatMemoryRepository]:
    url = resolve_url(getattr(args, "url", None), writes=False, command=command)
    return closing(open_store(url, option="--url", read_only=True))


def _last_activity(log: list[Message]) -> str | None:
    stamps = [m.created_at for m in log if m.created_at is not None]
    return max(stamps).isoformat() if stamps else None


def _ls(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with _reader(args, "ls") as repo:
        for cid in repo.iter_conversation_ids(page_size=args.page_size):
            if not args.long:
                line = (
                    json.dumps({"conversation_id": cid}, ensure_ascii=False) if args.json else cid
                )
                print(line, file=out)
                continue
            log = repo.find_by_conversation_id(cid)
            if not log:
                continue  # deleted since it was listed
            last = _last_activity(log)
            if args.json:
                record = {"conversation_id": cid, "messages": len(log), "last_activity": last}
                print(json.dumps(record, ensure_ascii=False), file=out)
            else:
                when = last[:19].replace("T", " ") if last else "-"
                print(f"{len(log):>8}  {when:<19}  {cid}", file=out)
    return 0


def message_record(m: Message) -> dict[str, Any]:
    """A message as ``show --json`` prints it: the wire format plus store fields."""
    d = message_to_dict(m)
    d["created_at"] = m.created_at.isoformat() if m.created_at else None
    d["position"] = m.position
    return d


def _show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with _reader(args, "show") as repo:
        log = repo.find_by_conversation_id(args.id)
    if not log:
        raise ConversationNotFoundError([args.id])
    for m in log:
        if args.json:
            print(json.dumps(message_record(m), ensure_ascii=False), file=out)
        else:
            print(describe(m), file=out)
    return 0


def _rm(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url = resolve_url(getattr(args, "url", None), writes=True, command="rm")
    missing = []
    with closing(open_store(url, option="--url", read_only=False)) as repo:
        for cid in dict.fromkeys(args.ids):
            count = len(repo.find_by_conversation_id(cid))
            if not count:
                missing.append(cid)
                continue
            repo.delete_by_conversation_id(cid)
            print(
                f"removed conversation {cid!r} ({count} message{'s' if count != 1 else ''})",
                file=err,
            )
    if missing:
        raise ConversationNotFoundError(missing)
    return 0


def _stats(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    with _reader(args, "stats") as repo:
        stats = store_stats(repo, page_size=args.page_size)
    if args.json:
        print(json.dumps(stats.as_dict()), file=out)
    else:
        for key, value in stats.as_dict().items():
            print(f"{key:<14}{value if value is not None else '-'}", file=out)
    return 0


def _schema(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url = resolve_url(getattr(args, "url", None), writes=False, command="schema")
    scheme = scheme_of(url)
    cls = repository_class_for_url(url, require_driver=False)  # DDL needs no connection
    build = getattr(cls, "schema_statements_for_url", None)
    if build is None:
        raise UsageError(f"--url: schema export is not available for {scheme} stores")
    options = {} if args.table_name is None else {"table_name": args.table_name}
    try:
        statements: list[str] = build(url, **options)
    except TypeError as exc:
        if options and "table_name" in str(exc):
            raise UsageError(f"--table-name: not an option of {scheme} stores") from None
        raise
    if not statements:
        raise CliError(f"{scheme} stores need no schema", 0)
    terminator = cls.schema_statement_terminator  # "" for commands (redis-cli takes none)
    if terminator:
        body = f"{terminator}\n\n".join(s.rstrip().rstrip(terminator) for s in statements)
        out.write(body + terminator + "\n")
    else:
        out.write("\n".join(statements) + "\n")
    return 0


def register(sub: SubParsers) -> None:
    """``chatmem ls | show | rm | stats | schema``."""
    ls = add_command(
        sub,
        "ls",
        _ls,
        summary="list conversation ids",
        description="List every conversation id, one per line, paging through the store.",
    )
    ls.add_argument(
        "-l",
        "--long",
        action="store_true",
        help="also print message count and last activity (reads every conversation)",
    )
    ls.add_argument(
        "--json", action="store_true", help="print JSON Lines: one object per conversation"
    )
    add_page_size(ls)
    show = add_command(
        sub,
        "show",
        _show,
        summary="print one conversation",
        description="Print a conversation's messages, oldest first (exit 1 if it does not exist).",
    )
    show.add_argument("id", type=conversation_id_arg, metavar="ID", help="conversation id")
    show.add_argument(
        "--json", action="store_true", help="print JSON Lines: one object per message"
    )
    rm = add_command(
        sub,
        "rm",
        _rm,
        writes=True,
        summary="delete conversations",
        description=(
            "Delete conversations and say what was removed (on stderr). Exit 1 if any ID\n"
            "did not exist; the others are still removed."
        ),
    )
    rm.add_argument(
        "ids", nargs="+", type=conversation_id_arg, metavar="ID", help="conversation id(s)"
    )
    stats = add_command(
        sub,
        "stats",
        _stats,
        summary="count conversations and messages",
        description="Count conversations and messages and give the oldest and newest message.",
    )
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    add_page_size(stats)
    schema = add_command(
        sub,
        "schema",
        _schema,
        summary="print the schema (DDL or index commands) a store needs",
        description=(
            "Print the statements that create the store's schema (SQL DDL, CQL, Cypher or\n"
            "FT.CREATE), for your own migration tool. Needs no connection and no server."
        ),
    )
    schema.add_argument(
        "--table-name",
        type=table_name_arg,
        default=None,
        metavar="NAME",
        help="table name for SQL stores (default ai_chat_memory)",
    )
