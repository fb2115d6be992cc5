"""The sync record store contract, base and in-memory store under the path the package's
modules import them from; the code is generated into ``_sync/`` from ``_async/``."""

from ._sync.in_memory import InMemoryMemoryRecordRepository
from ._sync.repository import BaseMemoryRecordRepository, MemoryRecordRepository

__all__ = ["BaseMemoryRecordRepository", "InMemoryMemoryRecordRepository", "MemoryRecordRepository"]
