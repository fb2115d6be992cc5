"""The review REST API on every record store: filters, paging, approve/reject/delete,
clear 4xx errors, and the authentication hook."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi import FastAPI, Header, HTTPException
from fastapi.testclient import TestClient

from chatmem.core import InvalidArgumentError
from chatmem.core.longterm import BaseMemoryRecordRepository, MemoryCandidate, MemoryType
from chatmem.core.longterm.api import api_key_auth, create_app, memory_router

from .conftest import api_client

KEY = "s3cret-key-for-tests"
H = {"X-API-Key": KEY}


def seed(records: BaseMemoryRecordRepository) -> list[str]:
    ids = []
    for user, kind, text in [
        ("ana", "preference", "The user prefers tables."),
        ("ana", "fact", "The user is a CTO."),
        ("bob", "context", "The user travels next week."),
    ]:
        c = MemoryCandidate(memory_type=MemoryType(kind), content=text, confidence=0.8)
        ids.append(records.add("agent", user, c).record.id)
    return ids


@pytest.fixture
def client_and_ids(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> tuple[TestClient, list[str]]:
    records = make_records()
    client = api_client(records, lambda store: create_app(store, auth=api_key_auth(KEY)))
    return client, seed(records)


def test_list_filter_and_page(client_and_ids: tuple[TestClient, list[str]]) -> None:
    client, ids = client_and_ids
    everything = client.get("/api/memories", headers=H).json()
    # One clock instant for all three: ties are ordered by id.
    assert [i["id"] for i in everything["items"]] == sorted(ids)
    assert everything["next_cursor"] is None
    ana = client.get("/api/memories", params={"user_id": "ana", "type": "fact"}, headers=H).json()
    assert [i["content"] for i in ana["items"]] == ["The user is a CTO."]
    first = client.get("/api/memories", params={"limit": 2}, headers=H).json()
    rest = client.get(
        "/api/memories", params={"limit": 2, "cursor": first["next_cursor"]}, headers=H
    ).json()
    assert [i["id"] for i in first["items"] + rest["items"]] == sorted(ids)


def test_review_and_delete(client_and_ids: tuple[TestClient, list[str]]) -> None:
    client, ids = client_and_ids
    ok = client.post(
        f"/api/memories/{ids[0]}/approve", json={"reviewer": "rita", "reason": "fine"}, headers=H
    )
    assert ok.status_code == 200
    assert (ok.json()["status"], ok.json()["reviewer"], ok.json()["reason"]) == (
        "approved",
        "rita",
        "fine",
    )
    no = client.post(f"/api/memories/{ids[1]}/reject", headers=H)
    assert no.status_code == 200 and no.json()["status"] == "rejected"
    again = client.post(f"/api/memories/{ids[1]}/approve", headers=H)
    assert again.status_code == 409 and "rejected" in again.json()["detail"]
    assert (
        client.get("/api/memories", params={"status": "approved"}, headers=H).json()["items"][0][
            "id"
        ]
        == ids[0]
    )
    assert client.delete(f"/api/memories/{ids[2]}", headers=H).json() == {"deleted": True}
    assert client.delete(f"/api/memories/{ids[2]}", headers=H).status_code == 404
    assert client.get(f"/api/memories/{ids[2]}", headers=H).status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "argument"),
    [
        ("get", "/api/memories", {"params": {"status": "maybe"}}, 422, "status"),
        ("get", "/api/memories", {"params": {"type": "opinion"}}, 422, "memory_type"),
        ("get", "/api/memories", {"params": {"limit": 0}}, 422, "limit"),
        ("get", "/api/memories", {"params": {"limit": "many"}}, 422, None),
        ("get", "/api/memories", {"params": {"cursor": "nope"}}, 422, "cursor"),
        ("get", "/api/memories/not-an-id", {}, 422, "record_id"),
        ("post", "/api/memories/not-an-id/approve", {}, 422, "record_id"),
        (
            "post",
            "/api/memories/00000000-0000-4000-8000-000000000000/reject",
            {},
            404,
            None,
        ),
        (
            "post",
            "/api/memories/00000000-0000-4000-8000-000000000000/approve",
            {"json": {"reviewer": "r", "admin": True}},
            422,
            "body",
        ),
        (
            "post",
            "/api/memories/00000000-0000-4000-8000-000000000000/approve",
            {"json": {"reviewer": 7}},
            422,
            "reviewer",
        ),
    ],
)
def test_bad_requests_get_clear_4xx(
    client_and_ids: tuple[TestClient, list[str]],
    method: str,
    path: str,
    kwargs: dict[str, object],
    status: int,
    argument: str | None,
) -> None:
    client, _ = client_and_ids
    response = getattr(client, method)(path, headers=H, **kwargs)
    assert response.status_code == status, response.text
    if argument is not None:
        assert response.json()["detail"]["argument"] == argument


def test_api_key_is_required_and_checked(client_and_ids: tuple[TestClient, list[str]]) -> None:
    client, ids = client_and_ids
    assert client.get("/api/memories").status_code == 401
    assert client.get("/api/memories", headers={"X-API-Key": "wrong"}).status_code == 401
    assert client.post(f"/api/memories/{ids[0]}/approve").status_code == 401
    bearer = {"Authorization": f"Bearer {KEY}"}
    assert client.get("/api/memories", headers=bearer).status_code == 200
    page = client.get("/")
    assert page.status_code == 200 and "Long-term memory review" in page.text
    with pytest.raises(InvalidArgumentError):
        api_key_auth("short")


def test_router_mounts_in_an_app_with_its_own_auth(
    make_records: Callable[..., BaseMemoryRecordRepository],
) -> None:
    records = make_records()
    ids = seed(records)

    def reviewers_only(x_role: str | None = Header(default=None)) -> None:
        if x_role != "reviewer":
            raise HTTPException(status_code=403, detail="reviewers only")

    def build(store: object) -> FastAPI:
        app = FastAPI()
        app.include_router(memory_router(store, auth=reviewers_only), prefix="/admin/memory")  # type: ignore[arg-type]
        return app

    client = api_client(records, build)
    assert client.get("/admin/memory/memories").status_code == 403
    ok = client.post(f"/admin/memory/memories/{ids[0]}/approve", headers={"X-Role": "reviewer"})
    assert ok.status_code == 200 and records.get(ids[0]).status.value == "approved"  # type: ignore[union-attr]


def test_forget_a_user(client_and_ids: tuple[TestClient, list[str]]) -> None:
    client, ids = client_and_ids
    gone = client.delete("/api/users/ana/memories", headers=H)
    assert gone.status_code == 200 and gone.json() == {"deleted": 2}
    left = client.get("/api/memories", headers=H).json()["items"]
    assert [i["id"] for i in left] == [ids[2]]
    assert client.delete("/api/users/ana/memories", headers=H).json() == {"deleted": 0}
    scoped = client.delete("/api/users/bob/memories", params={"agent_id": "other"}, headers=H)
    assert scoped.json() == {"deleted": 0}
    assert client.delete("/api/users/bob/memories").status_code == 401
    assert client.get("/api/memories", headers=H).json()["items"][0]["id"] == ids[2]
