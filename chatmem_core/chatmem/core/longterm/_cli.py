"""``chatmem memories ls|approve|reject|expire|rm|forget|analyse|settings|work|schema`` and
``chatmem serve`` (``settings`` and ``work`` are in ``_cli_state``).

``add_parsers`` adds the subcommands to the ``chatmem`` parser; ``run`` handles them (the
main CLI calls it when ``handles(args)``). Records live in the store at ``--url``: the class
registered for its scheme in the ``chatmem.memory_stores`` entry-point group (SQL, Redis,
MongoDB, Cassandra, Neo4j or a third party's), opened with its ``from_url``. The commands
create no schema unless ``--create-schema`` is given (a missing one is then an error naming
what to run); ``--table-name`` goes to stores that take a ``table_name``, ``--store-option
NAME=VALUE`` to any text option of the store's class (``_cli_stores``).
``serve`` runs the review page and API with uvicorn on async stores; it always requires an
API key unless ``--no-auth`` is given on a loopback address, and it refuses a non-loopback
``--host`` without an explicit key.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import secrets
import sys
from typing import Any, TextIO

from chatmem.core._errors import InvalidArgumentError

from ._cli_state import COMMANDS as STATE_COMMANDS
from ._cli_state import add_state_parsers, run_state
from ._cli_stores import open_async_store, open_chat_store, open_store, schema_sql
from ._model import MemoryRecord
from ._repository import BaseMemoryRecordRepository

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
API_KEY_ENV = "CHATMEM_API_KEY"
COMMANDS = ("memories", "serve")


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``memories`` and ``serve`` to the subparsers ``sub`` (``common`` has ``--url``)."""
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--table-name",
        default=None,
        help="record table, for stores that take one (SQL: ai_memory_record)",
    )
    store.add_argument(
        "--store-option",
        dest="store_options",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a text option of the record store's class (repeatable), e.g. key_prefix=app:mem: "
        "on Redis, collection_name=memories on MongoDB, keyspace=app on Cassandra",
    )
    store.add_argument(
        "--create-schema",
        action="store_true",
        help="create the record table (or index, constraints) if missing; else create nothing",
    )
    memories = sub.add_parser(
        "memories",
        parents=[common, store],
        help="review long-term memories",
        description="List, approve, reject, expire or delete long-term memory records, or "
        "forget a user.",
    )
    actions = memories.add_subparsers(
        dest="memories_command", required=True, metavar="ACTION", help="what to do"
    )
    ls = actions.add_parser(
        "ls", parents=[common, store], help="list memories", description="List memory records."
    )
    ls.add_argument("--user", dest="user_id", help="only this user's memories")
    ls.add_argument("--agent", dest="agent_id", help="only this agent's memories")
    ls.add_argument(
        "--status", choices=["pending", "approved", "rejected"], help="only this review status"
    )
    ls.add_argument(
        "--type",
        dest="memory_type",
        choices=["preference", "fact", "context"],
        help="only this memory type",
    )
    ls.add_argument("--limit", type=int, default=50, help="records per page (default 50)")
    ls.add_argument("--cursor", help="the cursor a previous page printed, for the next page")
    ls.add_argument("--json", action="store_true", help="print JSON Lines")
    for name in ("approve", "reject"):
        review = actions.add_parser(
            name,
            parents=[common, store],
            help=f"{name} a memory",
            description=f"{name.capitalize()} a pending memory record.",
        )
        review.add_argument("id", help="memory record id")
        review.add_argument("--reviewer", help="who reviewed it")
        review.add_argument("--reason", help="why (kept with the record)")
    rm = actions.add_parser(
        "rm", parents=[common, store], help="delete a memory", description="Delete a memory."
    )
    rm.add_argument("id", help="memory record id")
    forget = actions.add_parser(
        "forget",
        parents=[common, store],
        help="delete every memory of a user",
        description='A user\'s "forget me": delete every memory record of the user, of any '
        "status (their chat history is the application's: delete it with `chatmem rm`).",
    )
    forget.add_argument("--user", dest="user_id", required=True, help="the user to forget")
    forget.add_argument("--agent", dest="agent_id", help="only this agent's memories of them")
    analyse = actions.add_parser(
        "analyse",
        parents=[common, store],
        help="analyse stored conversations (backfill)",
        description="Analyse the user messages of stored conversations at --url as one user's "
        "messages to one agent, storing candidates as pending. Repeatable: what is stored "
        "already is not stored again, so a run cut short is run again.",
    )
    analyse.add_argument("--agent", dest="agent_id", required=True, help="the agent")
    analyse.add_argument("--user", dest="user_id", required=True, help="whose messages they are")
    analyse.add_argument(
        "--conversation",
        dest="conversation_ids",
        action="append",
        help="only this conversation (repeat for more; default: every stored one)",
    )
    analyse.add_argument(
        "--shard", default="0/1", help="K/N: this process takes shard K of N (default 0/1)"
    )
    analyse.add_argument(
        "--complete",
        help="module:function, a complete(prompt) -> str model call (default: offline rules)",
    )
    analyse.add_argument("--records-url", help="the record store, when not the chat store at --url")
    add_state_parsers(actions, [common, store])
    actions.add_parser(
        "expire", parents=[common, store], help="reject pending memories past their review window"
    )
    actions.add_parser(
        "schema", parents=[common, store], help="print the record table DDL for --url"
    )
    serve = sub.add_parser(
        "serve",
        parents=[common, store],
        help="run the review page and REST API",
        description="Serve the memory review page and REST API (needs the api extra).",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address (default {DEFAULT_HOST})")
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    serve.add_argument("--api-key", default=None, help=f"API key (default ${API_KEY_ENV})")
    serve.add_argument(
        "--no-auth", action="store_true", help="no API key (loopback addresses only)"
    )
    serve.add_argument(
        "--chat-url",
        default=None,
        help="chat store holding the conversations memories came from, shown beside each "
        "memory (default: --url; opened read-only)",
    )
    serve.add_argument(
        "--no-chat", action="store_true", help="do not show the source conversations"
    )


def handles(args: argparse.Namespace) -> bool:
    """Whether ``args.command`` is one of ours."""
    return getattr(args, "command", None) in COMMANDS


def describe(record: MemoryRecord) -> str:
    """One line per record."""
    return (
        f"{record.id}  {record.status.value:<8} {record.memory_type.value:<10} "
        f"{record.confidence:.2f}  {record.user_id}  {record.content}"
    )


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def server_key(host: str, api_key: str | None, no_auth: bool) -> tuple[str | None, bool]:
    """The key to require and whether it was generated; refuses unsafe combinations."""
    if no_auth:
        if not is_loopback(host):
            raise InvalidArgumentError("--no-auth", f"is refused on non-loopback {host!r}")
        return None, False
    if api_key:
        return api_key, False
    if not is_loopback(host):
        raise InvalidArgumentError(
            "--host", f"{host!r} is not loopback: give --api-key or ${API_KEY_ENV}"
        )
    return secrets.token_urlsafe(24), True


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run a ``memories`` or ``serve`` command; the exit status. Errors propagate to the
    CLI's ``main``, which maps them onto the exit codes every command uses (2 for usage and
    input errors, 1 for a conflict, a missing record or a failing store)."""
    if args.command == "serve":
        return _serve(args, out)
    if args.memories_command == "schema":
        out.write(schema_sql(args.url, args))
        return 0
    if args.memories_command == "analyse":
        return _analyse(args, out)
    store = open_store(args.url, args)
    try:
        if args.memories_command in STATE_COMMANDS:
            return run_state(store, args, out)
        return _run_memories(store, args, out)
    finally:
        close = getattr(store, "close", None)  # the client or cluster it opened
        if close is not None:
            close()


def _run_memories(store: BaseMemoryRecordRepository, args: argparse.Namespace, out: TextIO) -> int:
    """Run ``memories ls|approve|reject|rm|forget|expire`` on an open store."""
    command = args.memories_command
    if command == "ls":
        page = store.find(
            agent_id=args.agent_id,
            user_id=args.user_id,
            status=args.status,
            memory_type=args.memory_type,
            limit=args.limit,
            cursor=args.cursor,
        )
        for record in page.records:
            line = json.dumps(record.to_dict(), ensure_ascii=False) if args.json else None
            print(line or describe(record), file=out)
        if page.next_cursor:
            print(f"more: --cursor {page.next_cursor}", file=sys.stderr)
    elif command in ("approve", "reject"):
        decide = store.approve if command == "approve" else store.reject
        print(describe(decide(args.id, reviewer=args.reviewer, reason=args.reason)), file=out)
    elif command == "rm":
        if not store.delete(args.id):
            print(f"chatmem: no memory {args.id}", file=sys.stderr)
            return 1
    elif command == "forget":
        deleted = store.forget_user(args.user_id, agent_id=args.agent_id)
        print(f"deleted {deleted} memories of user {args.user_id}", file=out)
    elif command == "expire":
        print(f"expired {store.expire_due()} pending memories", file=out)
    return 0


def _analyse(args: argparse.Namespace, out: TextIO) -> int:
    """``memories analyse``: the backfill, with its progress on stderr; 1 when a message
    failed (run it again: what was stored is not stored twice)."""
    from ._backfill import BackfillStats, backfill, validate_shard
    from ._extract import Extractor, LlmExtractor, RuleBasedExtractor, load_callable

    shard = validate_shard(args.shard)
    extractor: Extractor = (
        LlmExtractor(load_callable(args.complete)) if args.complete else RuleBasedExtractor()
    )
    tty = sys.stderr.isatty()

    def progress(stats: BackfillStats) -> None:
        if tty or stats.conversations % 100 == 0:
            line = (
                f"analysed {stats.conversations} conversations, {stats.messages} messages: "
                f"{stats.stored} stored, {stats.duplicates} already known, {stats.failed} failed"
            )
            print(f"\r{line}" if tty else line, end="" if tty else "\n", file=sys.stderr)

    chat = open_chat_store(args.url, "--url")
    try:
        records = open_store(args.records_url or args.url, args)
        try:
            stats = backfill(
                chat,
                records,
                extractor,
                agent_id=args.agent_id,
                user_id=args.user_id,
                conversation_ids=args.conversation_ids,
                shard=shard,
                progress=progress,
            )
        finally:
            getattr(records, "close", lambda: None)()
    finally:
        getattr(chat, "close", lambda: None)()
    if tty:
        print(file=sys.stderr)
    print(
        f"analysed {stats.messages} user messages in {stats.conversations} conversations "
        f"(shard {shard[0]}/{shard[1]}): {stats.stored} memories stored as pending, "
        f"{stats.duplicates} already known, {stats.failed} failed",
        file=out,
    )
    return 1 if stats.failed else 0


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    key, generated = server_key(
        args.host, args.api_key or os.environ.get(API_KEY_ENV) or None, args.no_auth
    )
    asyncio.run(_serve_async(args, key, generated, out))
    return 0


async def _serve_async(
    args: argparse.Namespace, key: str | None, generated: bool, out: TextIO
) -> None:
    """Open the async stores on the loop uvicorn serves on, so every request reads them
    there (no thread per call), and close them when the server stops."""
    import uvicorn

    from chatmem.core._cli._stores import open_async_store as open_async_chat

    from .api import api_key_auth, create_app

    store = await open_async_store(args.url, args)
    chat = None
    try:
        if not args.no_chat:
            option = "--chat-url" if args.chat_url else "--url"
            chat = await open_async_chat(args.chat_url or args.url, option=option, read_only=True)
        app = create_app(store, auth=None if key is None else api_key_auth(key), chat=chat)
        where = f"http://{args.host}:{args.port}/"
        print(f"chatmem: memory review at {where} (records in {args.url})", file=out)
        if generated:
            print(f"chatmem: API key for this run: {key}", file=out)
        out.flush()
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")
        await uvicorn.Server(config).serve()
    finally:
        for opened in (chat, store):
            close = getattr(opened, "close", None)
            if close is not None:
                await close()
