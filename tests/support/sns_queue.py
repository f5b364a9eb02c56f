"""What SNS delivered, read from the SQS queue subscribed to the test topic."""

from __future__ import annotations

import json
from typing import Any


def received_by_sns(sns: dict[str, Any]) -> list[dict[str, Any]]:
    messages = []
    while True:
        batch = sns["sqs"].receive_message(QueueUrl=sns["queue"], MaxNumberOfMessages=10).get("Messages", [])
        if not batch:
            return messages
        for message in batch:
            messages.append(json.loads(message["Body"]))
            sns["sqs"].delete_message(QueueUrl=sns["queue"], ReceiptHandle=message["ReceiptHandle"])
