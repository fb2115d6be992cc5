"""Generate the sync twin of every async source module, the way httpcore and psycopg do.

The async code is the one source of truth, kept apart from what is generated: every module
under a package's ``_async/`` folder is written by hand, and the file of the same name under
``_sync/`` beside it is generated from it (``chatmem/jdbc/_async/repository.py`` ->
``chatmem/jdbc/_sync/repository.py``). Nothing else lives in ``_sync/``, and every generated
file starts with a header naming its source (``.gitattributes`` marks them generated). Run
``python scripts/unasync.py`` after editing an async source; ``--check`` (run by the ``lint``
nox session) fails when a generated file is stale, edited by hand, orphaned, or says
"async" or "await" in its text (a docstring that reads wrong in the sync twin).

The transform works on tokens, so code, strings and comments keep their layout:

- ``async def``/``async with``/``async for`` lose ``async``; ``await`` disappears;
- names, the same everywhere: ``AsyncFoo`` -> ``Foo``, ``async_foo`` -> ``foo``,
  ``_async`` -> ``_sync``, ``__aenter__`` -> ``__enter__`` (and the other dunders),
  ``aclose`` -> ``close``, ``asyncio.sleep`` -> ``time.sleep``, ``asyncio.Lock`` ->
  ``threading.Lock``, and the driver pairs in ``NAMES`` below (the one table of renames);
- ``Awaitable[T]`` -> ``T``;
- the one way to write code that differs between the twins: ``if ASYNC:`` ... ``else:``
  ... keeps only the ``else`` body (dropped without one; ``ASYNC = True`` is the source's
  own constant, and mypy treats it as always true).

The result goes through ``ruff check --fix`` (import order, ``__all__`` order, ``yield
from``, imports that only the async code used are removed, ``time``/``threading`` imported
where the renames need them, and a ``with`` nested in another only because the inner one was
an ``async with`` is merged into it) and ``ruff format``, so it reads like hand-written code.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = "chatmem_*/chatmem/**/_async/**/*.py"
FIXES = "I,F401,RUF022,UP028,SIM117"

NAMES: dict[str, str] = {
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "__anext__": "__next__",
    "aclose": "close",
    "anext": "next",
    "aiter": "iter",
    "StopAsyncIteration": "StopIteration",
    "asyncio.sleep": "time.sleep",
    "asyncio.Lock": "threading.Lock",
    "asynccontextmanager": "contextmanager",
    "AbstractAsyncContextManager": "AbstractContextManager",
    "create_async_engine": "create_engine",
    "asynchronous": "synchronous",
    "ASYNC_TWIN": "SYNC_TWIN",
    "_async": "_sync",
    # drivers: the asyncio module or function -> its blocking counterpart
    "sqlalchemy.ext.asyncio": "sqlalchemy.engine",
    "redis.asyncio": "redis",
    "make_async_engine": "make_engine",
    "_aio": "_blocking",
}
_GENERIC = (
    (re.compile(r"^Async([A-Z]\w*)$"), r"\1"),
    (re.compile(r"^(_*)async_(\w+)$"), r"\1\2"),
)
_IF_ASYNC = re.compile(r"^(\s*)if ASYNC:\s*(#.*)?$")
# Python 3.12 tokenizes an f-string as FSTRING_START ... FSTRING_END (PEP 701); 3.11 as one
# STRING. The transform treats both as one string, so every Python generates the same code.
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
_FSTRING_END = getattr(tokenize, "FSTRING_END", -2)


def target_of(source: Path) -> Path:
    """``pkg/_async/repository.py`` -> ``pkg/_sync/repository.py`` (the innermost
    ``_async`` folder of the path becomes ``_sync``)."""
    parts = list(source.parts)
    at = len(parts) - 1 - parts[::-1].index("_async")
    parts[at] = "_sync"
    return Path(*parts)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def select_sync_lines(text: str) -> str:
    """Apply the line rules: ``if ASYNC`` blocks and ``ASYNC = True``."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _IF_ASYNC.match(line)
        if m:
            depth = len(m.group(1))
            i += 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > depth):
                i += 1  # the async body
            if i < len(lines) and _indent(lines[i]) == depth and lines[i].strip() == "else:":
                i += 1
                while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > depth):
                    body = lines[i]
                    out.append(body[4:] if body.strip() else body)
                    i += 1
            continue
        if line.strip() == "ASYNC = True":
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out) + "\n"


def _rename(name: str, names: dict[str, str]) -> str:
    if name in names:
        return names[name]
    for pattern, repl in _GENERIC:
        if pattern.match(name):
            return pattern.sub(repl, name)
    return name


_WORD = re.compile(r"\b(?:Async[A-Z]\w*|_*async_\w+|__a(?:enter|exit|iter|next)__)\b")


