# Generated from chatmem_mongo/chatmem/mongo/_async/documents.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""The conversation document's I/O under compare-and-set: the snapshot a write starts from,
bounded reads with their fallback for servers without expression projections, archive chunks
by name, and the write filtered on the ``rev`` it read (retried when another write won); a
mixin of the repository, whose module docstring says why the document is shaped so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pymongo.errors import DuplicateKeyError, OperationFailure
from pymongo.synchronous.collection import Collection

from chatmem.core.backend import SchemaCheck, SchemaError, retry

from .._errors import translate_errors
from .._native.snapshots import (
    CHUNK,
    Layout,
    Snapshot,
    SnapshotCache,
    chunk_field,
    chunks_projection,
    foreign,
    new_rev,
    split,
)
from .._schema import (
    ARCHIVE,
    ARCHIVED,
    ID,
    LAYOUT_VERSION,
    MESSAGES,
    NEXT_POSITION,
    REVISION,
    SYSTEMS,
    UPDATED_AT,
    VERSION,
    conversation_fields,
)

MAX_ATTEMPTS = 100
"""Compare-and-set attempts before ConcurrencyError (each failure means another write won)."""

HEAD = {VERSION: 1, REVISION: 1, NEXT_POSITION: 1, ARCHIVED: 1}
SNAPSHOT_FIELDS = {**HEAD, SYSTEMS: 1, MESSAGES: 1}  # never the archive

_Change = Callable[[Snapshot | None], tuple[Layout, int]]


