"""Plugging chatmem into apps and agent frameworks: lossless conversions and adapters, one
public module per framework, each behind its own extra.

- ``chatmem.integrations.openai``: chat-completions dicts (no dependency).
- ``chatmem.integrations.langchain``: LangChain messages and ``ChatmemChatMessageHistory``
  (``pip install "chatmem[langchain]"``).
- ``chatmem.integrations.langgraph``: ``ChatmemSaver``, a LangGraph checkpointer, and
  ``chatmem.integrations.langgraph_store``: ``ChatmemStore``, its ``BaseStore``
  (``pip install "chatmem[langgraph]"``).
- ``chatmem.integrations.llamaindex``: LlamaIndex ``ChatMessage``, ``ChatmemDBChatStore``
  (for ``Memory``) and ``ChatmemChatStore`` (``pip install "chatmem[llamaindex]"``).
- ``chatmem.integrations.pydantic_ai``: ``ChatmemMessageHistory``, an agent's message history
  stored after each successful run (``pip install "chatmem[pydantic-ai]"``).
- ``chatmem.integrations.openai_agents``: ``ChatmemSession``, the OpenAI Agents SDK's session
  store (``pip install "chatmem[openai-agents]"``).
- ``chatmem.integrations.adk``: Google ADK's session and memory services
  (``pip install "chatmem[google-adk]"``).
- ``chatmem.integrations.agent_framework``: ``ChatmemHistoryProvider``,
  ``ChatmemSessionStore`` and ``ChatmemMemoryProvider``, Microsoft Agent Framework's history
  provider, session store and a context provider of reviewed memories
  (``pip install "chatmem[agent-framework]"``).
- ``chatmem.integrations.strands``: ``ChatmemSessionRepository`` and ``ChatmemSessionManager``,
  Strands Agents' session repository (``pip install "chatmem[strands]"``).
- ``chatmem.integrations.advisors``: Spring AI's ``PromptChatMemoryAdvisor`` and
  ``VectorStoreChatMemoryAdvisor`` (no dependency), over the vector stores of
  ``vectorstore`` (in memory), ``redis_vectorstore`` (``chatmem[redis]``) and
  ``pgvector_vectorstore`` (``chatmem[postgres]``).

Importing a module whose framework is missing raises ``MissingDependencyError`` (an
``ImportError``) naming the extra; nothing is imported here, so importing this package never
imports a framework. The package imports only public core names (``chatmem.core``,
``chatmem.core.backend``) and never a store package: an adapter works on any store.

One async strategy: async methods await an async repository (or client) and nothing runs a
sync repository in a worker thread. An adapter whose framework calls one object both ways
takes ``repository=`` and ``async_repository=`` (two clients of one store); a method whose
repository was not given raises ``InvalidArgumentError`` naming what to pass, unless the
framework's own base class defines that async method as the sync one in its executor
(LangChain's history, LlamaIndex's ``BaseChatStore``), which is then left to the framework.
The I/O of an adapter is written once in ``_async/`` and its sync twin generated in
``_sync/`` (``scripts/unasync.py``); conversions and record logic are pure modules beside.

A new framework (issues 30 and 31: the OpenAI Agents SDK, Google ADK, Agent
Framework, Strands) is one more public module here: ``require(<its module>, <its extra>)``
first, its extra in ``pyproject.toml`` pulling only the framework, its I/O in ``_async/``,
``_repos.pick`` for a sync/async pair, and its tests in ``chatmem_integrations/tests`` on the
shared store fixtures of ``test_adapters``.
"""

__all__: list[str] = []
