"""``RedisVectorStore`` and its async twin ``AsyncRedisVectorStore``: the advisor's vector store
on Redis with RediSearch vector fields (Redis 8, Redis Stack). Needs
``pip install "chatmem[redis]"``.

Each document is one hash (``key_prefix`` + id) holding its text, its metadata as JSON, its
float32 vector and one TAG field per name in ``metadata_fields``. A TAG holds the SHA-256 of
the value, so any value (commas, spaces, quotes, any script) is filtered exactly and nothing
from a caller is ever spliced into a query: the query names only our validated field names
and hex digests, and the vector travels as a bound parameter. The index (FLAT, cosine) is
created on the first ``add``, when the vector length is known; creating it is idempotent.
A store built on your client never closes it; ``from_url`` makes one that ``close()`` (or
``with`` / ``async with``) closes.
"""

from __future__ import annotations

from chatmem.core.backend import require

require("redis", "redis")

from ._async.redis_vectorstore import AsyncRedisVectorStore  # noqa: E402
from ._redis_vectors import (  # noqa: E402
    DEFAULT_INDEX_NAME,
    DEFAULT_KEY_PREFIX,
    DEFAULT_METADATA_FIELDS,
)
from ._sync.redis_vectorstore import RedisVectorStore  # noqa: E402

__all__ = [
    "DEFAULT_INDEX_NAME",
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_METADATA_FIELDS",
    "AsyncRedisVectorStore",
    "RedisVectorStore",
]
