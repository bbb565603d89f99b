"""What the tests of runs on object storage share: the test credentials and URIs."""

from __future__ import annotations

SECRET = "Sup3rS3cretValue9xQ7"  # the URI's password: must never be shown or stored


def s3_uri(endpoint: str, bucket: str, prefix: str) -> str:
    """The URI of ``bucket/prefix`` on the test server at ``endpoint``, credentials included."""
    query = f"endpoint_override={endpoint}&scheme=http&region=us-east-1"
    return f"s3://testing:{SECRET}@{bucket}/{prefix}?{query}"


def make_bucket(endpoint: str, bucket: str) -> None:
    """Create ``bucket`` on the test server at ``endpoint``."""
    import pyarrow.fs as pafs

    pafs.S3FileSystem(
        access_key="testing",
        secret_key=SECRET,
        endpoint_override=endpoint,
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
    ).create_dir(bucket)


def objects(uri: str) -> dict[str, bytes]:
    """Every object of the run at ``uri`` (name relative to the run, content), read directly."""
    import pyarrow.fs as pafs

    from realitycheck import RunStore

    folder = RunStore(uri).remote
    assert folder is not None
    infos = folder.fs.get_file_info(pafs.FileSelector(folder.root, recursive=True))
    out = {}
    for info in infos:
        if info.type == pafs.FileType.File:
            with folder.fs.open_input_stream(info.path) as stream:
                out[info.path[len(folder.root) + 1 :]] = stream.read()
    return out
