"""The review REST API and page: a FastAPI router to mount in your app, or ``create_app``
for a standalone server (``chatmem serve``). Needs ``pip install "chatmem[api]"``. The store
may be sync (its calls run on FastAPI's thread pool) or async (awaited on the loop).

Routes (under the prefix you mount at):

- ``GET /memories?user_id=&agent_id=&status=&type=&q=&min_confidence=&max_confidence=``
  ``&limit=&cursor=``: a page of records, oldest first; ``q`` is a case-insensitive
  substring of the content.
  With ``q`` or a confidence bound a request reads at most ``scan_limit`` records, so a page
  may hold fewer than ``limit`` items and still have a ``next_cursor`` (and says how many it
  ``scanned``);
- ``GET /memories/{id}``; ``DELETE /memories/{id}``;
- ``GET /memories/{id}/context?around=3``: the chat messages around the one the memory came
  from (needs ``chat``, the chat repository of the conversations);
- ``POST /memories/{id}/approve`` and ``/reject`` with an optional JSON body
  ``{"reviewer": ..., "reason": ...}`` (approve also takes ``"content"``: the corrected
  wording, the proposed one kept as ``original_content``); 409 when the record
  is no longer pending;
- ``POST /memories/bulk`` ``{"action": "approve"|"reject"|"delete", "ids": [...],
  "reviewer"?, "reason"?}``: every id validated before any is touched, then one result per id;
- ``DELETE /users/{user_id}/memories?agent_id=``: a user's "forget me";
- ``GET /agents/{agent_id}/settings``; ``PUT`` it with ``{"enabled"?, "pending_ttl_seconds"?}``:
  the agent's long-term memory switch and pending expiry (a running memory applies a change
  within its ``settings_refresh``);
- ``POST /memories/expire``: persist due expiries.

Errors are JSON ``{"detail": ...}``: 422 for a bad argument (naming it), 404 for an unknown
id, 409 for a lost review. Authentication is the ``auth`` dependency you pass (any FastAPI
dependency: it raises to refuse); ``api_key_auth(key)`` is the one ``chatmem serve`` uses.
"""

from __future__ import annotations

import functools
import hmac
import inspect
from collections.abc import Awaitable, Callable
from datetime import timedelta
from importlib import resources
from typing import Annotated, Any, TypeVar

from chatmem.core._errors import ChatMemoryError, InvalidArgumentError, require
from chatmem.core._validation import validate_positive_int

require("fastapi", "api")

from fastapi import APIRouter, Body, Depends, FastAPI, HTTPException, Request  # noqa: E402
from fastapi.concurrency import run_in_threadpool  # noqa: E402
from fastapi.responses import HTMLResponse  # noqa: E402

from . import _review as review  # noqa: E402
from ._async.repository import AsyncMemoryRecordRepository  # noqa: E402
from ._async.settings import async_get_settings, async_put_settings  # noqa: E402
from ._model import (  # noqa: E402
    MemoryNotFoundError,
    MemoryRecord,
    MemoryRecordPage,
    MemoryStateError,
)
from ._repository import MemoryRecordRepository  # noqa: E402
from ._stores import takes_option  # noqa: E402
from ._sync.settings import get_settings, put_settings  # noqa: E402

API_KEY_HEADER = "X-API-Key"
Auth = Callable[..., Any]
R = TypeVar("R")
SETTINGS_GET = (get_settings, async_get_settings)
SETTINGS_PUT = (put_settings, async_put_settings)


