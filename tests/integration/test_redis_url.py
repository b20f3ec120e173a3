"""Redis URL details: the database number selects where runs are stored."""

from __future__ import annotations

import redis

from workpool import RunContext, Workpool


async def test_database_number_in_the_url_is_used(redis_server_url: str) -> None:
    base = redis_server_url.rsplit("/", 1)[0]
    admin = redis.Redis.from_url(f"{base}/0")
    admin.flushall()
    pool = Workpool(f"{base}/3", prefix="shop")

    @pool.workflow()
    async def noop(ctx: RunContext, value: int) -> int:
        return value

    handle = await noop.run(1)
    assert (await pool.get_run(handle.id)).status == "queued"
    in_db3 = redis.Redis.from_url(f"{base}/3")
    assert in_db3.exists(f"{{shop}}:run:{handle.id}") == 1
    assert admin.dbsize() == 0
    in_db3.close()
    admin.close()
    await pool.aclose()
