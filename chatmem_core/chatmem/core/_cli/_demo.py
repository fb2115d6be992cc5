"""``chatmem demo``: a scripted conversation (with a tool call) through
``MessageWindowChatMemory``, printing turn by turn what the window holds and what it evicted."""

from __future__ import annotations

import argparse
from typing import TextIO

from .._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from .._registry import repository_from_url
from .._sync.memory import MessageWindowChatMemory
from ._args import SubParsers, add_command, conversation_id_arg, positive_int
from ._stores import resolve_url


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
    """Run the script against ``url``, printing the window after each turn."""
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


def _demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    url = resolve_url(getattr(args, "url", None), writes=False, command="demo")
    run_demo(url, args.window, args.id, out)
    return 0


def register(sub: SubParsers) -> None:
    """``chatmem demo``."""
    demo = add_command(
        sub,
        "demo",
        _demo,
        summary="run a scripted conversation and show the window turn by turn",
        description=(
            "Run a scripted travel-assistant conversation (with a tool call) through\n"
            "MessageWindowChatMemory and print, after each turn, what the window holds and\n"
            "which whole turns were evicted. Clears conversation --id in the store first."
        ),
    )
    demo.add_argument(
        "--window",
        type=positive_int,
        default=6,
        metavar="N",
        help="max messages the window keeps (default 6)",
    )
    demo.add_argument(
        "--id",
        type=conversation_id_arg,
        default="demo-trip",
        help="conversation id to (re)write (default demo-trip)",
    )