def api_key_auth(api_key: str) -> Auth:
    """A dependency accepting requests with ``X-API-Key: <key>`` or ``Authorization: Bearer
    <key>`` (compared in constant time); anything else gets 401."""
    if not isinstance(api_key, str) or len(api_key) < 8:
        raise InvalidArgumentError("api_key", "must be a str of at least 8 characters")
    expected = api_key.encode("utf-8")

    def check(request: Request) -> None:
        given = request.headers.get(API_KEY_HEADER)
        bearer = request.headers.get("Authorization", "")
        if given is None and bearer.lower().startswith("bearer "):
            given = bearer[7:].strip()
        if given is None or not hmac.compare_digest(given.encode("utf-8"), expected):
            raise HTTPException(
                status_code=401,
                detail=f"missing or wrong API key (send it in {API_KEY_HEADER})",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return check


def _body(record: MemoryRecord) -> dict[str, object]:
    return record.to_dict()


def _http_error(exc: ChatMemoryError) -> HTTPException:
    if isinstance(exc, MemoryNotFoundError):
        return HTTPException(status_code=404, detail=str(exc))
    if isinstance(exc, MemoryStateError):
        return HTTPException(status_code=409, detail=str(exc))
    if isinstance(exc, InvalidArgumentError):
        return HTTPException(
            status_code=422, detail={"argument": exc.argument, "message": str(exc)}
        )
    return HTTPException(status_code=503, detail=f"memory store failed: {exc}")


def _is_async(repository: object, method: str) -> bool:
    return inspect.iscoroutinefunction(getattr(repository, method, None))


def _caller(repository: object, probe: str) -> Callable[..., Awaitable[Any]]:
    """``await call(method, *args)``: on the loop for an async store, on FastAPI's thread
    pool for a sync one (which ``probe``, one of its methods, tells), so neither blocks the
    event loop. ``method`` is the store's method name, or a ``(sync_function,
    async_function)`` pair taking the store first. Store errors become HTTP ones."""
    is_async = _is_async(repository, probe)

    async def call(method: str | tuple[Any, Any], *args: Any, **kwargs: Any) -> Any:
        if isinstance(method, tuple):
            fn = functools.partial(method[1] if is_async else method[0], repository)
        else:
            fn = getattr(repository, method)
        try:
            if is_async:
                return await fn(*args, **kwargs)
            return await run_in_threadpool(fn, *args, **kwargs)
        except ChatMemoryError as exc:
            raise _http_error(exc) from None

    return call


def _checked(build: Callable[[], R]) -> R:
    try:
        return build()
    except ChatMemoryError as exc:
        raise _http_error(exc) from None


def memory_router(
    repository: MemoryRecordRepository | AsyncMemoryRecordRepository,
    *,
    auth: Auth | None = None,
    chat: object | None = None,
    scan_limit: int = review.DEFAULT_SCAN_LIMIT,
) -> APIRouter:
    """The review API on ``repository`` (a sync or an async record store); every route
    depends on ``auth`` when given. ``chat`` (a sync or async chat repository holding the
    conversations the memories came from) serves each memory's source messages."""
    if not all(callable(getattr(repository, m, None)) for m in ("find", "get", "approve")):
        raise InvalidArgumentError("repository", "must be a MemoryRecordRepository")
    if auth is not None and not callable(auth):
        raise InvalidArgumentError("auth", "must be a FastAPI dependency (a callable)")
    if chat is not None and not callable(getattr(chat, "find_by_conversation_id", None)):
        raise InvalidArgumentError("chat", "must be a chat memory repository")
    scan = validate_positive_int(scan_limit, "scan_limit")
    router = APIRouter(dependencies=[Depends(auth)] if auth is not None else [])
    call = _caller(repository, "find")
    chat_call = None if chat is None else _caller(chat, "find_by_conversation_id")
    edits = takes_option(repository.approve, "content")

    @router.get("/memories")
    async def list_memories(
        user_id: str | None = None,
        agent_id: str | None = None,
        status: str | None = None,
        type: str | None = None,
        q: str | None = None,
        min_confidence: float | None = None,
        max_confidence: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, object]:
        wanted = _checked(lambda: review.text_filter(q, min_confidence, max_confidence))

        async def find(**page: Any) -> MemoryRecordPage:
            found: MemoryRecordPage = await call(
                "find", agent_id=agent_id, user_id=user_id, status=status, memory_type=type, **page
            )
            return found

        try:
            page, scanned = await review.filtered_page(
                find, wanted, limit=limit, cursor=cursor, scan_limit=scan
            )
        except ChatMemoryError as exc:  # the limit's validation; store errors come as HTTP
            raise _http_error(exc) from None
        body: dict[str, object] = {
            "items": [_body(r) for r in page.records],
            "next_cursor": page.next_cursor,
        }
        if wanted.active:
            body["scanned"] = scanned
        return body

    @router.post("/memories/expire")
    async def expire() -> dict[str, int]:
        return {"expired": await call("expire_due")}

    @router.post("/memories/bulk")
    async def bulk(body: Annotated[dict[str, Any], Body()]) -> dict[str, object]:
        """Decide many records at once; each gets its own result (one losing a race to
        another reviewer does not stop the rest)."""
        request = _checked(lambda: review.bulk_request(body))
        results: list[dict[str, object]] = []
        for rid in request.ids:
            try:
                if request.action == "delete":
                    deleted = await call("delete", rid)
                    results.append({"id": rid, "deleted": deleted} if deleted else _missing(rid))
                    continue
                record = await call(
                    request.action, rid, reviewer=request.reviewer, reason=request.reason
                )
                results.append({"id": rid, "status": record.status.value, "record": _body(record)})
            except HTTPException as exc:
                results.append({"id": rid, "error": exc.status_code, "detail": exc.detail})
        return {"results": results}

    @router.get("/memories/{record_id}")
    async def get_memory(record_id: str) -> dict[str, object]:
        record = await call("get", record_id)
        if record is None:
            raise HTTPException(status_code=404, detail=f"no memory {record_id}")
        return _body(record)

    @router.get("/memories/{record_id}/context")
    async def context(record_id: str, around: int = review.DEFAULT_AROUND) -> dict[str, object]:
        """The chat messages around the one a memory was extracted from."""
        size = _checked(lambda: review.validate_around(around))
        record = await call("get", record_id)
        if record is None:
            raise HTTPException(status_code=404, detail=f"no memory {record_id}")
        if record.conversation_id is None:
            raise HTTPException(status_code=404, detail=f"memory {record_id} names no conversation")
        if chat_call is None:
            raise HTTPException(
                status_code=404, detail="no chat store is configured (chatmem serve --chat-url)"
            )
        messages = await chat_call("find_by_conversation_id", record.conversation_id)
        return review.source_context(record, messages, size)

    def review_body(body: dict[str, Any] | None, *, approving: bool) -> dict[str, Any]:
        if body is None:
            return {}
        allowed = {"reviewer", "reason", "content"} if approving else {"reviewer", "reason"}
        unknown = set(body) - allowed
        if unknown:
            raise HTTPException(
                status_code=422,
                detail={"argument": "body", "message": f"unknown fields {sorted(unknown)}"},
            )
        if "content" in body and body["content"] is not None and not edits:
            raise HTTPException(
                status_code=422,
                detail={
                    "argument": "content",
                    "message": f"{type(repository).__name__} cannot edit a memory's content",
                },
            )
        return {k: v for k, v in body.items() if k != "content" or v is not None}

    @router.post("/memories/{record_id}/approve")
    async def approve(
        record_id: str, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> dict[str, object]:
        """Approve a pending memory; ``content`` in the body corrects its wording first
        (the store keeps the original)."""
        options = review_body(body, approving=True)
        return _body(await call("approve", record_id, **options))

    @router.post("/memories/{record_id}/reject")
    async def reject(
        record_id: str, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> dict[str, object]:
        return _body(await call("reject", record_id, **review_body(body, approving=False)))

    @router.delete("/users/{user_id}/memories")
    async def forget_user(user_id: str, agent_id: str | None = None) -> dict[str, int]:
        """A user's "forget me": every memory of the user (of one agent with ``agent_id``)."""
        return {"deleted": await call("forget_user", user_id, agent_id=agent_id)}

    @router.get("/agents/{agent_id}/settings")
    async def agent_settings(agent_id: str) -> dict[str, object]:
        """The agent's long-term memory settings (the defaults when none are stored)."""
        settings = await call(SETTINGS_GET, agent_id)
        return {"agent_id": agent_id, **settings.to_dict()}

    @router.put("/agents/{agent_id}/settings")
    async def change_settings(
        agent_id: str, body: Annotated[dict[str, Any], Body()]
    ) -> dict[str, object]:
        """Change ``enabled`` and/or ``pending_ttl_seconds``; a running ``LongTermMemory``
        of the agent applies it within its ``settings_refresh``."""
        unknown = set(body) - {"enabled", "pending_ttl_seconds"}
        if unknown or not body:
            message = f"unknown fields {sorted(unknown)}" if unknown else "names no setting"
            raise HTTPException(status_code=422, detail={"argument": "body", "message": message})
        ttl = body.get("pending_ttl_seconds")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int)):
            raise HTTPException(
                status_code=422,
                detail={"argument": "pending_ttl_seconds", "message": "must be an int"},
            )
        settings = await call(
            SETTINGS_PUT,
            agent_id,
            enabled=body.get("enabled"),
            pending_ttl=None if ttl is None else timedelta(seconds=ttl),
        )
        return {"agent_id": agent_id, **settings.to_dict()}

    @router.delete("/memories/{record_id}")
    async def delete(record_id: str) -> dict[str, bool]:
        if not await call("delete", record_id):
            raise HTTPException(status_code=404, detail=f"no memory {record_id}")
        return {"deleted": True}

    return router


def _missing(record_id: str) -> dict[str, object]:
    return {"id": record_id, "error": 404, "detail": f"no memory {record_id}"}


def review_page() -> str:
    """The review page's HTML (it calls the API at ``./api``)."""
    return resources.files(__package__).joinpath("review.html").read_text(encoding="utf-8")


def create_app(
    repository: MemoryRecordRepository | AsyncMemoryRecordRepository,
    *,
    auth: Auth | None = None,
    title: str = "chatmem",
    chat: object | None = None,
) -> FastAPI:
    """A standalone app: the review page at ``/`` and the API under ``/api``. The page
    holds no data; it asks for the API key and sends it with each call."""
    app = FastAPI(title=f"{title} memory review")
    app.include_router(memory_router(repository, auth=auth, chat=chat), prefix="/api")
    page = review_page()

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> str:
        return page

    return app
