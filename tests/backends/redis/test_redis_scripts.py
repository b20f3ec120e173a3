"""The Lua files: each loads on a real Redis, each operation has a typed wrapper."""

from __future__ import annotations

from importlib import resources

import pytest
from redis.asyncio import Redis

from workpool.backends.redis import scripts
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
    expected |= {f"library/{name}.lua" for name in scripts.LIBRARY}
    assert set(lua_files()) == expected


@pytest.mark.parametrize("operation", scripts.OPERATIONS)
def test_every_operation_has_a_wrapper(operation: str) -> None:
    assert callable(getattr(scripts.Scripts, operation))


@pytest.mark.parametrize("path", lua_files())
def test_every_file_opens_with_a_header_and_stays_short(path: str) -> None:
    text = scripts.read_lua(path)
    assert text.startswith("-- "), path
    assert len(text.splitlines()) <= MAX_LINES, path


@pytest.mark.parametrize("operation", scripts.OPERATIONS)
async def test_every_operation_script_loads(raw: Redis, operation: str) -> None:
    sha = await raw.script_load(scripts.script_source(operation))
    assert await raw.script_exists(sha) == [True]


@pytest.mark.parametrize("name", scripts.LIBRARY)
async def test_every_library_file_loads_alone(raw: Redis, name: str) -> None:
    await raw.script_load(scripts.read_lua(f"library/{name}.lua"))


async def test_scripts_are_registered_again_after_a_script_flush(
    redis_backend: RedisBackend, raw: Redis
) -> None:
    await raw.script_flush()
    assert await redis_backend.cancel("nobody", None, 1000.0) == "not_found"
