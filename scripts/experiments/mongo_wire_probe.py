"""Probe a MongoDB-wire server for what chatmem's mongo backend relies on, or could rely on.

Usage: python scripts/experiments/mongo_wire_probe.py mongodb://127.0.0.1:PORT/db [rounds]

Checks, each printed as one line:

1. compare-and-set: T threads race ``update_one({_id, rev: r}, {$set: {rev: new}})`` from the
   same ``r``; exactly one may match per round (MongoDB's per-document atomicity);
2. ``$push``/``$each``/``$slice`` appends: T threads each push N messages with
   ``$push: {messages: {$each: [m], $slice: -K}}`` + ``$inc: {next_position: 1}`` (the
   one-round-trip append design): none may be lost, and the array must be cut to K;
3. ``$push`` + ``$slice`` semantic check on one thread (order kept, oldest dropped);
4. nested arrays in a document (metadata values may hold lists of lists);
5. a TTL index (``expireAfterSeconds``).

Not a test of chatmem: it tells whether a server (a stand-in, or a real MongoDB) supports the
designs, so the backend's choice can be made on evidence.

Results here (30 rounds, 8 threads):

- FerretDB 1.24.2 (SQLite backend): compare-and-set BROKEN (every round had 2 to 8 winners:
  its update_one reads, applies the update and writes back without isolation);
  ``$push``/``$slice`` race BROKEN (next_position 35 of 200, 165 pushes lost) and ``$slice``
  ignored (5 of 3 kept); nested arrays rejected; TTL indexes not implemented.
- nx-27017 0.8.1: compare-and-set OK; the ``$push`` race lost nothing and ``$slice`` cut the
  array, but pushed documents come back as JSON strings; nested arrays OK; TTL index created.

So neither stand-in can validate a ``$push``/``$slice`` append design: nx-27017 breaks the
element type, FerretDB v1 loses concurrent pushes and ignores ``$slice``. It stays a design
for real MongoDB, to be proven there (``CHATMEM_TC_IMAGES=official nox -s
"conformance_tc(backend='mongo')"`` on a machine with a registry).
"""

from __future__ import annotations

import sys
import threading
import uuid
from typing import Any

from pymongo import MongoClient

THREADS = 8


def cas_race(coll: Any, rounds: int) -> str:
    coll.delete_many({})
    coll.insert_one({"_id": "c", "rev": 0})
    double_wins = 0
    counts: dict[int, int] = {}
    for r in range(rounds):
        wins: list[int] = []
        barrier = threading.Barrier(THREADS)

        def race(i: int, rev: int = r, barrier: Any = barrier, wins: list[int] = wins) -> None:
            barrier.wait()
            res = coll.update_one({"_id": "c", "rev": rev}, {"$set": {"rev": rev + 1, "by": i}})
            if res.matched_count == 1:
                wins.append(i)

        threads = [threading.Thread(target=race, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        counts[len(wins)] = counts.get(len(wins), 0) + 1
        if len(wins) != 1:
            double_wins += 1
            coll.update_one({"_id": "c"}, {"$set": {"rev": r + 1}})
    verdict = "OK" if double_wins == 0 else "BROKEN"
    spread = ", ".join(f"{k} winner(s): {v}" for k, v in sorted(counts.items()))
    return f"compare-and-set: {verdict}: {double_wins}/{rounds} rounds had != 1 winner ({spread})"


def push_slice_race(coll: Any, per_thread: int, keep: int) -> str:
    coll.delete_many({})
    coll.insert_one({"_id": "c", "messages": [], "next_position": 0})  # appends only
    errors: list[str] = []

    def push(i: int) -> None:
        for n in range(per_thread):
            try:
                coll.update_one(
                    {"_id": "c"},
                    {
                        "$push": {"messages": {"$each": [{"w": i, "n": n}], "$slice": -keep}},
                        "$inc": {"next_position": 1},
                    },
                )
            except Exception as exc:  # report, don't hide
                errors.append(f"{type(exc).__name__}: {exc}")
                return

    threads = [threading.Thread(target=push, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        return f"$push/$slice race: UNSUPPORTED: {errors[0][:200]}"
    doc = coll.find_one({"_id": "c"}) or {}
    total = doc.get("next_position")
    kept = doc.get("messages", [])
    expected = THREADS * per_thread
    ok = total == expected and len(kept) == min(keep, expected)
    ok = ok and all(isinstance(m, dict) for m in kept)
    # every worker's kept messages must be in its own order
    for i in range(THREADS):
        mine = [m["n"] for m in kept if isinstance(m, dict) and m.get("w") == i]
        ok = ok and mine == sorted(mine)
    verdict = "OK" if ok else "BROKEN"
    return (
        f"$push/$slice race: {verdict}: next_position={total} (expected {expected}), "
        f"array length {len(kept)} (expected {min(keep, expected)}), "
        f"element type {type(kept[0]).__name__ if kept else '-'}"
    )


def push_slice_semantics(coll: Any) -> str:
    coll.delete_many({})
    try:
        for n in range(5):
            coll.update_one(
                {"_id": "s"},
                {"$push": {"m": {"$each": [{"n": n}], "$slice": -3}}},
                upsert=True,
            )
        doc = coll.find_one({"_id": "s"}) or {}
    except Exception as exc:
        return f"$push/$slice semantics: UNSUPPORTED: {type(exc).__name__}: {str(exc)[:200]}"
    got = doc.get("m")
    ok = got == [{"n": 2}, {"n": 3}, {"n": 4}]
    return f"$push/$slice semantics: {'OK' if ok else 'BROKEN'}: stored {got!r}"


def nested_arrays(coll: Any) -> str:
    coll.delete_many({})
    value = {"list": [1, [2, 3], {"x": [[4]]}]}
    try:
        coll.insert_one({"_id": "n", "v": value})
        back = (coll.find_one({"_id": "n"}) or {}).get("v")
    except Exception as exc:
        return f"nested arrays: UNSUPPORTED: {str(exc)[:160]}"
    return f"nested arrays: {'OK' if back == value else 'BROKEN'}"


def ttl_index(coll: Any) -> str:
    try:
        coll.create_index("updated_at", expireAfterSeconds=60, name="ttl_probe")
    except Exception as exc:
        return f"TTL index: UNSUPPORTED: {str(exc)[:160]}"
    return "TTL index: OK (created)"


def main() -> int:
    url = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    client: MongoClient[Any] = MongoClient(url, serverSelectionTimeoutMS=10_000)
    db = client.get_default_database("probe")
    build = client.admin.command("buildInfo")
    print(f"server: claims {build.get('version')}; {build.get('ferretdbVersion', '')}")
    name = f"probe_{uuid.uuid4().hex[:8]}"
    coll = db[name]
    try:
        for line in (
            cas_race(coll, rounds),
            push_slice_race(coll, per_thread=25, keep=50),
            push_slice_semantics(coll),
            nested_arrays(coll),
            ttl_index(coll),
        ):
            print(line, flush=True)
    finally:
        coll.drop()
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
