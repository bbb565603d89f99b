"""What the tests of runs on object storage share: the test credentials and URIs."""

from __future__ import annotations

SECRET = "Sup3rS3cretValue9xQ7"  # the URI's password: must never be shown or stored


def s3_uri(endpoint: str, bucket: str, prefix: str) -> str:
    """The URI of ``bucket/prefix`` on the test server at ``endpoint``, credentials included."""
    query = f"endpoint_override={endpoint}&scheme=http&region=us-east-1"
    return f"s3://testing:{SECRET}@{bucket}/{prefix}?{query}"
