"""The review REST API and page: a FastAPI router to mount in your app, or ``create_app``
for a standalone server (``chatmem serve``). Needs ``pip install "chatmem[api]"``.

Routes (under the prefix you mount at):

- ``GET /memories?user_id=&agent_id=&status=&type=&limit=&cursor=``: a page of records;
- ``GET /memories/{id}``; ``DELETE /memories/{id}``;
- ``POST /memories/{id}/approve`` and ``/reject`` with an optional JSON body
  ``{"reviewer": ..., "reason": ...}``; 409 when the record is no longer pending;
- ``POST /memories/expire``: persist due expiries.

Errors are JSON ``{"detail": ...}``: 422 for a bad argument (naming it), 404 for an unknown
id, 409 for a lost review. Authentication is the ``auth`` dependency you pass (any FastAPI
dependency: it raises to refuse); ``api_key_auth(key)`` is the one ``chatmem serve`` uses.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from importlib import resources
from typing import Annotated, Any

from chatmem.core._errors import ChatMemoryError, InvalidArgumentError, require

require("fastapi", "api")

from fastapi import APIRouter, Body, Depends, FastAPI, HTTPException, Request  # noqa: E402
from fastapi.responses import HTMLResponse  # noqa: E402

from ._model import MemoryNotFoundError, MemoryRecord, MemoryStateError  # noqa: E402
from ._repository import MemoryRecordRepository  # noqa: E402

API_KEY_HEADER = "X-API-Key"
Auth = Callable[..., Any]


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


def memory_router(repository: MemoryRecordRepository, *, auth: Auth | None = None) -> APIRouter:
    """The review API on ``repository``; every route depends on ``auth`` when given."""
    if not isinstance(repository, MemoryRecordRepository):
        raise InvalidArgumentError("repository", "must be a MemoryRecordRepository")
    if auth is not None and not callable(auth):
        raise InvalidArgumentError("auth", "must be a FastAPI dependency (a callable)")
    router = APIRouter(dependencies=[Depends(auth)] if auth is not None else [])

    def call(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ChatMemoryError as exc:
            raise _http_error(exc) from None

    # Plain ``def`` routes: FastAPI runs them on its thread pool, so a sync store never
    # blocks the event loop.
    @router.get("/memories")
    def list_memories(
        user_id: str | None = None,
        agent_id: str | None = None,
        status: str | None = None,
        type: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, object]:
        page = call(
            lambda: repository.find(
                agent_id=agent_id,
                user_id=user_id,
                status=status,
                memory_type=type,
                limit=limit,
                cursor=cursor,
            )
        )
        return {"items": [_body(r) for r in page.records], "next_cursor": page.next_cursor}

    @router.post("/memories/expire")
    def expire() -> dict[str, int]:
        return {"expired": call(repository.expire_due)}

    @router.get("/memories/{record_id}")
    def get_memory(record_id: str) -> dict[str, object]:
        record = call(lambda: repository.get(record_id))
        if record is None:
            raise HTTPException(status_code=404, detail=f"no memory {record_id}")
        return _body(record)

    def review_body(body: dict[str, Any] | None) -> tuple[Any, Any]:
        if body is None:
            return None, None
        unknown = set(body) - {"reviewer", "reason"}
        if unknown:
            raise HTTPException(
                status_code=422,
                detail={"argument": "body", "message": f"unknown fields {sorted(unknown)}"},
            )
        return body.get("reviewer"), body.get("reason")

    @router.post("/memories/{record_id}/approve")
    def approve(
        record_id: str, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> dict[str, object]:
        reviewer, reason = review_body(body)
        return _body(call(lambda: repository.approve(record_id, reviewer=reviewer, reason=reason)))

    @router.post("/memories/{record_id}/reject")
    def reject(
        record_id: str, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> dict[str, object]:
        reviewer, reason = review_body(body)
        return _body(call(lambda: repository.reject(record_id, reviewer=reviewer, reason=reason)))

    @router.delete("/users/{user_id}/memories")
    def forget_user(user_id: str, agent_id: str | None = None) -> dict[str, int]:
        """A user's "forget me": every memory of the user (of one agent with ``agent_id``)."""
        return {"deleted": call(lambda: repository.forget_user(user_id, agent_id=agent_id))}

    @router.delete("/memories/{record_id}")
    def delete(record_id: str) -> dict[str, bool]:
        if not call(lambda: repository.delete(record_id)):
            raise HTTPException(status_code=404, detail=f"no memory {record_id}")
        return {"deleted": True}

    return router


def review_page() -> str:
    """The review page's HTML (it calls the API at ``./api``)."""
    return resources.files(__package__).joinpath("review.html").read_text(encoding="utf-8")


def create_app(
    repository: MemoryRecordRepository, *, auth: Auth | None = None, title: str = "chatmem"
) -> FastAPI:
    """A standalone app: the review page at ``/`` and the API under ``/api``. The page
    holds no data; it asks for the API key and sends it with each call."""
    app = FastAPI(title=f"{title} memory review")
    app.include_router(memory_router(repository, auth=auth), prefix="/api")
    page = review_page()

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> str:
        return page

    return app
