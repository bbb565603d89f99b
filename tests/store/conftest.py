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


@pytest.fixture
def s3_requests(s3_endpoint, monkeypatch):
    """The requests the moto server answers from now on, as ``(method, path)`` pairs."""
    from moto.moto_server import werkzeug_app

    seen: list[tuple[str, str]] = []
    answer = werkzeug_app.DomainDispatcherApplication.__call__

    def counted(app, environ, start_response):
        seen.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")))
        return answer(app, environ, start_response)

    monkeypatch.setattr(werkzeug_app.DomainDispatcherApplication, "__call__", counted)
    return seen
