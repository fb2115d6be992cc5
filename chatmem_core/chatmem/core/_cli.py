"""The ``chatmem`` command: a demo, a look into any store by URL, and moving data.

``chatmem demo`` runs a scripted conversation (with a tool call) through
``MessageWindowChatMemory`` on a SQLite file and prints, turn by turn, what is stored.
``chatmem ls | show ID | rm ID | schema | export [ID...] | import [FILE] | stats`` work
against ``--url`` (or ``$CHATMEM_URL``); ``chatmem migrate --from URL --to URL`` copies every
conversation between two stores (idempotent, streaming, progress on a terminal).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from ._errors import ChatMemoryError, InvalidArgumentError
from ._memory import MessageWindowChatMemory
from ._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from ._registry import repository_from_url

DEFAULT_URL = "sqlite:///chatmem-demo.db"


def describe(message: Message) -> str:
    """A one-line human description of a message."""
    kind = message.message_type.value.lower()
    if isinstance(message, AssistantMessage) and message.tool_calls:
        calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        text = f"{message.text or ''} -> calls {calls}".strip()
    elif isinstance(message, ToolResponseMessage):
        text = ", ".join(f"{r.name} = {r.response_data}" for r in message.responses)
    else:
        text = message.text or ""
    when = message.created_at.isoformat(timespec="seconds") if message.created_at else ""
    pos = "" if message.position is None else f"#{message.position:<4}"
    return f"{pos} {kind:<9} {text}  {when}".rstrip()


def _script() -> list[tuple[str, list[Message]]]:
    weather_call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Lisbon"}')
    return [
        ("system prompt", [SystemMessage("You are a concise travel assistant.")]),
        (
            "turn 1",
            [
                UserMessage("Hi! I am planning a trip to Lisbon."),
                AssistantMessage("Great choice. When are you going?"),
            ],
        ),
        (
            "turn 2 (with a tool call)",
            [
                UserMessage("Next week. What's the weather like?"),
                AssistantMessage(None, tool_calls=(weather_call,)),
                ToolResponseMessage(
                    (
                        ToolResponse(
                            id="call_1",
                            name="get_weather",
                            response_data='{"temp_c": 22, "sky": "sunny"}',
                        ),
                    )
                ),
                AssistantMessage("Sunny and about 22 °C."),
            ],
        ),
        (
            "turn 3",
            [
                UserMessage("Any museum tips?"),
                AssistantMessage("Try the Gulbenkian and the tile museum."),
            ],
        ),
        ("turn 4", [UserMessage("And food?"), AssistantMessage("Pastéis de nata in Belém.")]),
    ]


def run_demo(url: str, window: int, conversation_id: str, out: TextIO) -> None:
    repo = repository_from_url(url)
    memory = MessageWindowChatMemory(repo, max_messages=window)
    memory.clear(conversation_id)
    print(f"chatmem demo: conversation {conversation_id!r} in {url}, window of {window}", file=out)
    window_now: list[Message] = []
    for title, messages in _script():
        before = window_now
        memory.add(conversation_id, messages)
        window_now = memory.get(conversation_id)
        print(
            f"\n== after {title}: added {len(messages)}, the window holds {len(window_now)}",
            file=out,
        )
        for m in window_now:
            print(f"   {describe(m)}", file=out)
        kept_positions = {m.position for m in window_now}
        evicted = [m for m in before if m.position not in kept_positions]
        if evicted:
            print(
                f"   evicted {len(evicted)} (whole turns, oldest first; the window never "
                "starts mid-turn):",
                file=out,
            )
            for m in evicted:
                print(f"     - {describe(m)}", file=out)
        if any(isinstance(m, SystemMessage) for m in window_now) and evicted:
            print("   the system message stays: system messages are never evicted", file=out)
    print(f"Try: chatmem show {conversation_id} --url {url}", file=out)


def run_migrate(source_url: str, target_url: str, page_size: int, out: TextIO) -> None:
    """``chatmem migrate``: stream every conversation across, then print the counts."""
    from ._transfer import ProgressBar, count_conversations, migrate

    if source_url == target_url:
        raise InvalidArgumentError("--to", "is the same URL as --from")
    source = repository_from_url(source_url)
    target = repository_from_url(target_url)
    bar = ProgressBar(None, label="migrating ")
    if bar.enabled:
        bar.total = count_conversations(source, page_size=page_size)
    try:
        result = migrate(source, target, page_size=page_size, progress=bar)
    finally:
        bar.close()
    print(
        f"migrated {result.conversations} conversations: {result.copied} copied "
        f"({result.messages} messages), {result.unchanged} already up to date",
        file=out,
    )


def run_transfer(args: argparse.Namespace, out: TextIO) -> None:
    """``chatmem export | import | stats`` against ``--url``."""
    from ._transfer import export_conversations, import_conversations, store_stats

    repo = repository_from_url(args.url)
    if args.command == "export":
        ids = args.ids or None
        if args.output == "-":
            count = export_conversations(repo, out, ids)
        else:
            with open(args.output, "w", encoding="utf-8") as f:
                count = export_conversations(repo, f, ids)
        print(f"exported {count} conversations", file=sys.stderr)
    elif args.command == "import":
        if args.input == "-":
            conversations, messages = import_conversations(repo, sys.stdin)
        else:
            with open(args.input, encoding="utf-8") as f:
                conversations, messages = import_conversations(repo, f)
        print(f"imported {conversations} conversations ({messages} messages)", file=out)
    else:
        stats = store_stats(repo)
        if args.json:
            print(json.dumps(stats.as_dict()), file=out)
        else:
            for key, value in stats.as_dict().items():
                print(f"{key:<14}{value if value is not None else '-'}", file=out)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``chatmem`` console script."""
    parser = argparse.ArgumentParser(prog="chatmem", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url",
        default=os.environ.get("CHATMEM_URL", DEFAULT_URL),
        help=f"store URL (default $CHATMEM_URL or {DEFAULT_URL})",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=argparse.SUPPRESS, help="store URL")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", parents=[common], help="run a scripted conversation and show the window"
    )
    demo.add_argument("--window", type=int, default=6)
    demo.add_argument("--id", default="demo-trip")
    sub.add_parser("ls", parents=[common], help="list conversation ids")
    show = sub.add_parser("show", parents=[common], help="print a conversation")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="print JSON Lines")
    rm = sub.add_parser("rm", parents=[common], help="delete a conversation")
    rm.add_argument("id")
    schema = sub.add_parser(
        "schema", parents=[common], help="print the SQL DDL for --url's database"
    )
    schema.add_argument("--table-name", default="ai_chat_memory")
    export = sub.add_parser(
        "export", parents=[common], help="write conversations as JSON Lines (all, or the ids given)"
    )
    export.add_argument("ids", nargs="*", metavar="ID")
    export.add_argument("-o", "--output", default="-", help="file to write (default stdout)")
    imp = sub.add_parser(
        "import",
        parents=[common],
        help="read JSON Lines; each conversation replaces the stored one",
    )
    imp.add_argument("input", nargs="?", default="-", help="file to read (default stdin)")
    migrate = sub.add_parser("migrate", help="copy every conversation from one store to another")
    migrate.add_argument("--from", dest="source", required=True, metavar="URL")
    migrate.add_argument("--to", dest="target", required=True, metavar="URL")
    migrate.add_argument("--page-size", type=int, default=1000, help="ids read per round trip")
    stats = sub.add_parser("stats", parents=[common], help="count conversations and messages")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    from .longterm import _cli as longterm_cli

    longterm_cli.add_parsers(sub, common)
    args = parser.parse_args(argv)
    out = sys.stdout
    if longterm_cli.handles(args):
        return longterm_cli.run(args, out)
    try:
        if args.command == "demo":
            run_demo(args.url, args.window, args.id, out)
        elif args.command == "schema":
            from chatmem.jdbc import schema_sql

            out.write(schema_sql(args.url, table_name=args.table_name))
        elif args.command == "migrate":
            run_migrate(args.source, args.target, args.page_size, out)
        elif args.command in ("export", "import", "stats"):
            run_transfer(args, out)
        else:
            repo = repository_from_url(args.url)
            if args.command == "ls":
                for cid in repo.iter_conversation_ids():
                    print(cid, file=out)
            elif args.command == "show":
                from ._codec import message_to_dict

                for m in repo.find_by_conversation_id(args.id):
                    if args.json:
                        d = message_to_dict(m)
                        d["created_at"] = m.created_at.isoformat() if m.created_at else None
                        d["position"] = m.position
                        print(json.dumps(d, ensure_ascii=False), file=out)
                    else:
                        print(describe(m), file=out)
            elif args.command == "rm":
                repo.delete_by_conversation_id(args.id)
    except ChatMemoryError as exc:
        print(f"chatmem: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"chatmem: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
