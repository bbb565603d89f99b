"""An S3 server on 127.0.0.1 (moto, in this process) for the tests of runs on object storage."""

from __future__ import annotations

import itertools

import pytest
from object_storage import make_bucket, s3_uri

_BUCKETS = itertools.count()


@pytest.fixture(scope="session")
def s3_endpoint():
    """``host:port`` of a moto S3 server, started once for the session."""
    server_module = pytest.importorskip("moto.server", reason="pip install 'moto[server]'")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"{host}:{port}"
    server.stop()


@pytest.fixture
def s3_bucket(s3_endpoint):
    """A new empty bucket; returns a function making URIs in it (``prefix -> uri``)."""
    bucket = f"bucket{next(_BUCKETS)}"
    make_bucket(s3_endpoint, bucket)
    return lambda prefix: s3_uri(s3_endpoint, bucket, prefix)
