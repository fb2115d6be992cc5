"""Oracle Database 19c+ (python-oracledb): what SQLAlchemy Core does not abstract.

- Ids: ``RAW(1020)`` holding the id's UTF-8 bytes. ``VARCHAR2`` compares without padding, but
  a session with ``NLS_COMP=LINGUISTIC`` (and a ``_CI``/``_AI`` sort) would fold case and
  accents, and column collations need ``MAX_STRING_SIZE=EXTENDED``; RAW is always binary.
- Text and payload: ``CLOB`` (``VARCHAR2`` stops at 4000 bytes by default). The payload keeps
  the exact JSON text: Oracle's native ``JSON`` type stores numbers as ``NUMBER``, so ``2.0``
  would come back as ``2``. Oracle reads ``''`` as NULL; the codec keeps ``''`` and ``None``
  text apart in the payload, and ids are never empty.
- Timestamps: ``TIMESTAMP(6)`` (SQLAlchemy's ``DateTime`` is ``DATE`` there: whole seconds).
- Identifiers: Oracle 12.2+ allows 128 bytes; the longest name chatmem makes is the table
  name (at most 50) plus ``_conversation``, so 63.
- Retry: unique violations (ORA-00001), deadlocks (ORA-00060) and serialization failures
  (ORA-08177).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import oracle
from sqlalchemy.exc import DBAPIError, IntegrityError

from .dialects import SqlDialect, Utf8Id

RETRYABLE_ORA = frozenset({1, 60, 8177})


class OracleDialect(SqlDialect):
    """Oracle Database 19c+ and 23ai."""

    name = "oracle"

    def id_type(self) -> sa.types.TypeEngine[Any]:
        return Utf8Id()

    def text_type(self) -> sa.types.TypeEngine[Any]:
        return oracle.CLOB()

    def payload_type(self) -> sa.types.TypeEngine[Any]:
        return oracle.CLOB()

    def timestamp_type(self) -> sa.types.TypeEngine[Any]:
        return oracle.TIMESTAMP()

    def is_retryable(self, exc: DBAPIError) -> bool:
        return isinstance(exc, IntegrityError) or _ora_code(exc) in RETRYABLE_ORA


def _ora_code(exc: DBAPIError) -> int | None:
    """The ORA- number of a python-oracledb error."""
    args = getattr(exc.orig, "args", ())
    code = getattr(args[0], "code", None) if args else None
    return code if isinstance(code, int) else None
