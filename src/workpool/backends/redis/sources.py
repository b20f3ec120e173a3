"""The Lua source of each operation: its file after the library definitions it uses.

Redis runs a script's whole text on every call: each top-level ``local function`` of the
library makes a closure then, and its upvalues are found by walking the list of open
upvalues, so a call paid for every library function, used or not (about 14 us of a
35 us enqueue before this module; docs/benchmarks.md, issue 15). A script now holds
only the definitions it needs: the operation's file (``lua/<operation>.lua``), read for
the names it mentions, pulls in the library's top-level definitions of those names,
then theirs, and so on; they keep the library's order (files in ``LIBRARY`` order, each
in its own), so each is defined before what uses it, as when the whole library came
first.

A definition is a top-level statement of a library file: a line at column 0 that starts
``local`` (``local function f``, ``local x, y = ...``, ``local f`` declared before its
``f = function`` assignment, which belongs to ``f`` too), with the comment lines just
above it and every line after it up to the next one. Names are matched as whole words
outside comments and strings, so a mention can only add a definition, never miss one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

LIBRARY = (
    "arguments",
    "keys",
    "triggers",
    "events",
    "deferred",
    "checks",
    "corrupt",
    "narrow",
    "listing",
    "ready",
    "waking",
    "counters",
    "several",
    "gates",
    "queues",
    "aside",
    "rates",
    "waiting",
    "storing",
    "suspending",
    "existing",
    "debouncing",
    "enqueueing",
    "hooks",
    "batches",
    "steps",
    "failures",
    "ending",
    "reaping",
    "deadlines",
    "starting",
    "claiming",
    "promoting",
    "deleting",
    "rerunning",
)
"""Library files, in dependency order."""

EPILOGUE = "end\nlocal result = operation()\nflush_counts()\nflush_deferred()\nreturn result"
"""After the operation's body (wrapped as ``operation``): the counters it added to
(counters.lua) and the index writes it deferred (deferred.lua) are written, then its
result is returned."""

_START = re.compile(r"^local\s+(?:function\s+)?([\w\s,]+?)\s*(?:[=(]|$)")
_ASSIGNED = re.compile(r"^(\w+)\s*=\s*function\b")
_TOKEN = re.compile(r"""--[^\n]*|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|([A-Za-z_]\w*)""")


@dataclass(frozen=True, slots=True)
class Definition:
    """One top-level statement of a library file, with the comments above it."""

    names: frozenset[str]
    text: str
    uses: frozenset[str]


def read_lua(relative_path: str) -> str:
    """The text of a file under ``lua/``."""
    return resources.files(__package__).joinpath("lua", relative_path).read_text("utf-8")


def words(text: str) -> frozenset[str]:
    """The identifiers of Lua text, outside comments and strings."""
    return frozenset(match[1] for match in _TOKEN.finditer(text) if match[1])


def split_definitions(text: str) -> list[Definition]:
    """The top-level definitions of a library file, in order; the file's header comment
    goes with the first, comments after the last with the last."""
    chunks: list[tuple[set[str], list[str]]] = []
    comments: list[str] = []
    for line in text.splitlines():
        start = _START.match(line) or _ASSIGNED.match(line)
        if start:
            chunks.append(({name.strip() for name in start[1].split(",")}, [*comments, line]))
            comments = []
        elif line.startswith("--") or (not line.strip() and not chunks):
            comments.append(line)
        elif chunks:
            chunks[-1][1].extend([*comments, line])
            comments = []
    if chunks:
        chunks[-1][1].extend(comments)
    return [
        Definition(frozenset(names), "\n".join(lines), words("\n".join(lines)))
        for names, lines in chunks
    ]


@cache
def library() -> tuple[Definition, ...]:
    """Every definition of the library, in order."""
    return tuple(
        definition
        for name in LIBRARY
        for definition in split_definitions(read_lua(f"library/{name}.lua"))
    )


def needed(uses: frozenset[str], definitions: tuple[Definition, ...]) -> list[Definition]:
    """The definitions that ``uses`` needs, directly or through other definitions."""
    wanted, included = set(uses), [False] * len(definitions)
    grew = True
    while grew:
        grew = False
        for index, definition in enumerate(definitions):
            if not included[index] and definition.names & wanted:
                included[index], grew = True, True
                wanted |= definition.uses
    return [definition for index, definition in enumerate(definitions) if included[index]]


@cache
def script_source(operation: str) -> str:
    """The full source sent to Redis for one operation: the library definitions it
    needs, then the operation as a function, then ``EPILOGUE``."""
    body = read_lua(f"{operation}.lua")
    parts = [definition.text for definition in needed(words(body + EPILOGUE), library())]
    return "\n".join([*parts, "local function operation()", body, EPILOGUE])
