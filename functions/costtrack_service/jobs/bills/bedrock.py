"""Amazon Bedrock's bill for a range of days, for the account the stack runs in: Cost
Explorer ``GetCostAndUsage``, daily, filtered to the Amazon Bedrock service and grouped by
usage type (model and token kind are in the usage type).

Revision window: Cost Explorer's figures for recent days are estimates until the month's bill
is final, so each run imports the last :data:`REVISION_DAYS` days again."""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any

from costtrack_service.domain.reconciliation import bedrock_usage
from costtrack_service.domain.reconciliation.bill import Lines
from costtrack_service.jobs.bills.admin_pages import Fetched, ImportFailed, RawPage

SERVICE = "Amazon Bedrock"
REVISION_DAYS = 3
MAX_PAGES = 100


def import_days(ce: Any, first: date, last: date) -> tuple[Lines, Fetched]:
    """``ce`` is a boto3 Cost Explorer client."""
    lines, fetched = Lines(), Fetched()
    request: dict[str, Any] = {
        "TimePeriod": {"Start": first.isoformat(), "End": (last + timedelta(days=1)).isoformat()},
        "Granularity": "DAILY",
        "Metrics": ["UnblendedCost", "UsageQuantity"],
        "Filter": {"Dimensions": {"Key": "SERVICE", "Values": [SERVICE]}},
        "GroupBy": [{"Type": "DIMENSION", "Key": "USAGE_TYPE"}],
    }
    for _ in range(MAX_PAGES):
        try:
            response = ce.get_cost_and_usage(**request)
        except Exception as error:  # botocore's ClientError and connection errors alike
            raise ImportFailed(f"GetCostAndUsage: {type(error).__name__}") from None
        response.pop("ResponseMetadata", None)
        fetched.pages.append(RawPage("ce:GetCostAndUsage", [], json.dumps(response, default=str, sort_keys=True)))
        token = bedrock_usage.add_results(response, lines)
        if token is None:
            return lines, fetched
        request["NextPageToken"] = token
    raise ImportFailed(f"GetCostAndUsage: more than {MAX_PAGES} pages")
