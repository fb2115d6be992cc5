"""``python -m chatmem.core._cli``: the same as the ``chatmem`` console script."""

from ._app import main

raise SystemExit(main())
