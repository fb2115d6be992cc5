"""``PgVectorStore`` and its async twin ``AsyncPgVectorStore``: the advisor's vector store in
PostgreSQL with the pgvector extension. Needs ``pip install "chatmem[postgres]"``.

One table (``table_name``): ``id`` text key, ``text``, ``metadata`` jsonb and an
``embedding vector(n)``, created with the extension on the first ``add`` when the vector
length is known (``initialize_schema=False`` leaves both to you). Search orders by cosine
distance (``<=>``) in the database; the filter is JSON containment (``metadata @> filter``)
and every value, vector and filter is a bound parameter; the table name is validated and
quoted. The sync store takes a SQLAlchemy ``Engine``, the async one an ``AsyncEngine``
(``postgresql+psycopg://``: psycopg serves both); ``from_url`` makes an engine that
``close()`` disposes of.
"""

from __future__ import annotations

from chatmem.core.backend import require

require("sqlalchemy", "postgres")

from ._async.pgvector_vectorstore import AsyncPgVectorStore  # noqa: E402
from ._pgvector_sql import DEFAULT_TABLE_NAME  # noqa: E402
from ._sync.pgvector_vectorstore import PgVectorStore  # noqa: E402

__all__ = ["DEFAULT_TABLE_NAME", "AsyncPgVectorStore", "PgVectorStore"]
