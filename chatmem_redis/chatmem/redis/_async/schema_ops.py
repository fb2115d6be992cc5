"""Creating and checking the search index ``_schema.py`` defines: ``FT.CREATE`` when it is
missing, ``FT.INFO`` read to check an existing one; on a cluster, one index per master."""

from __future__ import annotations

from chatmem.core.backend import require

require("redis", "redis")

import shlex  # noqa: E402
from typing import Any  # noqa: E402

import redis  # noqa: E402
from chatmem.core.backend import SchemaError  # noqa: E402

from .._codec import as_text  # noqa: E402
from .._config import RedisConfig  # noqa: E402
from .._errors import MISSING_INDEX, translate_errors  # noqa: E402
from .._native.cluster import slot_tags  # noqa: E402
from .._schema import index_attributes, index_create_args  # noqa: E402
from . import scripts  # noqa: E402
from .clients import master_slots  # noqa: E402


def schema_statements(config: RedisConfig) -> list[str]:
    """The ``FT.CREATE`` command for ``config``, as redis-cli reads it (arguments with
    spaces or quotes are quoted)."""
    args = ["FT.CREATE", *index_create_args(config)]
    return [" ".join(shlex.quote(a) for a in args)]


def _attribute_names(info: Any) -> set[str]:
    """The attribute names of an ``FT.INFO`` reply (a flat key, value list)."""
    names = set()
    for i in range(0, len(info) - 1, 2):
        if as_text(info[i]) == "attributes":
            for attr in info[i + 1]:
                pairs = [as_text(x) if isinstance(x, (bytes, str)) else x for x in attr]
                names.add(pairs[pairs.index("attribute") + 1])
    return names


class AsyncSearchIndexes:
    """The search index of one repository: on one node, ``index_name``; on a cluster,
    whose search module has no coordinator (an index name is a key of one slot, and an
    index covers the keys of its own node only), ``<index_name>{t}`` per master, ``t`` the
    tag of that master's lowest slot, so the name routes to that master."""

    def __init__(self, client: Any, config: RedisConfig, *, cluster: bool) -> None:
        self._client = client
        self._config = config
        self._cluster = cluster

    async def names(self) -> list[str]:
        """The index of each master (one name on one node)."""
        if not self._cluster:
            return [self._config.index_name]
        tags = slot_tags()
        return [f"{self._config.index_name}{{{tags[s]}}}" for s in await master_slots(self._client)]

    def route(self, name: str) -> list[str]:
        """``KEYS`` of a script on index ``name``: the name itself on a cluster (it routes
        the call to the master holding that index), none on one node."""
        return [name] if self._cluster else []

    async def missing(self) -> list[str]:
        """What ``create_all`` would create; empty when every index exists."""
        with translate_errors("checking the search index"):
            names = await self.names()
            return [f"search index {n}" for n in names if await self.info(n) is None]

    async def create_all(self) -> None:
        """Create each index if missing (race-safe); check an existing one has every
        attribute the configuration queries."""
        with translate_errors("creating the search index"):
            names = await self.names()
        for name in names:
            await self._create(name)

    async def _create(self, name: str) -> None:
        # FT.INFO first: an existing index costs one round trip and no FT.CREATE.
        with translate_errors("creating the search index"):
            info = await self.info(name)
            if info is None:
                try:
                    args = index_create_args(self._config)
                    args[0] = name
                    if self._cluster:
                        node = self._client.get_node_from_key(name)
                        await self._client.execute_command("FT.CREATE", *args, target_nodes=node)
                    else:
                        await self._client.execute_command("FT.CREATE", *args)
                    return
                except redis.ResponseError as exc:
                    if "already exists" not in str(exc).lower():
                        raise
                info = await self.info(name)  # a concurrent creator won: check it
            if info is None:
                raise SchemaError(f"index {name!r} vanished while created")
        missing = index_attributes(self._config) - _attribute_names(info)
        if missing:
            raise SchemaError(
                f"index {name!r} exists without {sorted(missing)}; "
                "drop it (FT.DROPINDEX) or use another index_name"
            )

    async def info(self, name: str) -> Any:
        """``FT.INFO`` of index ``name`` (through a script: one reply shape on RESP2 and
        RESP3), or None when it does not exist."""
        try:
            return await scripts.SEARCH(self._client, self.route(name), ["INFO", name])
        except redis.ResponseError as exc:
            if any(m in str(exc).lower() for m in MISSING_INDEX):
                return None
            raise
