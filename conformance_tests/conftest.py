"""The third-party fixture package runs the suite in its own venv (nox -s kit), never here."""

collect_ignore = ["fixtures"]
