"""Translate cassandra-driver exceptions into chatmem's error tree (driver error as ``__cause__``).

- no host / connection lost / client or server timeout / not enough replicas:
  ``BackendUnavailableError`` (a timed-out lightweight transaction has an unknown outcome:
  the message says so);
- an unknown keyspace or table, or a table of another shape: ``SchemaError``;
- anything else the driver raises: ``BackendError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chatmem.core import BackendError, BackendUnavailableError, SchemaError


@contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Run a block of driver calls; re-raise driver failures as chatmem errors."""
    import cassandra
    from cassandra.cluster import NoHostAvailable
    from cassandra.connection import ConnectionException

    try:
        yield
    except (NoHostAvailable, ConnectionException, cassandra.OperationTimedOut) as exc:
        raise BackendUnavailableError(f"Cassandra unreachable during {what}: {exc}") from exc
    except cassandra.WriteTimeout as exc:
        unknown = (
            " (the lightweight transaction may or may not have applied)"
            if (getattr(exc, "write_type", None) == cassandra.WriteType.CAS)
            else ""
        )
        raise BackendUnavailableError(f"Cassandra write timed out during {what}{unknown}") from exc
    except (cassandra.Unavailable, cassandra.Timeout) as exc:
        raise BackendUnavailableError(f"Cassandra replicas unavailable during {what}") from exc
    except cassandra.InvalidRequest as exc:
        text = str(exc)
        if "unconfigured table" in text or "does not exist" in text or "Undefined column" in text:
            raise SchemaError(
                f"{what}: the table is missing or has another shape ({text}); create it with "
                'initialize_schema="always", repo.create_schema() or `chatmem schema --url`'
            ) from exc
        raise BackendError(f"Cassandra rejected {what}: {text}") from exc
    except cassandra.DriverException as exc:
        raise BackendError(f"Cassandra failed during {what}: {exc}") from exc
