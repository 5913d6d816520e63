"""The API's serve loop (api/serve.py) on loopback: the app's lifespan around the serving,
a stop that drains the request in hand and closes the listeners, graceful_timeout cutting
what outlasts it, and a worker's connection share counted as connections come and go."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
from hypercorn.config import Config

from ipamd.api.balance import ConnectionShare
from ipamd.api.conncap import ConnectionCaps
from ipamd.api.serve import serve
from tests.integration.test_api_http1 import Scope, _get, _whole, client

CAPS = ConnectionCaps(per_address=64, per_process=1024)


class HeldApp:
    """Each request waits for ``release``; the lifespan's steps are recorded."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.held = trio.Event()
        self.release = trio.Event()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                kind = (await receive())["type"].removeprefix("lifespan.")
                self.steps.append(kind)
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        self.steps.append("request")
        self.held.set()
        await self.release.wait()
        await _whole(send, 200, b"drained", length=True)


@asynccontextmanager
async def serving(app: Any, *, graceful: float = 30, share: ConnectionShare | None = None,
                  ) -> AsyncIterator[tuple[int, trio.Event, trio.Event]]:
    """(port, stop, ended): set ``stop`` to shut down; ``ended`` is set once serve returns."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.graceful_timeout = graceful
    stop, ended = trio.Event(), trio.Event()

    async def run(*, task_status: trio.TaskStatus[list[str]]) -> None:
        await serve(app, config, CAPS, share=share, shutdown_trigger=stop.wait,
                    task_status=task_status)
        ended.set()

    async with trio.open_nursery() as nursery:
        binds = await nursery.start(run)
        yield int(binds[0].rsplit(":", 1)[1]), stop, ended
        stop.set()


async def _refused(port: int) -> bool:
    try:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
    except OSError:
        return True
    await stream.aclose()
    return False


async def test_a_stop_answers_the_request_in_hand_and_closes_the_listeners() -> None:
    app = HeldApp()
    with trio.fail_after(20):
        async with serving(app) as (port, stop, ended), client(port) as c:
            assert app.steps == ["startup"]  # before the first connection is taken
            await c.send(_get("/held"))
            await app.held.wait()
            stop.set()
            while not await _refused(port):  # the listener closes as the stop is taken
                await trio.sleep(0.05)
            assert not ended.is_set()  # the request in hand holds the serving open
            app.release.set()
            status, headers, body = await c.response()
            assert (status, body, headers["connection"]) == (200, b"drained", "close")
            assert await c.closed()
            await ended.wait()
    assert app.steps == ["startup", "request", "shutdown"]  # the lifespan ends last


async def test_graceful_timeout_cuts_a_request_that_outlasts_it() -> None:
    app = HeldApp()  # never released
    with trio.fail_after(20):
        async with serving(app, graceful=0.3) as (port, stop, ended), client(port) as c:
            await c.send(_get("/held"))
            await app.held.wait()
            stop.set()
            await ended.wait()
            assert await c.closed()  # no answer: the request was cut
    assert app.steps == ["startup", "request", "shutdown"]


async def test_a_worker_s_connections_are_counted_in_its_share() -> None:
    share = ConnectionShare.create(1)
    worker = ConnectionShare(os.dup(share.fd), 1, slot=0)  # as a worker inherits it
    app = HeldApp()
    app.release.set()
    try:
        worker.start_serving()
        with trio.fail_after(20):
            async with serving(app, share=worker) as (port, _stop, _ended):
                async with client(port) as one, client(port) as two:
                    for c in (one, two):
                        await c.send(_get("/"))
                        assert (await c.response())[2] == b"drained"
                    assert share.counts[0] == 2  # the main process's view of the slot
                while share.counts[0]:  # given back as the server notices each close
                    await trio.sleep(0.05)
    finally:
        worker.close()
        share.close()


async def test_serve_returns_when_stopped_with_idle_connections() -> None:
    with trio.fail_after(20):  # well inside graceful_timeout (30 s): idle ones are not waited for
        async with serving(HeldApp()) as (port, stop, ended), client(port) as c:
            stop.set()
            await ended.wait()
            assert await c.closed()
