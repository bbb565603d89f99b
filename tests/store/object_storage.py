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