def transform_tokens(text: str, names: dict[str, str]) -> str:
    """Drop ``async``/``await`` and rename, copying everything between tokens verbatim."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        return starts[pos[0] - 1] + pos[1]

    dotted = {k: v for k, v in names.items() if "." in k}
    out: list[str] = []
    brackets: list[bool] = []  # per open bracket: is it an ``Awaitable[`` being unwrapped?
    cursor = 0
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        begin, end = offset(tok.start), offset(tok.end)
        out.append(text[cursor:begin])
        cursor = end
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.type == tokenize.NAME and tok.string == "Awaitable" and nxt and nxt.string == "[":
            brackets.append(True)  # Awaitable[T] -> T
            cursor = offset(nxt.end)
            i += 1
        elif tok.type == tokenize.OP and tok.string in "([{":
            brackets.append(False)
            out.append(tok.string)
        elif tok.type == tokenize.OP and tok.string in ")]}":
            if not (brackets and brackets.pop()):
                out.append(tok.string)
        elif tok.type == tokenize.NAME and tok.string == "await":
            cursor = offset(nxt.start) if nxt is not None else end  # drop "await "
        elif (
            tok.type == tokenize.NAME
            and tok.string == "async"
            and nxt is not None
            and nxt.string in ("def", "with", "for")
        ):
            cursor = offset(nxt.start)
        elif tok.type == tokenize.NAME:
            replaced = False
            for key, value in dotted.items():
                parts = key.split(".")
                span = tokens[i : i + 2 * len(parts) - 1]
                if [t.string for t in span] == [p for q in parts for p in (q, ".")][:-1]:
                    out.append(value)
                    cursor = offset(span[-1].end)
                    i += len(span) - 1
                    replaced = True
                    break
            if not replaced:
                out.append(_rename(tok.string, names))
        elif tok.type in (tokenize.STRING, tokenize.COMMENT) or tok.type == _FSTRING_START:
            if tok.type == _FSTRING_START:  # 3.12+ splits an f-string: take it whole
                depth = 0
                for j in range(i, len(tokens)):
                    depth += {_FSTRING_START: 1, _FSTRING_END: -1}.get(tokens[j].type, 0)
                    if depth == 0:
                        break
                cursor = offset(tokens[j].end)
                raw, i = text[begin:cursor], j
            else:
                raw = tok.string
            body = _WORD.sub(lambda m: _rename(m.group(0), names), raw)
            for key, value in dotted.items():
                body = re.sub(rf"\b{re.escape(key)}\b", value, body)
            out.append(body)
        else:
            out.append(tok.string)
        i += 1
    out.append(text[cursor:])
    return "".join(out)


_NEEDS_IMPORT = ("time", "threading")


def with_imports(body: str) -> str:
    """Import ``time``/``threading`` where a rename made the code use them (``asyncio.sleep``
    -> ``time.sleep``); ruff then sorts them and drops the ``asyncio`` import left unused."""
    wanted = [
        m
        for m in _NEEDS_IMPORT
        if re.search(rf"(?<![\w.]){m}\.", body)
        and not re.search(rf"^\s*import {m}\s*$", body, re.MULTILINE)
    ]
    if not wanted:
        return body
    lines = body.splitlines(keepends=True)
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("from __future__")), 0)
    return "".join([*lines[:at], *(f"import {m}\n" for m in wanted), *lines[at:]])


def header_of(source: Path) -> str:
    """The first two lines of every generated file."""
    return (
        f"# Generated from {source.relative_to(ROOT).as_posix()}\n"
        "# by scripts/unasync.py: do not edit; edit the async source and run the script.\n"
    )


# words that read wrong in a sync module's text (docstrings, comments, messages)
_ASYNC_WORDS = re.compile(
    r"\b(?:async|await|awaits|awaited|asyncio|coroutines?)\b|event loop", re.I
)


def async_words(generated: str) -> list[str]:
    """``line: text`` of each generated line (header excluded) that still says async."""
    lines = generated.splitlines()[2:]
    return [f"{n}: {line.strip()}" for n, line in enumerate(lines, 3) if _ASYNC_WORDS.search(line)]


def _ruff() -> str:
    found = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(found).exists():
        sys.exit("unasync: ruff is needed to format the generated code (pip install ruff)")
    return found


def generate(source: Path) -> str:
    """The sync twin of ``source``, formatted."""
    text = source.read_text()
    body = with_imports(transform_tokens(select_sync_lines(text), NAMES))
    header = header_of(source)
    target = str(target_of(source).relative_to(ROOT))
    ruff = _ruff()
    for args in (
        ["check", "--fix", "--unsafe-fixes", "--select", FIXES, "--exit-zero", "-q"],
        ["format", "--quiet"],
    ):
        done = subprocess.run(
            [ruff, *args, "--stdin-filename", target, "-"],
            input=header + body,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        if done.returncode != 0:  # --quiet hides the reason (a syntax error): ask again
            loud = [a for a in args if a not in ("-q", "--quiet")]
            why = subprocess.run(
                [ruff, *loud, "--stdin-filename", target, "-"],
                input=header + body,
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
            ).stderr
            sys.exit(f"unasync: ruff {args[0]} failed on {target}:\n{why}")
        body, header = done.stdout, ""
    return body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a twin is stale")
    parser.add_argument("files", nargs="*", type=Path, help="async sources (default: all)")
    args = parser.parse_args(argv)
    every = sorted(ROOT.glob(SOURCES))
    sources = [p.resolve() for p in args.files] or every
    stale, wordy = [], []
    for source in sources:
        target = target_of(source)
        wanted = generate(source)
        wordy += [f"{target.relative_to(ROOT)}:{w}" for w in async_words(wanted)]
        current = target.read_text() if target.exists() else None
        if current == wanted:
            continue
        if args.check:
            stale.append(target.relative_to(ROOT).as_posix())
        else:
            target.parent.mkdir(exist_ok=True)
            target.write_text(wanted)
            print(f"unasync: wrote {target.relative_to(ROOT)}")
    expected = {target_of(s) for s in every}
    orphans = sorted(
        p.relative_to(ROOT).as_posix()
        for p in ROOT.glob(SOURCES.replace("_async", "_sync"))
        if p not in expected
    )
    if orphans:
        print("unasync: files in _sync/ with no async source (delete them):", *orphans, sep="\n  ")
    if wordy:
        print("unasync: generated text that still says async (word the source for both):")
        print(*wordy, sep="\n  ")
    if stale:
        print("unasync: stale sync twins (run `python scripts/unasync.py`):", *stale, sep="\n  ")
    if stale or orphans or wordy:
        return 1
    if args.check:
        print(f"unasync: {len(sources)} sync twins are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
