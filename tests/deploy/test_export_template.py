"""The export's part of template.yaml, checked offline: an encrypted, private, TLS-only bucket
with a lifecycle rule; a Glue table whose columns are the exported lines' and whose partition
projection matches the exporter's keys; and an export function allowed exactly the DynamoDB
calls the exporter makes and S3 only under its prefix."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from costtrack_service.domain.export.layout import COLUMNS, DEFAULT_PREFIX, FOCUS_PREFIX, PARTITION_COLUMNS, object_key
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.handlers.export import outputs, run
from costtrack_service.jobs.daily_export import Exporter, S3Writer
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TableNames
from tests.conftest import ROOT
from tests.support.cloudformation import CallRecorder, CloudFormationLoader, granted

S3_ACTIONS = {"PutObject": "s3:PutObject", "DeleteObjects": "s3:DeleteObject", "ListObjectsV2": "s3:ListBucket"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    text = (ROOT / "template.yaml").read_text()
    document: dict[str, Any] = yaml.load(text, Loader=CloudFormationLoader)  # noqa: S506 - SafeLoader subclass
    return document


def test_the_bucket_is_encrypted_private_tls_only_and_expires_objects(template: dict[str, Any]) -> None:
    bucket = template["Resources"]["ExportBucket"]
    properties = bucket["Properties"]
    [rule] = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert properties["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ["BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"], True
    )
    assert properties["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    [lifecycle] = properties["LifecycleConfiguration"]["Rules"]
    assert lifecycle["Status"] == "Enabled" and lifecycle["ExpirationInDays"] == {"Ref": "ExportRetentionDays"}
    assert lifecycle["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] >= 1
    assert bucket["DeletionPolicy"] == "Retain"

    policy = template["Resources"]["ExportBucketPolicy"]["Properties"]
    assert policy["Bucket"] == {"Ref": "ExportBucket"}
    [deny] = policy["PolicyDocument"]["Statement"]
    assert (deny["Effect"], deny["Principal"], deny["Action"]) == ("Deny", "*", "s3:*")
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny["Resource"] == [{"Fn::GetAtt": ["ExportBucket", "Arn"]}, {"Fn::Sub": "${ExportBucket.Arn}/*"}]


def test_the_glue_table_reads_what_the_exporter_writes(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    assert resources["ExportDatabase"]["Type"] == "AWS::Glue::Database"
    table = resources["ExportEventsTable"]["Properties"]
    assert table["DatabaseName"] == {"Ref": "ExportDatabase"}
    spec = table["TableInput"]
    storage = spec["StorageDescriptor"]
    assert [(column["Name"], column["Type"]) for column in storage["Columns"]] == list(COLUMNS)
    assert [(column["Name"], column["Type"]) for column in spec["PartitionKeys"]] == list(PARTITION_COLUMNS)
    assert storage["SerdeInfo"]["SerializationLibrary"] == "org.apache.hive.hcatalog.data.JsonSerDe"
    assert storage["InputFormat"] == "org.apache.hadoop.mapred.TextInputFormat"
    assert storage["Location"] == {"Fn::Sub": f"s3://${{ExportBucket}}/{DEFAULT_PREFIX}"}
    parameters = spec["Parameters"]
    assert parameters["projection.enabled"] == "true" and parameters["projection.workspace_id.type"] == "injected"
    assert (parameters["projection.day.type"], parameters["projection.day.format"]) == ("date", "yyyy-MM-dd")
    # The location template, filled in, is the prefix of the keys the exporter writes.
    location = parameters["storage.location.template"]["Fn::Sub"]
    filled = location.replace("${ExportBucket}", "bucket").replace("${!workspace_id}", "ws_1")
    filled = filled.replace("${!day}", "2026-03-14")
    day = datetime(2026, 3, 14, tzinfo=UTC).date()
    assert f"s3://bucket/{object_key(DEFAULT_PREFIX, 'ws_1', day, 0, 0)}".startswith(filled)


@pytest.fixture(scope="module")
def export_calls(template: dict[str, Any]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """What a scheduled export really calls: DynamoDB actions per logical table, and S3
    actions with the keys (or listing prefixes) they touched."""
    names = TableNames.with_prefix("iam-export-")
    recorder = CallRecorder(names)
    s3_calls: dict[str, set[str]] = defaultdict(set)

    def record_s3(params: dict[str, Any], model: Any, **_: Any) -> None:
        action = S3_ACTIONS[model.name]
        if model.name == "PutObject":
            s3_calls[action].add(params["Key"])
        elif model.name == "ListObjectsV2":
            s3_calls[action].add(params["Prefix"])
        else:
            s3_calls[action].update(item["Key"] for item in params["Delete"]["Objects"])

    with mock_aws():
        admin = DynamoStore(boto3.client("dynamodb", region_name="us-east-1"), names)
        admin.table_setup.ensure_tables()
        workspace = admin.workspaces.create_workspace("iam", tier=Tier.PAID, included_events=10)
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="export")
        now = datetime.now(UTC)
        stale = f"{DEFAULT_PREFIX}workspace_id={workspace.workspace_id}/day={now.date()}/old.gz"
        s3.put_object(Bucket="export", Key=stale, Body=b"")
        from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
        from costtrack_service.services.event_ingest import IngestService

        secret, _ = admin.keys.create_key(workspace.workspace_id)
        ingest(
            IngestService(admin),
            IngestRequest({"authorization": f"Bearer {secret}"}, b'{"provider":"openai","model":"gpt-5"}'),
        )
        client = recorder.attach(boto3.client("dynamodb", region_name="us-east-1"))
        watched = boto3.client("s3", region_name="us-east-1")
        watched.meta.events.register("provide-client-params.s3.*", record_s3)
        # The outputs the function's environment in the template gives it (JSON Lines and FOCUS).
        environment = template["Resources"]["ExportFunction"]["Properties"]["Environment"]["Variables"]
        chosen = outputs(environment)
        assert [output.prefix for output in chosen] == [DEFAULT_PREFIX, FOCUS_PREFIX]
        exporter = Exporter(DynamoStore(client, names), S3Writer(watched, "export"), outputs=chosen)
        run({}, exporter, now + timedelta(days=1))
        assert s3_calls["s3:DeleteObject"] == {stale}
        assert {key.split("/", 1)[0] + "/" for key in s3_calls["s3:PutObject"]} == {DEFAULT_PREFIX, FOCUS_PREFIX}
    return recorder.calls, s3_calls


def test_the_export_function_may_do_exactly_what_the_exporter_does(
    template: dict[str, Any], export_calls: tuple[dict[str, set[str]], dict[str, set[str]]]
) -> None:
    dynamo_calls, s3_calls = export_calls
    function = template["Resources"]["ExportFunction"]
    assert dict(granted(function)) == dict(dynamo_calls)

    variables = function["Properties"]["Environment"]["Variables"]
    prefixes = (variables["COSTTRACK_EXPORT_PREFIX"], variables["COSTTRACK_EXPORT_FOCUS_PREFIX"])
    assert prefixes == (DEFAULT_PREFIX, FOCUS_PREFIX)
    s3_statements = [
        statement
        for policy in function["Properties"]["Policies"]
        for statement in policy["Statement"]
        if all(action.startswith("s3:") for action in statement["Action"])
    ]
    objects, listing = s3_statements
    assert set(objects["Action"]) == {"s3:PutObject", "s3:DeleteObject"}
    assert objects["Resource"] == [{"Fn::Sub": f"${{ExportBucket.Arn}}/{prefix}*"} for prefix in prefixes]
    assert listing["Action"] == ["s3:ListBucket"] and listing["Resource"] == {"Fn::GetAtt": ["ExportBucket", "Arn"]}
    assert listing["Condition"] == {"StringLike": {"s3:prefix": [f"{prefix}*" for prefix in prefixes]}}
    assert set(s3_calls) <= {"s3:PutObject", "s3:DeleteObject", "s3:ListBucket"}
    assert all(key.startswith(prefixes) for keys in s3_calls.values() for key in keys)  # only under its prefixes

    schedule = function["Properties"]["Events"]["Daily"]
    assert schedule["Type"] == "ScheduleV2"
    assert schedule["Properties"]["ScheduleExpression"] == {"Ref": "ExportSchedule"}
    expression = template["Parameters"]["ExportSchedule"]["Default"]
    minute, hour = expression.removeprefix("cron(").split()[:2]
    assert hour == "0" and int(minute) > 0  # after midnight UTC: the previous day is complete