class MongoDocuments:
    """Reads and compare-and-set writes of one conversation's document in ``collection``."""

    collection: Collection[dict[str, Any]]
    _snapshots: SnapshotCache
    _expressions: bool
    _schema_check: SchemaCheck

    def _find_bounded(
        self, query: dict[str, Any], projection: dict[str, Any], plain: dict[str, Any]
    ) -> dict[str, Any] | None:
        """``find_one`` with an expression projection; on a server that does not implement
        them (FerretDB 1.x: code 238), the ``plain`` projection from then on (whole fields,
        still never the archive), sliced by the caller."""
        if self._expressions:
            with translate_errors("read conversation"):
                try:
                    found: dict[str, Any] | None = self.collection.find_one(query, projection)
                    return found
                except OperationFailure as exc:
                    if exc.code != 238 and "not supported" not in str(exc):
                        raise
                    self._expressions = False
        with translate_errors("read conversation"):
            plain_found: dict[str, Any] | None = self.collection.find_one(query, plain)
            return plain_found

    def _read_chunks(
        self, cid: str, rev: Any, archived: int, need: int
    ) -> tuple[int, list[dict[str, Any]]] | None:
        """The newest archive chunks holding at least ``need`` documents, as (the index of
        the first, their documents in order); None when the document is no longer ``rev``."""
        first = max(0, archived - -(-need // CHUNK))
        doc = self._find_bounded(
            {ID: cid, REVISION: rev},
            {REVISION: 1, **chunks_projection(first, archived)},
            {REVISION: 1, ARCHIVE: 1},
        )
        if doc is None:
            return None
        if ARCHIVE in doc:  # read plain: the archive itself, chunks by their index
            archive = doc[ARCHIVE] or {}
            doc = {chunk_field(k): archive.get(str(k)) for k in range(first, archived)}
        return first, [d for k in range(first, archived) for d in doc.get(chunk_field(k)) or ()]

    def _mutate(self, cid: str, change: _Change, what: str, need: int) -> None:
        """Apply ``change`` to the current document atomically (CAS on ``rev`` + retry);
        the snapshot holds at least ``need`` non-system documents when the log has them."""
        snap = self._snapshots.get(cid)
        stale = snap is None or (len(snap.tail) < need and snap.archived > 0)

        def attempt() -> bool | None:
            nonlocal snap, stale
            if stale:
                snap = self._read(cid, need)
            plan, next_position = change(snap)
            if self._write(cid, snap, plan, next_position, what):
                return True
            stale = True  # another write won: start again from what the server holds
            self._snapshots.forget(cid)
            return None

        retry(attempt, attempts=MAX_ATTEMPTS, what=what, base_sleep=0.001)

    def _write(
        self, cid: str, base: Snapshot | None, plan: Layout, next_position: int, what: str
    ) -> bool:
        """Write ``plan`` if the document is still ``base``; False when another write won."""
        self._schema_check()
        with translate_errors(what):
            if plan.empty:
                self._snapshots.forget(cid)
                if base is None:
                    return True
                deleted = self.collection.delete_one({ID: cid, REVISION: base.rev})
                return deleted.deleted_count == 1
            rev = new_rev()
            fields = conversation_fields(
                cid, rev, next_position, plan.systems, plan.tail, plan.archived
            )
            if base is None:
                try:  # matches no chatmem document: inserts, or fails on the _id index
                    inserted = self.collection.update_one(
                        {ID: cid, REVISION: {"$exists": False}},
                        {
                            "$setOnInsert": {**fields, ARCHIVE: archive_of(plan.new_chunks)},
                            "$currentDate": {UPDATED_AT: True},
                        },
                        upsert=True,
                    )
                except DuplicateKeyError:
                    return False
                if inserted.upserted_id is None:
                    raise SchemaError(foreign(cid, self.collection.name))
            else:
                if plan.replace_archive:
                    fields[ARCHIVE] = archive_of(plan.new_chunks)
                else:
                    fields.update({f"{ARCHIVE}.{k}": c for k, c in plan.new_chunks.items()})
                update: dict[str, Any] = {"$set": fields, "$currentDate": {UPDATED_AT: True}}
                if plan.unset_chunks:
                    update["$unset"] = {f"{ARCHIVE}.{k}": "" for k in plan.unset_chunks}
                result = self.collection.update_one({ID: cid, REVISION: base.rev}, update)
                if result.matched_count != 1:
                    return False
        self._snapshots.put(
            cid,
            Snapshot(
                rev,
                next_position,
                tuple(plan.systems),
                tuple(plan.tail),
                plan.archived,
                plan.archived,
            ),
        )
        return True

    def _read(self, cid: str, need: int = 0) -> Snapshot | None:
        """The snapshot a write starts from: head, systems and tail (never the archive,
        unless the tail holds fewer than ``need`` and the newest chunks make them up)."""
        self._schema_check()
        while True:
            with translate_errors("read conversation"):
                doc = self.collection.find_one({ID: cid}, SNAPSHOT_FIELDS)
            if doc is None:
                self._snapshots.forget(cid)
                return None
            check_document(doc, cid, self.collection.name)
            rev, next_position = doc[REVISION], int(doc[NEXT_POSITION])
            if doc.get(VERSION) != LAYOUT_VERSION:  # layout 1: one array, read whole once
                systems, others = split(doc.get(MESSAGES) or ())
                snap = Snapshot(rev, next_position, tuple(systems), tuple(others))
                break
            tail = tuple(doc.get(MESSAGES) or ())
            archived = int(doc[ARCHIVED])
            snap = Snapshot(
                rev, next_position, tuple(doc.get(SYSTEMS) or ()), tail, archived, archived
            )
            if len(tail) < need and archived:
                older = self._read_chunks(cid, rev, archived, need - len(tail))
                if older is None:
                    continue  # another write landed between the two reads: read again
                first, docs = older
                snap = snap._replace(tail=(*docs, *tail), archived=first)
            break
        self._snapshots.put(cid, snap)
        return snap


def check_document(doc: dict[str, Any], cid: str, collection: str) -> None:
    if REVISION not in doc or NEXT_POSITION not in doc:
        raise SchemaError(foreign(cid, collection))


def archive_of(chunks: dict[int, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {str(k): c for k, c in chunks.items()}
