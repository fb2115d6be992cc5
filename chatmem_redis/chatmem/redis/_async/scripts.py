"""The Lua scripts of ``_plan`` as callables: EVALSHA, the source loaded on NOSCRIPT."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from chatmem.core.backend import require

require("redis", "redis")

from redis.exceptions import NoScriptError  # noqa: E402

from .. import _plan  # noqa: E402


class Script:
    """A Lua script run by EVALSHA, loaded on NOSCRIPT (works on clients and pipelines)."""

    def __init__(self, source: str) -> None:
        self.source = source
        # Redis names scripts by SHA-1; sent as bytes, as the keys are (nothing to encode)
        self.sha = hashlib.sha1(source.encode("utf-8")).hexdigest().encode()

    async def __call__(self, client: Any, keys: Sequence[str | bytes], args: Sequence[Any]) -> Any:
        try:
            return await client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:
            await client.script_load(self.source)
            return await client.execute_command("EVALSHA", self.sha, len(keys), *keys, *args)


APPEND = Script(_plan.APPEND)
APPEND_AND_TAIL = Script(_plan.APPEND_AND_TAIL)
SAVE_ALL = Script(_plan.SAVE_ALL)
DELETE = Script(_plan.DELETE)
IDS_PAGE = Script(_plan.IDS_PAGE)
SEARCH = Script(_plan.SEARCH)
SEARCH_MESSAGES = Script(_plan.SEARCH_MESSAGES)
FLUSH = Script(_plan.FLUSH)
