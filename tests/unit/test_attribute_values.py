"""The store's attribute values (``store/attribute_values.py``, no boto3 import) are boto3's: the same
item for every value costtrack writes, the same value back, the same refusals."""

from __future__ import annotations

import decimal
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from hypothesis import given
from hypothesis import strategies as st

from costtrack_service.store.attribute_values import deserialize, serialize

numbers = st.one_of(
    st.integers(min_value=-(10**37), max_value=10**37),
    st.decimals(allow_nan=False, allow_infinity=False, places=6, min_value=-(10**12), max_value=10**12),
)
scalars = st.one_of(st.none(), st.booleans(), st.text(max_size=20), numbers, st.binary(max_size=8))
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
        st.frozensets(st.text(min_size=1, max_size=8), min_size=1, max_size=4),
        st.frozensets(st.integers(min_value=-1000, max_value=1000), min_size=1, max_size=4),
    ),
    max_leaves=12,
)


def plain(value: Any) -> Any:
    """boto3 reads binary as its ``Binary`` wrapper; Powertools (and the store) as bytes."""
    if hasattr(value, "value") and type(value).__name__ == "Binary":
        return bytes(value.value)
    if isinstance(value, dict):
        return {name: plain(item) for name, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def canonical(attribute: Any) -> Any:
    """Set members are unordered: compare them sorted."""
    if isinstance(attribute, dict):
        return {
            kind: sorted(map(str, item)) if kind in ("SS", "NS", "BS") else canonical(item)
            for kind, item in attribute.items()
        }
    if isinstance(attribute, list):
        return [canonical(item) for item in attribute]
    return attribute


@given(values)
def test_serialize_writes_what_boto3_writes(value: Any) -> None:
    assert canonical(serialize(value)) == canonical(TypeSerializer().serialize(value))


@given(values)
def test_deserialize_reads_what_boto3_reads(value: Any) -> None:
    attribute = TypeSerializer().serialize(value)
    assert deserialize(attribute) == plain(TypeDeserializer().deserialize(attribute))


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (1.5, TypeError),
        (Decimal("NaN"), TypeError),
        (Decimal("Infinity"), TypeError),
        (10**40, decimal.Rounded),
        (10**40 + 1, decimal.Inexact),
        (Decimal("1." + "1" * 40), decimal.Inexact),
        ({"a", 1}, TypeError),
        (object(), TypeError),
    ],
)
def test_serialize_refuses_what_boto3_refuses(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        TypeSerializer().serialize(value)
    with pytest.raises(error):
        serialize(value)
