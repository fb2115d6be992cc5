"""chatmem.core: the message model, the repository contract, window memory and turns.

This namespace is the user API: what an application imports to keep conversation memory.
What a store implementation needs from core (base classes, hooks, retry, validation, the
wire encoder...) is the backend SPI in ``chatmem.core.backend``.

Every I/O class comes in two twins with the same methods: ``Async*`` awaits its store's
asyncio driver, and the plain one (generated from it) blocks. Pass each the repository of its
own kind; a mismatch is an ``InvalidArgumentError`` naming the argument, before any I/O.
"""

from importlib import metadata as _metadata

from ._advisor import CONVERSATION_ID, AsyncChatMemory, ChatMemory, MessageChatMemoryAdvisor
from ._async.memory import AsyncMessageWindowChatMemory
from ._async.repository import AsyncChatMemoryRepository, AsyncInMemoryChatMemoryRepository
from ._async.token_window import AsyncTokenWindowChatMemory
from ._codec import media_from_dict, media_to_dict, message_from_dict, message_to_dict
from ._errors import (
    BackendError,
    BackendUnavailableError,
    ChatMemoryError,
    ConcurrencyError,
    InvalidArgumentError,
    InvalidIdentifierError,
    MissingDependencyError,
    SchemaError,
)
from ._messages import (
    AssistantMessage,
    Media,
    Message,
    MessageType,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from ._registry import (
    async_repository_class_for_url,
    async_repository_from_url,
    repository_class_for_url,
    repository_from_url,
)
from ._schema_mode import SchemaMode
from ._sync.memory import DEFAULT_MAX_MESSAGES, MessageWindowChatMemory
from ._sync.repository import ChatMemoryRepository, InMemoryChatMemoryRepository
from ._sync.token_window import TokenWindowChatMemory
from ._token_window import DEFAULT_MAX_TOKENS, TOKENS_KEY
from ._turns import (
    ChatTurn,
    Preprocessor,
    apply_preprocessors,
    drop_system_messages,
    filter_messages,
    window_size,
)


def _instrument() -> None:
    """Trace every repository's public calls when OpenTelemetry is installed (else no-op)."""
    from ._async.repository import AsyncBaseChatMemoryRepository
    from ._observe import instrument
    from ._sync.repository import BaseChatMemoryRepository

    instrument(BaseChatMemoryRepository, AsyncBaseChatMemoryRepository)


def _version() -> str:
    """The installed distribution's version (``chatmem`` has no top-level package to hold
    it: ``chatmem`` is a PEP 420 namespace), or ``0+unknown`` when run from a bare tree."""
    try:
        return _metadata.version("chatmem")
    except _metadata.PackageNotFoundError:
        return "0+unknown"


_instrument()


__version__ = _version()

__all__ = [
    "CONVERSATION_ID",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_TOKENS",
    "TOKENS_KEY",
    "AssistantMessage",
    "AsyncChatMemory",
    "AsyncChatMemoryRepository",
    "AsyncInMemoryChatMemoryRepository",
    "AsyncMessageWindowChatMemory",
    "AsyncTokenWindowChatMemory",
    "BackendError",
    "BackendUnavailableError",
    "ChatMemory",
    "ChatMemoryError",
    "ChatMemoryRepository",
    "ChatTurn",
    "ConcurrencyError",
    "InMemoryChatMemoryRepository",
    "InvalidArgumentError",
    "InvalidIdentifierError",
    "Media",
    "Message",
    "MessageChatMemoryAdvisor",
    "MessageType",
    "MessageWindowChatMemory",
    "MissingDependencyError",
    "Preprocessor",
    "SchemaError",
    "SchemaMode",
    "SystemMessage",
    "TokenWindowChatMemory",
    "ToolCall",
    "ToolResponse",
    "ToolResponseMessage",
    "UserMessage",
    "__version__",
    "apply_preprocessors",
    "async_repository_class_for_url",
    "async_repository_from_url",
    "drop_system_messages",
    "filter_messages",
    "media_from_dict",
    "media_to_dict",
    "message_from_dict",
    "message_to_dict",
    "repository_class_for_url",
    "repository_from_url",
    "window_size",
]
