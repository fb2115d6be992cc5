"""Generate the sync twin of every async source module, the way httpcore and psycopg do.

The async code is the one source of truth: ``chatmem_*/chatmem/**/_async_<name>.py`` is
written by hand and ``_<name>.py`` beside it is generated from it. Run
``python scripts/unasync.py`` after editing an async source; ``--check`` (run by the ``lint``
nox session) fails when a generated file is stale or was edited by hand.

The transform works on tokens, so code, strings and comments keep their layout:

- ``async def``/``async with``/``async for`` lose ``async``; ``await`` disappears;
- names: ``AsyncFoo`` -> ``Foo``, ``async_foo`` -> ``foo``, ``_async_foo`` -> ``_foo``,
  ``__aenter__`` -> ``__enter__`` (and the other dunders), ``aclose`` -> ``close``,
  ``asyncio.sleep`` -> ``time.sleep``, ``asyncio.Lock`` -> ``threading.Lock``, plus
  ``NAMES`` below and a module's own pairs in a ``# unasync: a.b -> c, X -> Y`` comment;
- ``Awaitable[T]`` -> ``T``;
- ``if ASYNC:`` ... ``else:`` ... keeps only the ``else`` body (dropped without one), for
  the few lines where the twins differ (``ASYNC = True`` is the source's own constant);
- a line ending in ``# sync: <code>`` becomes ``<code>`` (``;`` separates lines; nothing
  after the colon drops the line).

The result goes through ``ruff check --fix`` (import order, ``__all__`` order, ``yield
from``, imports that only the async branch used are removed, and a ``with`` nested in
another only because the inner one was an ``async with`` is merged into it) and ``ruff
format``, so it reads like hand-written code.
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
SOURCES = "chatmem_*/chatmem/**/_async_*.py"
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
}
_GENERIC = (
    (re.compile(r"^Async([A-Z]\w*)$"), r"\1"),
    (re.compile(r"^(_*)async_(\w+)$"), r"\1\2"),
)
_LOCAL = re.compile(r"#\s*unasync:\s*(.+)$", re.MULTILINE)
_DIRECTIVE = re.compile(r"^(\s*)(.*?)\s*#\s*sync:(.*)$")
_IF_ASYNC = re.compile(r"^(\s*)if ASYNC:\s*(#.*)?$")
# Python 3.12 tokenizes an f-string as FSTRING_START ... FSTRING_END (PEP 701); 3.11 as one
# STRING. The transform treats both as one string, so every Python generates the same code.
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)
_FSTRING_END = getattr(tokenize, "FSTRING_END", -2)


def target_of(source: Path) -> Path:
    """``_async_repository.py`` -> ``_repository.py`` beside it."""
    return source.with_name("_" + source.name[len("_async_") :])


def local_names(text: str) -> dict[str, str]:
    """A module's own ``# unasync: a -> b, c -> d`` pairs."""
    pairs: dict[str, str] = {}
    for line in _LOCAL.findall(text):
        for pair in line.split(","):
            if "->" in pair:
                a, b = (p.strip() for p in pair.split("->", 1))
                pairs[a] = b
    return pairs


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def select_sync_lines(text: str) -> str:
    """Apply the line rules: ``if ASYNC`` blocks, ``# sync:`` directives, ``ASYNC = True``."""
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
        d = _DIRECTIVE.match(line)
        if d and not line.lstrip().startswith("#"):
            lead, code = d.group(1), d.group(3).strip()
            out.extend(lead + part.strip() for part in code.split(";") if part.strip())
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


def _ruff() -> str:
    found = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(found).exists():
        sys.exit("unasync: ruff is needed to format the generated code (pip install ruff)")
    return found


def generate(source: Path) -> str:
    """The sync twin of ``source``, formatted."""
    text = source.read_text()
    names = {**NAMES, **local_names(text)}
    body = transform_tokens(select_sync_lines(text), names)
    body = _LOCAL.sub("", body)
    rel = source.relative_to(ROOT)
    header = (
        f"# Generated from {rel.as_posix()}\n"
        "# by scripts/unasync.py: do not edit; edit the async source and run the script.\n"
    )
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
    sources = [p.resolve() for p in args.files] or sorted(ROOT.glob(SOURCES))
    stale = []
    for source in sources:
        target = target_of(source)
        wanted = generate(source)
        current = target.read_text() if target.exists() else None
        if current == wanted:
            continue
        if args.check:
            stale.append(target.relative_to(ROOT).as_posix())
        else:
            target.write_text(wanted)
            print(f"unasync: wrote {target.relative_to(ROOT)}")
    if stale:
        print("unasync: stale sync twins (run `python scripts/unasync.py`):", *stale, sep="\n  ")
        return 1
    if args.check:
        print(f"unasync: {len(sources)} sync twins are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
