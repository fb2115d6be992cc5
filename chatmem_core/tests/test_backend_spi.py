"""The backend SPI (``chatmem.core.backend``): retry, owned-client lifecycle, TTL validation
and error translation, as a backend author uses them; and the SQL backend built on them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from chatmem.core import (
    BackendError,
    BackendUnavailableError,
    ConcurrencyError,
    InvalidArgumentError,
    SchemaError,
)
from chatmem.core.backend import (
    OwnedClientMixin,
    error_translator,
    owning,
    retry,
    validate_ttl,
)


class Deadlock(Exception):
    """A store error that guarantees nothing was written."""


class LostConnection(Exception):
    """A store error whose outcome is unknown."""


# -- retry ---------------------------------------------------------------------------------
def test_retry_returns_the_first_result_that_is_not_none() -> None:
    answers = iter([None, None, "done"])
    calls: list[int] = []

    def attempt() -> str | None:
        calls.append(1)
        return next(answers)

    assert retry(attempt, max_sleep=0) == "done"
    assert len(calls) == 3


def test_retry_reruns_errors_retry_on_accepts_and_chains_the_last_one() -> None:
    calls: list[int] = []

    def attempt() -> str:
        calls.append(1)
        raise Deadlock(f"try {len(calls)}")

    with pytest.raises(ConcurrencyError, match=r"saving kept conflicting .* \(4 tries\)") as info:
        retry(
            attempt,
            attempts=4,
            what="saving",
            max_sleep=0,
            retry_on=lambda e: isinstance(e, Deadlock),
        )
    assert len(calls) == 4
    assert isinstance(info.value.__cause__, Deadlock)
    assert str(info.value.__cause__) == "try 4"


def test_retry_never_reruns_other_errors() -> None:
    calls: list[int] = []

    def attempt() -> str:
        calls.append(1)
        raise LostConnection("outcome unknown")

    with pytest.raises(LostConnection):
        retry(attempt, retry_on=lambda e: isinstance(e, Deadlock))
    assert calls == [1]


# -- owned-client lifecycle ------------------------------------------------------------------
class Client:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class Repo(OwnedClientMixin):
    def __init__(self, client: Client, *, fail: bool = False) -> None:
        if fail:
            raise InvalidArgumentError("fail", "asked to fail")
        self.client = client

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Repo:
        client = Client()
        created.append(client)
        return owning(client, client.close, lambda: cls(client, **options))


created: list[Client] = []


def test_from_url_owns_its_client_and_closes_it_once() -> None:
    with Repo.from_url("x://") as repo:
        assert repo.client.closed == 0
    assert repo.client.closed == 1
    repo.close()
    assert repo.client.closed == 1


def test_a_failed_constructor_closes_the_client_it_was_given_by_from_url() -> None:
    created.clear()
    with pytest.raises(InvalidArgumentError):
        Repo.from_url("x://", fail=True)
    assert [c.closed for c in created] == [1]


def test_a_callers_client_is_never_closed() -> None:
    client = Client()
    with Repo(client):
        pass
    Repo(client).close()
    assert client.closed == 0


# -- TTL -------------------------------------------------------------------------------------
def test_validate_ttl_accepts_none_and_bounded_timedeltas() -> None:
    assert validate_ttl(None) is None
    assert validate_ttl(timedelta(seconds=5), minimum=timedelta(seconds=1)) == timedelta(seconds=5)


@pytest.mark.parametrize(
    "value", [timedelta(0), timedelta(seconds=-1), timedelta(milliseconds=999), 60, "1h", True]
)
def test_validate_ttl_rejects_naming_the_argument(value: object) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        validate_ttl(value, minimum=timedelta(seconds=1), maximum=timedelta(days=1))
    assert info.value.argument == "ttl"
    with pytest.raises(InvalidArgumentError, match="at most"):
        validate_ttl(timedelta(days=2), maximum=timedelta(days=1))


# -- error translation -----------------------------------------------------------------------
class DriverError(Exception):
    pass


class Unreachable(DriverError):
    pass


class NoTable(DriverError):
    pass


def _schema(exc: BaseException, what: str) -> SchemaError | None:
    return SchemaError(f"{what}: no table") if isinstance(exc, NoTable) else None


translate = error_translator(
    "Store", unavailable=(Unreachable,), failures=(DriverError,), classify=_schema
)


@pytest.mark.parametrize(
    ("raised", "expected", "text"),
    [
        (Unreachable("refused"), BackendUnavailableError, "Store unreachable during a read"),
        (DriverError("boom"), BackendError, "Store failed during a read"),
        (NoTable("t"), SchemaError, "a read: no table"),
    ],
)
def test_error_translator_maps_driver_classes(
    raised: Exception, expected: type[Exception], text: str
) -> None:
    with pytest.raises(expected, match=text) as info, translate("a read"):
        raise raised
    assert type(info.value) is expected
    assert info.value.__cause__ is raised


def test_error_translator_leaves_other_errors_alone() -> None:
    with pytest.raises(KeyError), translate("a read"):
        raise KeyError("not the driver's")
    with pytest.raises(InvalidArgumentError), translate("a read"):
        raise InvalidArgumentError("x", "ours")
