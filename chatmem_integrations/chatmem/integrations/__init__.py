"""Plugging chatmem into apps: lossless conversions and framework adapters.

- ``chatmem.integrations.openai``: chat-completions dicts (no dependency).
- ``chatmem.integrations.langchain``: LangChain messages and ``ChatmemChatMessageHistory``
  (``pip install "chatmem[langchain]"``).
- ``chatmem.integrations.llamaindex``: LlamaIndex ``ChatMessage``, ``ChatmemDBChatStore``
  (for ``Memory``) and ``ChatmemChatStore`` (``pip install "chatmem[llamaindex]"``).

- ``chatmem.integrations.langgraph``: ``ChatmemSaver``, a LangGraph checkpointer
  (``pip install "chatmem[langgraph]"``).
- ``chatmem.integrations.advisors``: Spring AI's ``PromptChatMemoryAdvisor`` and
  ``VectorStoreChatMemoryAdvisor``, over ``vectorstore`` (in memory) or ``redis_vectorstore``.

Nothing is imported here, so importing this package never imports a framework.
"""

__all__: list[str] = []
