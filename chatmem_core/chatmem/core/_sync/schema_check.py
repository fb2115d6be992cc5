# Generated from chatmem_core/chatmem/core/_async/schema_check.py
# by scripts/unasync.py: do not edit; edit the async source and run the script.
"""``SchemaCheck``: the ``"never"`` mode's once-per-repository check that the schema
exists."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from .._errors import SchemaError
from .._schema_mode import missing_schema_message, redacted_url


class SchemaCheck:
    """Verify once per repository object that the schema exists (``"never"`` mode).

    ``probe`` returns the names of what is missing (empty when everything is there); it runs
    on the first call only, and again after a failure (so creating the schema later is
    picked up). Thread-safe; cheap (a flag test) once passed.
    """

    def __init__(
        self,
        probe: Callable[[], Sequence[str]],
        what: str,
        url_hint: str | None = None,
    ) -> None:
        self._probe = probe
        self._what = what
        self.url_hint = url_hint
        self._lock = threading.Lock()
        self._ok = False

    def __call__(self) -> None:
        if self._ok:
            return
        with self._lock:
            if self._ok:
                return
            missing = list(self._probe())
            if missing:
                raise SchemaError(missing_schema_message(self._what, missing, self._url_hint))
            self._ok = True

    @property
    def url_hint(self) -> str | None:
        """The store URL the error message tells ``chatmem schema --url`` (no password)."""
        return self._url_hint

    @url_hint.setter
    def url_hint(self, url: str | None) -> None:
        self._url_hint = redacted_url(url)

    def passed(self) -> None:
        """Mark the schema as present (after ``create_schema`` ran)."""
        self._ok = True
