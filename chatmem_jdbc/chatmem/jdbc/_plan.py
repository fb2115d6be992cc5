"""Every statement the repository runs, built once per repository with bound parameters.

Building SQLAlchemy statements costs more than running them on SQLite, so they are made here
once; the values (``cid``, ``n``, ``after``...) are always bound parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

from ._schema import Tables

CID: sa.BindParameter[str] = sa.bindparam("cid")


@dataclass(frozen=True)
class Statements:
    """Prepared statement objects for one set of tables."""

    find: Any
    find_last: Any
    window: Any
    list_first: Any
    list_after: Any
    insert_messages: Any
    delete_messages: Any
    delete_conversation: Any
    delete_positions: Any
    delete_non_system_below: Any
    trim_cut: Any
    any_left: Any


def build_statements(t: Tables, *, limit_in_union_member: bool = False) -> Statements:
    """Build the statements for ``t``. With ``limit_in_union_member`` the window read is a
    plain ``(..) UNION ALL (.. LIMIT n)`` (rows come back unordered: callers sort by position);
    otherwise the limited half is wrapped in a derived table, as SQLite requires."""
    m, c = t.messages, t.conversations
    in_conv = m.c.conversation_id == CID
    systems = sa.select(m).where(in_conv, m.c.is_system == 1)
    others = (
        sa.select(m)
        .where(in_conv, m.c.is_system == 0)
        .order_by(m.c.position.desc())
        .limit(sa.bindparam("n"))
    )
    union = sa.union_all(systems, sa.select(others.subquery())).subquery()
    listing = sa.select(c.c.conversation_id).order_by(c.c.conversation_id).limit(sa.bindparam("n"))
    return Statements(
        find=sa.select(m).where(in_conv).order_by(m.c.position),
        find_last=sa.select(m)
        .where(in_conv)
        .order_by(m.c.position.desc())
        .limit(sa.bindparam("n")),
        window=sa.union_all(systems, others)
        if limit_in_union_member
        else sa.select(union).order_by(union.c.position),
        list_first=listing,
        list_after=listing.where(c.c.conversation_id > sa.bindparam("after")),
        insert_messages=sa.insert(m),
        delete_messages=sa.delete(m).where(in_conv),
        delete_conversation=sa.delete(c).where(c.c.conversation_id == CID),
        delete_positions=sa.delete(m).where(
            in_conv, m.c.position.in_(sa.bindparam("positions", expanding=True))
        ),
        delete_non_system_below=sa.delete(m).where(
            in_conv, m.c.is_system == 0, m.c.position < sa.bindparam("below")
        ),
        trim_cut=sa.select(m.c.position)
        .where(in_conv, m.c.is_system == 0)
        .order_by(m.c.position.desc())
        .offset(sa.bindparam("skip"))
        .limit(1),
        any_left=sa.select(m.c.position).where(in_conv).limit(1),
    )


class Compiled:
    """A statement compiled once for an engine's dialect, to run on the driver's own connection (the
    fast paths): its SQL, its positional parameter order (for ``?``/``%s`` drivers), its
    constant parameters, and whether it needs none of SQLAlchemy's parameter processing."""

    def __init__(self, stmt: Any, dialect: Dialect) -> None:
        compiled = stmt.compile(dialect=dialect)
        self.sql: str = compiled.string
        self.order: tuple[str, ...] = tuple(compiled.positiontup or ())
        self.defaults: dict[str, Any] = {n: b.value for b, n in compiled.bind_names.items()}
        self.plain: bool = not compiled._bind_processors and not compiled.post_compile_params
        self._row = itemgetter(*self.order) if len(self.order) > 1 else None

    def args(self, **values: Any) -> tuple[Any, ...]:
        """Positional parameters: ``values`` in the statement's order, constants elsewhere."""
        return tuple(values[k] if k in values else self.defaults[k] for k in self.order)

    def row(self, values: dict[str, Any]) -> tuple[Any, ...]:
        """Positional parameters from ``values`` holding every one the statement binds."""
        if self._row is None:
            return self.args(**values)
        return self._row(values)  # type: ignore[no-any-return]

    def params(self, **values: Any) -> dict[str, Any]:
        """Named parameters: the statement's non-null constants overridden by ``values``."""
        return {**{k: v for k, v in self.defaults.items() if v is not None}, **values}
