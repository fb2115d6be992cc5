"""The shared ``initialize_schema`` vocabulary and the verify-once check."""

from __future__ import annotations

import threading

import pytest

from chatmem.core import InvalidArgumentError, SchemaError
from chatmem.core.backend import SchemaCheck, schema_mode


def test_modes_and_their_aliases() -> None:
    assert schema_mode("always") == schema_mode(True) == "always"
    assert schema_mode("never") == schema_mode(False) == "never"
    assert schema_mode("embedded", ("always", "never", "embedded")) == "embedded"


@pytest.mark.parametrize("bad", ["embedded", "ALWAYS", "", None, 1, 0, "yes"])
def test_anything_else_is_an_error_naming_the_option(bad: object) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        schema_mode(bad)
    assert info.value.argument == "initialize_schema"


def test_the_check_probes_until_the_schema_exists_then_never_again() -> None:
    missing = ["table t"]
    calls = []

    def probe() -> list[str]:
        calls.append(1)
        return list(missing)

    check = SchemaCheck(probe, "database x", "postgresql://app:secret@db/app")
    with pytest.raises(SchemaError) as info:
        check()
    text = str(info.value)
    assert "table t" in text and "secret" not in text
    assert "chatmem schema --url postgresql://app:***@db/app" in text
    assert "create_schema()" in text and 'initialize_schema="always"' in text
    missing.clear()
    threads = [threading.Thread(target=check) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check()
    assert len(calls) == 2  # the failed probe, then exactly one successful one


def test_passed_skips_the_probe() -> None:
    check = SchemaCheck(lambda: ["everything"], "nowhere")
    check.passed()
    check()
