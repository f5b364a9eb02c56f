"""Fixtures the export tests share: the deployed export's S3, moto's server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

BUCKET = "costtrack-export-test"


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    """An S3 client of moto's server on 127.0.0.1, with the export bucket made."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client("s3", region_name="us-east-1", endpoint_url=f"http://{host}:{port}")
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        server.stop()
