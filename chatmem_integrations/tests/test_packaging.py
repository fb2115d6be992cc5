"""Packaging promises of ``chatmem.integrations``: one public module per framework, each
behind its own extra; a missing framework is a ``MissingDependencyError`` naming the extra;
the dependency-free modules import nothing third-party; nothing is left in core.

A new framework module adds its row to ``FRAMEWORKS`` (and its extra to pyproject.toml)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FRAMEWORKS = {
    # public module: (the framework module it requires, the extra that installs it)
    "adk": ("google.adk", "google-adk"),
    "langchain": ("langchain_core", "langchain"),
    "langgraph": ("langgraph", "langgraph"),
    "langgraph_store": ("langgraph", "langgraph"),
    "llamaindex": ("llama_index", "llamaindex"),
    "pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "openai_agents": ("agents", "openai-agents"),
    "agent_framework": ("agent_framework", "agent-framework"),
    "strands": ("strands", "strands"),
    "redis_vectorstore": ("redis", "redis"),
    "pgvector_vectorstore": ("sqlalchemy", "postgres"),
}
NO_DEPENDENCY = ("openai", "advisors", "vectorstore")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("module", sorted(FRAMEWORKS))
def test_a_missing_framework_names_its_extra(module: str) -> None:
    framework, extra = FRAMEWORKS[module]
    out = _run(
        "import sys\n"
        f"sys.modules[{framework!r}] = None  # makes `import {framework}` fail\n"
        "from chatmem.core import MissingDependencyError\n"
        "try:\n"
        f"    import chatmem.integrations.{module}\n"
        "except MissingDependencyError as exc:\n"
        "    print(isinstance(exc, ImportError), str(exc))\n"
    )
    assert out.startswith("True ") and out.endswith(f'pip install "chatmem[{extra}]"'), out


@pytest.mark.parametrize("module", NO_DEPENDENCY)
def test_dependency_free_modules_import_nothing_third_party(module: str) -> None:
    out = _run(
        "import sys; before = set(sys.modules)\n"
        f"import chatmem.integrations.{module}\n"
        "std = set(sys.stdlib_module_names)\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(new - std - {'chatmem'}))\n"
    )
    assert out == "[]"


def test_every_framework_extra_exists_and_pulls_only_its_framework() -> None:
    extras: dict[str, list[str]] = {}
    for requirement in importlib.metadata.metadata("chatmem").get_all("Requires-Dist") or []:
        found = re.match(r"([A-Za-z0-9_.\-\[\]]+).*;.*\bextra *== *['\"]([\w-]+)['\"]", requirement)
        if found:
            extras.setdefault(found.group(2), []).append(found.group(1))
    for module, (_, extra) in FRAMEWORKS.items():
        assert extra in extras, (module, extra)
    assert extras["langchain"] == ["langchain-core"]
    assert extras["llamaindex"] == ["llama-index-core"]
    assert extras["langgraph"] == ["langgraph"]
    assert extras["pydantic-ai"] == ["pydantic-ai-slim"]
    assert extras["openai-agents"] == ["openai-agents"]
    assert extras["agent-framework"] == ["agent-framework-core"]
    assert extras["strands"] == ["strands-agents"]


def test_nothing_is_left_in_core() -> None:
    assert importlib.util.find_spec("chatmem.core.integrations") is None
    assert not (ROOT / "chatmem_core" / "chatmem" / "core" / "integrations").exists()
