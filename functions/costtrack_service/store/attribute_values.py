"""DynamoDB attribute values, both ways, without importing boto3.

``boto3.dynamodb.types`` is the usual tool, but importing any part of boto3 runs
``boto3/__init__``, which loads ``s3transfer`` and boto3's resource machinery: about half the
ingestion function's cold import, for two small functions. The store talks to botocore's
low-level client (:func:`dynamodb_client`) and maps values here, with boto3's rules: numbers are
exact within DynamoDB's 38 digits (anything else is refused, never rounded), floats are refused
(money is Decimal), sets become string, number or binary sets. Reading uses Powertools' own
deserializer (the Powertools layer ships in every function), which follows boto3's except that
binary values come back as ``bytes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from decimal import Clamped, Context, Decimal, Inexact, Overflow, Rounded, Underflow
from typing import Any

from aws_lambda_powertools.shared.dynamodb_deserializer import TypeDeserializer

#: DynamoDB's numbers: 38 significant digits, exponents from -130 to +125; a value that would
#: lose a digit raises instead (the same context boto3 uses).
DYNAMODB_CONTEXT = Context(Emin=-128, Emax=126, prec=38, traps=[Clamped, Overflow, Inexact, Rounded, Underflow])

_deserializer = TypeDeserializer()


def deserialize(value: Mapping[str, Any]) -> Any:
    """One attribute value (``{"N": "1.5"}``) as Python (``Decimal("1.5")``)."""
    return _deserializer.deserialize(dict(value))


def serialize(value: Any) -> dict[str, Any]:
    """One Python value as a DynamoDB attribute value; TypeError for what DynamoDB cannot hold."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, int | Decimal):
        return {"N": _number(value)}
    if isinstance(value, bytes | bytearray):
        return {"B": bytes(value)}
    if isinstance(value, float):
        raise TypeError("Float types are not supported. Use Decimal types instead.")
    if isinstance(value, Mapping):
        return {"M": {str(name): serialize(item) for name, item in value.items()}}
    if isinstance(value, Set):
        return _set(value)
    if isinstance(value, list | tuple):
        return {"L": [serialize(item) for item in value]}
    raise TypeError(f"Unsupported type {type(value)} for value {value!r}")


def _number(value: int | Decimal) -> str:
    number = str(DYNAMODB_CONTEXT.create_decimal(value))
    if number in ("Infinity", "NaN", "-Infinity", "sNaN"):
        raise TypeError("Infinity and NaN not supported")
    return number


def _set(values: Set[Any]) -> dict[str, Any]:
    if all(isinstance(item, int | Decimal) and not isinstance(item, bool) for item in values):
        return {"NS": [_number(item) for item in values]}
    if all(isinstance(item, str) for item in values):
        return {"SS": list(values)}
    if all(isinstance(item, bytes | bytearray) for item in values):
        return {"BS": [bytes(item) for item in values]}
    raise TypeError(f"A set of one type of string, number or binary only: {values!r}")
