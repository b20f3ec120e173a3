"""The Lua files: each loads on a real Redis, each operation has a typed wrapper, and
each operation's script holds every library definition it uses and no other."""

from __future__ import annotations

from importlib import resources

import pytest
from redis.asyncio import Redis

from workpool.backends.redis import scripts, sources
from workpool.backends.redis.backend import RedisBackend

MAX_LINES = 100


def lua_files() -> list[str]:
    """Every .lua file shipped with the package, relative to lua/."""
    root = resources.files("workpool.backends.redis").joinpath("lua")
    names = [f"{entry.name}" for entry in root.iterdir() if entry.name.endswith(".lua")]
    library = root.joinpath("library")
    names += [f"library/{entry.name}" for entry in library.iterdir() if entry.name.endswith(".lua")]
    return sorted(names)


def test_every_file_is_an_operation_or_library_part() -> None:
    expected = {f"{name}.lua" for name in scripts.OPERATIONS}
    expected |= {f"library/{name}.lua" for name in sources.LIBRARY}
    assert set(lua_files()) == expected


@pytest.mark.parametrize("operation", scripts.OPERATIONS)
def test_every_operation_has_a_wrapper(operation: str) -> None:
    assert callable(getattr(scripts.Scripts, operation))


@pytest.mark.parametrize("path", lua_files())
def test_every_file_opens_with_a_header_and_stays_short(path: str) -> None:
    text = sources.read_lua(path)
    assert text.startswith("-- "), path
    assert len(text.splitlines()) <= MAX_LINES, path


@pytest.mark.parametrize("operation", scripts.OPERATIONS)
async def test_every_operation_script_loads(raw: Redis, operation: str) -> None:
    sha = await raw.script_load(sources.script_source(operation))
    assert await raw.script_exists(sha) == [True]


@pytest.mark.parametrize("name", sources.LIBRARY)
async def test_every_library_file_loads_alone(raw: Redis, name: str) -> None:
    await raw.script_load(sources.read_lua(f"library/{name}.lua"))


@pytest.mark.parametrize("name", sources.LIBRARY)
def test_a_library_file_is_its_definitions_end_to_end(name: str) -> None:
    text = sources.read_lua(f"library/{name}.lua")
    definitions = sources.split_definitions(text)
    assert "\n".join(definition.text for definition in definitions) == text.rstrip("\n")
    assert all(definition.names for definition in definitions)


def test_every_library_name_is_defined_once() -> None:
    names = [name for definition in sources.library() for name in definition.names]
    forward_declared = {"cancel_one"}  # local cancel_one, then cancel_one = function
    assert sorted(names) == sorted(set(names) | forward_declared)


@pytest.mark.parametrize("operation", scripts.OPERATIONS)
def test_a_script_defines_every_library_name_it_uses(operation: str) -> None:
    """A library name a script uses but does not define would be a global: nil, and an
    error only once that line runs."""
    source = sources.script_source(operation)
    library_names = {name for definition in sources.library() for name in definition.names}
    defined: set[str] = set()
    for definition in sources.library():
        if definition.text in source:
            defined |= definition.names
    assert (sources.words(source) & library_names) <= defined


def test_a_script_leaves_out_what_it_does_not_use() -> None:
    enqueue = sources.script_source("enqueue")
    for unused in ("local function take(", "local function reap(", "local function end_run("):
        assert unused not in enqueue
    assert "local function take(" in sources.script_source("claim")


def test_names_are_found_outside_comments_and_strings_only() -> None:
    text = "local a = b(c) -- d e\nlocal s = 'f g' .. \"h\" .. i"
    assert sources.words(text) == {"local", "a", "b", "c", "s", "i"}


async def test_scripts_are_registered_again_after_a_script_flush(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    await raw.script_flush()
    assert await redis_backend.cancel("nobody", None, 1000.0) == "not_found"
