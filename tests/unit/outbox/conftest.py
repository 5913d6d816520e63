from collections.abc import AsyncIterator

import pytest
import trio
import trustme

from tests.support.receiver import Receiver, trustme_context

SECRET = b"unit-test-secret"


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca, tmp_path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
async def receiver(nursery: trio.Nursery, ca) -> AsyncIterator[Receiver]:
    server = Receiver(trustme_context(ca), [SECRET])
    await server.start(nursery)
    try:
        yield server
    finally:
        server.stop()
