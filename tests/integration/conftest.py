"""Fixtures the integration tests share: the deployed export's S3 and SNS (moto's server on
127.0.0.1), a webhook receiver, a budget owner's workspace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import httpx
import pytest
from moto.server import ThreadedMotoServer

from tests.support.budget_owner import Owner
from tests.support.http_workspace import Workspace
from tests.support.webhook_receiver import Receiver

BUCKET = "costtrack-export-test"


@pytest.fixture
def make_workspace(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> Callable[..., Workspace]:
    """A new workspace (``workspace_factory``'s options) and its key, on the local stack's API."""

    def make(**options: Any) -> Workspace:
        workspace_id, key = workspace_factory(**options)
        return Workspace(api, local_stack, workspace_id, key)

    return make


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


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture(scope="module")
def sns() -> Iterator[dict[str, Any]]:
    """moto's server on a free loopback port: an SNS topic with an SQS queue subscribed, so the
    test reads what SNS delivered."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("sns", endpoint_url=endpoint, region_name="us-east-1")
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    topic = client.create_topic(Name="budget-alerts")["TopicArn"]
    queue = sqs.create_queue(QueueName="alerts")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    client.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    yield {"client": client, "topic": topic, "sqs": sqs, "queue": queue}
    server.stop()


@pytest.fixture
def owner(local_stack: Any, api: httpx.Client) -> Owner:
    return Owner(local_stack, api)
