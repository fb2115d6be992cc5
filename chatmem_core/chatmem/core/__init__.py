"""chatmem.core: the message model, the repository contract, window memory and turns."""

from importlib.metadata import PackageNotFoundError, version

from ._advisor import CONVERSATION_ID, AsyncChatMemory, ChatMemory, MessageChatMemoryAdvisor
from ._async.memory import AsyncMessageWindowChatMemory
from ._async.repository import (
    AsyncBaseChatMemoryRepository,
    AsyncChatMemoryRepository,
    AsyncInMemoryChatMemoryRepository,
    async_retry,
)
from ._codec import (
    FORMAT_VERSION,
    decode_json,
    encode_json,
    from_micros,
    media_from_dict,
    media_to_dict,
    message_from_dict,
    message_to_dict,
    to_micros,
)
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
from ._observe import instrument
from ._registry import (
    async_repository_class_for_url,
    async_repository_from_url,
    repository_class_for_url,
    repository_from_url,
)
from ._schema_mode import (
    DEFAULT_SCHEMA_MODE,
    SchemaMode,
    missing_schema_message,
    schema_mode,
)
from ._sync.memory import DEFAULT_MAX_MESSAGES, MessageWindowChatMemory
from ._sync.repository import (
    BaseChatMemoryRepository,
    Capability,
    ChatMemoryRepository,
    ConversationIdPage,
    InMemoryChatMemoryRepository,
    retry,
    stamp,
    window_source,
)
from ._sync.schema_check import SchemaCheck
from ._token_window import DEFAULT_MAX_TOKENS, TokenWindowChatMemory, token_window_of
from ._turns import (
    ChatTurn,
    Preprocessor,
    apply_preprocessors,
    drop_system_messages,
    filter_messages,
    window_size,
)
from ._window import WindowEdit, add_to_window, apply_window_edit, plan_window_edit, window_of

instrument(BaseChatMemoryRepository, AsyncBaseChatMemoryRepository)  # no-op without OTel


def _version() -> str:
    """The installed distribution's version (``chatmem`` has no top-level package to hold
    it: ``chatmem`` is a PEP 420 namespace), or ``0+unknown`` when run from a bare tree."""
    try:
        return version("chatmem")
    except PackageNotFoundError:
        return "0+unknown"


__version__ = _version()

__all__ = [
    "CONVERSATION_ID",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_SCHEMA_MODE",
    "FORMAT_VERSION",
    "AssistantMessage",
    "AsyncBaseChatMemoryRepository",
    "AsyncChatMemory",
    "AsyncChatMemoryRepository",
    "AsyncInMemoryChatMemoryRepository",
    "AsyncMessageWindowChatMemory",
    "BackendError",
    "BackendUnavailableError",
    "BaseChatMemoryRepository",
    "Capability",
    "ChatMemory",
    "ChatMemoryError",
    "ChatMemoryRepository",
    "ChatTurn",
    "ConcurrencyError",
    "ConversationIdPage",
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
    "SchemaCheck",
    "SchemaError",
    "SchemaMode",
    "SystemMessage",
    "TokenWindowChatMemory",
    "ToolCall",
    "ToolResponse",
    "ToolResponseMessage",
    "UserMessage",
    "WindowEdit",
    "__version__",
    "add_to_window",
    "apply_preprocessors",
    "apply_window_edit",
    "async_repository_class_for_url",
    "async_repository_from_url",
    "async_retry",
    "decode_json",
    "drop_system_messages",
    "encode_json",
    "filter_messages",
    "from_micros",
    "media_from_dict",
    "media_to_dict",
    "message_from_dict",
    "message_to_dict",
    "missing_schema_message",
    "plan_window_edit",
    "repository_class_for_url",
    "repository_from_url",
    "retry",
    "schema_mode",
    "stamp",
    "to_micros",
    "token_window_of",
    "window_of",
    "window_size",
    "window_source",
]
