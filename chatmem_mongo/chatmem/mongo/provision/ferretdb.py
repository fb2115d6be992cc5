"""FerretDB harness: a second MongoDB wire-protocol STAND-IN, to cross-check nx-27017.

No real ``mongod`` can be obtained on these machines. FerretDB 1.24.2 (built from the Go
module proxy by ``scripts/install/ferretdb.sh`` into ``~/.cache/chatmem/ferretdb-1.24.2``)
is started on its SQLite backend on a free 127.0.0.1 port (telemetry off, debug listener
on another free loopback port) and reported as a stand-in. It runs the shared suite and the
mongo backend's own tests (``also_runs``) with the mongo harness's repositories.

Known FerretDB v1 gaps (not chatmem bugs) are listed in ``KNOWN_GAPS`` and expected to fail
(strict xfail: a gap that starts passing fails the run, so the list stays true).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from chatmem.testing.harness import (
    ServerInfo,
    Unavailable,
    cache_dir,
    free_port,
    stop_process,
    tail,
    wait_for_port,
)

from .server import TEST_DATABASE, MongoHarness

VERSION = "1.24.2"
PRODUCT = "MongoDB wire protocol"

_NESTED = "FerretDB v1 rejects nested arrays (the corpus metadata holds a list in a list)"
_TTL = 'FerretDB v1 has no TTL indexes ("expireAfterSeconds" is not implemented yet)'
_RACE = (
    "FerretDB v1 (SQLite) updates are not atomic per document: several concurrent "
    "update_one calls filtered on the same rev all match (scripts/experiments/"
    "mongo_wire_probe.py), so compare-and-set writers overwrite each other"
)
_BUSY = (
    "FerretDB v1 (SQLite) answers writes from many connections at once with InternalError "
    '"database is locked (5) (SQLITE_BUSY)" (the async twin\'s 100 tasks open that many)'
)
_PROJECTIONS = (
    "FerretDB 1.x implements no projection expressions (code 238): chatmem falls back to "
    "reading the whole stored tail (at most 64 messages, never the archive), so a window "
    "read returns more than the window from the server"
)
KNOWN_GAPS: dict[str, tuple[str, bool]] = {
    r"test_mongo(_async)?\.py::test_every_read_after_save_all_of_a_long_history_is_bounded": (
        _PROJECTIONS,
        True,
    ),
    r"test_suite\.py::test_save_and_read_back_every_kind_and_field": (_NESTED, True),
    r"test_suite\.py::test_bytes_media_round_trip_exactly": (_NESTED, True),
    r"test_suite\.py::test_tool_response_message_has_empty_text": (_NESTED, True),
    r"test_suite\.py::test_repository_does_not_mutate_callers_messages": (_NESTED, True),
    r"test_mongo(_async)?\.py::test_ttl_": (_TTL, True),
    r"test_suite\.py::test_ttl_": (_TTL, True),  # the kit's shared TTL tests
    r"test_suite\.py::test_an_expired_conversation_starts_afresh": (_TTL, True),
    r"test_mongo(_async)?\.py::test_concurrent_constructors_with_a_ttl_": (_TTL, True),
    r"test_mongo(_async)?\.py::test_never_creates_no_index_and_refuses_until_created": (_TTL, True),
    # races: they fail whenever two writes overlap, which is nearly always, but not strictly
    r"test_suite\.py::test_concurrent_appends_lose_nothing": (_RACE, False),
    r"test_suite\.py::test_concurrent_window_adds_lose_nothing": (_RACE, False),
    r"test_suite\.py::test_concurrent_system_and_plain_adds_stay_consistent": (_RACE, False),
    r"test_suite\.py::test_concurrent_window_adds_from_processes": (_RACE, False),
    r"test_suite\.py::test_first_use_is_race_safe": (_RACE, False),
    r"test_mongo\.py::test_threads_on_two_repositories_lose_nothing": (_RACE, False),
    r"test_mongo_async\.py::test_tasks_on_two_repositories_lose_nothing": (_RACE, False),
    r"test_suite\.py::test_concurrent_adds_lose_nothing": (_RACE, False),
    r"test_suite\.py::test_cold_default_path_from_threads_loses_nothing": (_RACE, False),
    r"test_suite\.py::test_cold_default_path_from_processes_loses_nothing": (
        _RACE,
        False,
    ),
    r"test_suite\.py::test_concurrent_turns_on_one_conversation_lose_nothing": (_RACE, False),
    r"test_suite\.py::test_concurrent_pop_last_takes_distinct_messages": (_RACE, False),
    # the async twin's shared tests (--twin async): 100 tasks on one loop
    r"test_suite\.py::test_async_many_tasks_on_one_conversation_lose_nothing": (_RACE, False),
    r"test_suite\.py::test_async_calls_never_block_the_loop": (_BUSY, False),
}
"""Test node id pattern (regex) -> (the FerretDB v1 gap it hits, strict xfail?)."""


def find_binary() -> Path:
    """The cached FerretDB binary."""
    binary = cache_dir(f"ferretdb-{VERSION}") / "ferretdb"
    if not binary.exists():
        raise Unavailable(f"{binary} missing: run scripts/install/ferretdb.sh")
    return binary


class FerretdbHarness(MongoHarness):
    name = "ferretdb"
    env_var = None
    testcontainers_image = None
    also_runs = ("mongo",)
    known_gaps = KNOWN_GAPS

    def start_local(self, workdir: Path) -> ServerInfo:
        binary = find_binary()
        port, debug_port = free_port(), free_port()
        data = workdir / "ferretdb-data"
        data.mkdir(parents=True, exist_ok=True)
        log = workdir / "ferretdb.log"
        sink = log.open("wb")
        proc = subprocess.Popen(
            [
                str(binary),
                "--handler=sqlite",
                f"--sqlite-url=file:{data}/",
                f"--state-dir={workdir}",
                f"--listen-addr=127.0.0.1:{port}",
                f"--debug-addr=127.0.0.1:{debug_port}",
                "--telemetry=disable",
                "--log-level=WARN",
            ],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        def stop() -> None:
            stop_process(proc, grace=10)
            sink.close()

        try:
            wait_for_port(port, 60, proc, log)
            return _probe_ferretdb(f"mongodb://127.0.0.1:{port}/{TEST_DATABASE}", stop)
        except BaseException as exc:
            stop()
            if isinstance(exc, Unavailable):
                raise Unavailable(f"{exc}\n{tail(log)}") from exc
            raise


def _probe_ferretdb(url: str, stop: Any) -> ServerInfo:
    from pymongo import MongoClient

    client: MongoClient[Any] = MongoClient(url, serverSelectionTimeoutMS=15_000)
    try:
        build = client.admin.command("buildInfo")
        hello = client.admin.command("hello")
    except Exception as exc:
        client.close()
        raise Unavailable(f"{url}: {exc}") from exc
    ferret = build.get("ferretdbVersion") or build.get("ferretdb", {}).get("version") or VERSION
    if not re.search(r"\d", str(ferret)):
        ferret = VERSION

    def stop_all() -> None:
        client.close()
        stop()

    return ServerInfo(
        PRODUCT,
        f"claims {build.get('version', '?')}, wire version {hello.get('maxWireVersion', '?')}",
        url,
        route="local",
        stand_in=f"FerretDB {str(ferret).lstrip('v')} (SQLite backend)",
        stop=stop_all,
        extra={"client": client, "database": TEST_DATABASE},
    )


HARNESS = FerretdbHarness
