"""What a million accepted events cost on AWS, from the benchmark's measured figures and AWS's
published list prices, with the arithmetic printed (``bench/service.py`` measures the figures)."""

from __future__ import annotations

import math
from decimal import Decimal

# AWS list prices, us-east-1, as published (USD).
HTTP_API_PER_MILLION = Decimal("1.00")  # first 300 million requests a month
LAMBDA_REQUEST_PER_MILLION = Decimal("0.20")
LAMBDA_ARM_GB_SECOND = Decimal("0.0000133334")
DYNAMODB_WRU_PER_MILLION = Decimal("0.625")  # on-demand, since the November 2024 price cut
DYNAMODB_RRU_PER_MILLION = Decimal("0.125")
LAMBDA_MEMORY_MB = 512  # template.yaml: IngestMemorySize default
# Langfuse Cloud (Core plan): $8 per 100,000 billable units beyond the included ones.
LANGFUSE_OVERAGE_PER_MILLION = Decimal("80")


def cost_per_million(figures: dict[str, float], suffix: str = "") -> tuple[dict[str, float], list[str]]:
    """AWS list price per million accepted events, sent ``events_per_request`` to a request."""
    per_request = Decimal(str(figures[f"events_per_request{suffix}"]))
    duration_ms = Decimal(str(round(figures[f"ingest_local_ms_per_request{suffix}"], 3)))
    billed_ms = Decimal(math.ceil(duration_ms))  # Lambda bills whole milliseconds
    gb_seconds = Decimal(LAMBDA_MEMORY_MB) / 1024 * billed_ms / 1000
    requests = Decimal(1_000_000) / per_request
    wru = Decimal(str(round(figures[f"ddb_wcu_per_event{suffix}"], 4)))
    rru = Decimal(str(round(figures[f"ddb_rru_per_event{suffix}"], 4)))
    parts = {
        "API Gateway HTTP API": HTTP_API_PER_MILLION * requests / 1_000_000,
        "Lambda requests": LAMBDA_REQUEST_PER_MILLION * requests / 1_000_000,
        "Lambda duration": gb_seconds * LAMBDA_ARM_GB_SECOND * requests,
        "DynamoDB writes": wru * DYNAMODB_WRU_PER_MILLION,
        "DynamoDB reads": rru * DYNAMODB_RRU_PER_MILLION,
    }
    total = sum(parts.values(), Decimal(0))
    lines = [
        f"  at {per_request} events per request: {requests:.0f} requests per million events",
        f"  HTTP API        {requests:.0f} requests x {HTTP_API_PER_MILLION} USD per million = "
        f"{parts['API Gateway HTTP API']:.4f} USD (each request under 512 KB: one metered request)",
        f"  Lambda requests {requests:.0f} x {LAMBDA_REQUEST_PER_MILLION} USD per million = "
        f"{parts['Lambda requests']:.4f} USD",
        f"  Lambda duration {requests:.0f} x {LAMBDA_MEMORY_MB} MB x {billed_ms} ms "
        f"(measured {duration_ms} ms a request on DynamoDB Local) = "
        f"{gb_seconds * requests:.1f} GB-s x {LAMBDA_ARM_GB_SECOND} USD = "
        f"{parts['Lambda duration']:.4f} USD",
        f"  DynamoDB writes {wru} WRU per event x {DYNAMODB_WRU_PER_MILLION} USD per million = "
        f"{parts['DynamoDB writes']:.4f} USD",
        f"  DynamoDB reads  {rru} RRU per event x {DYNAMODB_RRU_PER_MILLION} USD per million = "
        f"{parts['DynamoDB reads']:.4f} USD",
        f"  total           {total:.4f} USD per million accepted events",
        f"  Langfuse Cloud  {LANGFUSE_OVERAGE_PER_MILLION} USD per million units of overage "
        f"({LANGFUSE_OVERAGE_PER_MILLION / total:.1f}x)",
    ]
    return {f"usd_per_million_events{suffix}": float(round(total, 4))}, lines
