"""``chatmem memories settings`` and ``chatmem memories work``: the commands on the record
store's state entries (an agent's settings, the durable analysis queue).

``settings --agent A`` prints the agent's settings; ``--enable``/``--disable`` and
``--pending-days N`` change them (a compare-and-set write: a concurrent change to another
field is kept), and a running ``LongTermMemory`` applies the change within its refresh
interval. ``work`` analyses what the durable queue holds (every agent's, or ``--agent``'s)
and returns when nothing is left to take or wait for (``--follow``: keeps polling); any
number of ``work`` processes share one queue.
"""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from typing import Any, TextIO

from chatmem.core._errors import InvalidArgumentError

from ._queue import DEFAULT_LEASE
from ._settings import AgentSettings
from ._sync.queue import QueueWorker
from ._sync.repository import BaseMemoryRecordRepository
from ._sync.settings import get_settings, put_settings

COMMANDS = ("settings", "work")


def add_state_parsers(actions: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``settings`` and ``work`` to the ``memories`` actions."""
    settings = actions.add_parser(
        "settings",
        parents=parents,
        help="show or change an agent's long-term memory settings",
        description="Show an agent's settings; --enable/--disable and --pending-days change "
        "them. Running processes apply a change within their refresh interval (5 s).",
    )
    settings.add_argument("--agent", dest="agent_id", required=True, help="the agent")
    switch = settings.add_mutually_exclusive_group()
    switch.add_argument("--enable", dest="enabled", action="store_const", const=True)
    switch.add_argument("--disable", dest="enabled", action="store_const", const=False)
    settings.add_argument(
        "--pending-days",
        type=int,
        help="days a new pending memory waits for review before it expires (default 7)",
    )
    settings.add_argument("--json", action="store_true", help="print the settings as JSON")
    work = actions.add_parser(
        "work",
        parents=parents,
        help="analyse the durable queue (LongTermMemory(durable=True))",
        description="Claim, analyse and delete the queued user messages; returns when "
        "nothing is left. Start several to share the work.",
    )
    work.add_argument("--agent", dest="agent_id", help="only this agent's messages")
    work.add_argument(
        "--complete",
        help="module:function, a complete(prompt) -> str model call (default: offline rules)",
    )
    work.add_argument(
        "--lease-seconds",
        type=float,
        default=DEFAULT_LEASE.total_seconds(),
        help=f"how long a claim holds (default {DEFAULT_LEASE.total_seconds():.0f})",
    )
    work.add_argument("--worker-id", help="this worker's name in its claims (default host:pid)")
    work.add_argument("--follow", action="store_true", help="keep polling for new messages")


def describe_settings(agent_id: str, settings: AgentSettings) -> str:
    """One line: the agent's switch and pending expiry."""
    days = settings.pending_ttl / timedelta(days=1)
    state = "enabled" if settings.enabled else "disabled"
    return f"agent {agent_id}: {state}, pending memories expire after {days:g} days"


def run_state(store: BaseMemoryRecordRepository, args: argparse.Namespace, out: TextIO) -> int:
    """Run ``memories settings`` or ``memories work`` on an open store."""
    if args.memories_command == "settings":
        ttl = None
        if args.pending_days is not None:
            if args.pending_days < 1:
                raise InvalidArgumentError("--pending-days", "must be a whole number >= 1")
            ttl = timedelta(days=args.pending_days)
        if args.enabled is None and ttl is None:
            settings = get_settings(store, args.agent_id)
        else:
            settings = put_settings(store, args.agent_id, enabled=args.enabled, pending_ttl=ttl)
        line = json.dumps(settings.to_dict()) if args.json else None
        print(line or describe_settings(args.agent_id, settings), file=out)
        return 0
    return _work(store, args, out)


def _work(store: BaseMemoryRecordRepository, args: argparse.Namespace, out: TextIO) -> int:
    from ._extract import Extractor, LlmExtractor, RuleBasedExtractor, load_callable

    if not args.lease_seconds > 0:
        raise InvalidArgumentError("--lease-seconds", "must be > 0")
    extractor: Extractor = (
        LlmExtractor(load_callable(args.complete)) if args.complete else RuleBasedExtractor()
    )
    worker = QueueWorker(
        store,
        extractor,
        agent_id=args.agent_id,
        worker_id=args.worker_id,
        lease=timedelta(seconds=args.lease_seconds),
    )
    stats = worker.drain(follow=args.follow)
    print(
        f"analysed {stats.analysed} queued messages: {stats.stored} memories stored as "
        f"pending, {stats.duplicates} already known, {stats.skipped} of disabled agents, "
        f"{stats.failed} failed",
        file=out,
    )
    return 1 if stats.failed else 0
