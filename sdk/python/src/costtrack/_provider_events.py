"""What the provider helpers share: reading a provider's object or dict, and turning what was
read into an event whose metadata never breaks the rules (docs/api-rules.md#cost).

Behind ``costtrack.providers``; imports no provider package.
"""

from __future__ import annotations

from collections.abc import Mapping as AbcMapping
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Tuple, TypedDict

from costtrack._event import EventStatus, TrackEvent
from costtrack._pricing_metadata import as_count, exceeded_parent
from costtrack._rules import MAX_SAFE_INTEGER, PRICING_CONTEXT_MAX_CHARS, PRICING_COUNT_PARENTS

__all__ = [
    "ATTRIBUTION",
    "HelperFields",
    "Usage",
    "fields_of",
    "get",
    "get_each",
    "header",
    "items",
    "provider_event",
    "read_counts",
]


class HelperFields(TypedDict, total=False):
    """The keyword arguments every provider helper takes besides ``model`` and ``provider``, in
    one place: each helper declares ``**fields: Unpack[HelperFields]``, so type checkers and IDEs
    check and offer these names and types as if each helper listed them. ``None`` or left out:
    absent."""

    feature: Optional[str]
    customer_id: Optional[str]
    customer_name: Optional[str]
    environment: Optional[str]
    latency_ms: Optional[int]
    status: Optional[EventStatus]
    #: Run identity (CONTRACT section 11): the run, the session and the step the call belongs to.
    trace_id: Optional[str]
    session_id: Optional[str]
    parent_id: Optional[str]
    run_name: Optional[str]
    #: Merged over the pricing context and extra counts read from the response; its keys win.
    metadata: Optional[Dict[str, Any]]
    #: ``"batch"`` for a result of the provider's batch API (into ``metadata``).
    processing: Optional[str]
    #: Run identity (CONTRACT §11); ``tracker.run`` and ``costtrack.attributes`` set them too.
    trace_id: Optional[str]
    session_id: Optional[str]
    parent_id: Optional[str]
    run_name: Optional[str]
    #: The reservation the call settles (CONTRACT §10), or ``reservation=``: what
    #: ``tracker.reserve()`` answered (its ``reservation_id``, when it holds one).
    reservation_id: Optional[str]
    reservation: Optional[Any]


#: The event fields a helper takes from its caller as they are (``None``: absent).
ATTRIBUTION = tuple(
    name for name in HelperFields.__annotations__ if name not in ("metadata", "processing", "reservation")
)
_HELPER_FIELDS = frozenset(HelperFields.__annotations__)

#: What a helper read from a response: the model it names, the event's counts, and the pricing
#: context and extra counts for ``metadata`` (``None`` or anything invalid: not found).
Usage = Tuple[Any, Dict[str, Any], Dict[str, Any]]


def get(source: Any, *names: str) -> Any:
    """A field of a provider object or of the same data as a dict (the first of ``names``
    that is present); ``None`` when absent."""
    if source is None:
        return None
    # This runs for every field of every instrumented call and every chunk of its stream: the
    # common shapes (a dict, a pydantic model) are read without a call per name.
    cls = type(source)
    if cls is dict:
        for name in names:
            value = source.get(name)
            if value is not None:
                return value
        return None
    on_class = _MODELS.get(cls, _UNKNOWN)
    if on_class is _UNKNOWN:
        on_class = _model_names(cls)
    if on_class is not None:
        # A pydantic model, without its ``__getattr__``: a name that is not a field makes pydantic
        # raise an ``AttributeError`` (costly) where this reads the same ``None``. Fields live in
        # the instance's ``__dict__``, extra fields in ``__pydantic_extra__``; a name the class
        # defines (a property...) and a private name are looked up as ``getattr`` would.
        fields = source.__dict__
        for name in names:
            if name in on_class or name.startswith("_"):
                value = getattr(source, name, None)
            else:
                value = fields.get(name)
                if value is None:
                    extra = source.__pydantic_extra__
                    if extra:
                        value = extra.get(name)
            if value is not None:
                return value
        return None
    # collections.abc's Mapping: typing's alias checks isinstance several times slower.
    mapping = isinstance(source, AbcMapping)
    for name in names:
        value = source.get(name) if mapping else getattr(source, name, None)
        if value is not None:
            return value
    return None


def get_each(source: Any, names: Tuple[str, ...]) -> List[Any]:
    """``[get(source, name) for name in names]`` in one call: the fields an instrumented call
    reads from one object of the response, each read exactly as ``get`` reads it."""
    if source is None:
        return [None] * len(names)
    cls = type(source)
    if cls is dict:
        return [source.get(name) for name in names]
    plain = _PLAIN.get((cls, names))
    if plain is None:
        on_class = _MODELS.get(cls, _UNKNOWN)
        if on_class is _UNKNOWN:
            on_class = _model_names(cls)
        # A pydantic model none of whose class names (nor a private name) is among ``names``:
        # each is a field in its ``__dict__`` or an extra field, or absent.
        plain = on_class is not None and not any(name in on_class or name.startswith("_") for name in names)
        _PLAIN[(cls, names)] = plain
    if not plain:
        return [get(source, name) for name in names]
    fields = source.__dict__
    extra = source.__pydantic_extra__
    if not extra:
        return [fields.get(name) for name in names]
    found = []
    for name in names:
        value = fields.get(name)
        found.append(extra.get(name) if value is None else value)
    return found


def fields_of(source: Any, names: FrozenSet[str], plain: Dict[type, bool]) -> Optional[Dict[str, Any]]:
    """A shallow copy of ``source`` as a dict from which ``get`` reads each of ``names`` as it
    reads it from ``source``: a dict's copy, or a pydantic model's fields (an extra field where
    the field is ``None``), when its class defines none of ``names`` (``plain``: per class,
    whether it does not, filled in here); ``None`` for anything else."""
    cls = type(source)
    if cls is dict:
        return source.copy()  # type: ignore[no-any-return]
    known = plain.get(cls)
    if known is None:
        on_class = _MODELS.get(cls, _UNKNOWN)
        if on_class is _UNKNOWN:
            on_class = _model_names(cls)
        known = plain[cls] = (
            on_class is not None and on_class.isdisjoint(names) and not any(name.startswith("_") for name in names)
        )
    if not known:
        return None
    fields: Dict[str, Any] = source.__dict__.copy()
    extra = source.__pydantic_extra__
    if extra:
        for name, value in extra.items():
            if fields.get(name) is None:
                fields[name] = value
    return fields


#: Per (class, names) of ``get_each``: whether the names are read from the model's fields alone.
_PLAIN: Dict[Tuple[type, Tuple[str, ...]], bool] = {}


#: Per class: for a pydantic (v2) model, as the provider SDKs' response objects are, the names
#: its classes define (properties, methods...); ``None`` for any other class.
_MODELS: Dict[type, Optional[FrozenSet[str]]] = {}
_UNKNOWN: Any = object()


def _model_names(cls: type) -> Optional[FrozenSet[str]]:
    names: Optional[FrozenSet[str]] = None
    if any("__pydantic_extra__" in getattr(base, "__slots__", ()) for base in cls.__mro__):
        names = frozenset(name for base in cls.__mro__ for name in vars(base))
    _MODELS[cls] = names
    return names


def read_counts(usage: Any, names: Mapping[str, Tuple[str, ...]]) -> Dict[str, Any]:
    """The event's counts from ``usage``: each field read under the provider's name(s) for it."""
    return {field: get(usage, *spellings) for field, spellings in names.items()}


def items(value: Any) -> Iterable[Any]:
    """The items of a JSON array (list or tuple); nothing for anything else."""
    return value if isinstance(value, (list, tuple)) else ()


def header(http_response: Any, name: str) -> Any:
    """A response header kept by the provider's SDK (any casing of the name)."""
    headers = get(http_response, "headers")
    if not isinstance(headers, Mapping):
        return None
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            return value
    return None


def provider_event(
    helper: str, usage: Usage, provider: str, model: Optional[str], fields: Mapping[str, Any]
) -> TrackEvent:
    """The event from what ``helper`` read and what its caller gave (``provider``, ``model`` and
    the ``HelperFields``), without the fields that are ``None`` (absent); the pricing context
    and extra counts read from the response are merged under the caller's ``metadata``.

    A keyword that is not a ``HelperFields`` name is a ``TypeError``, as it would be had the
    helper listed its keywords one by one."""
    for name in fields:
        if name not in _HELPER_FIELDS:
            raise TypeError(f"{helper}() got an unexpected keyword argument {name!r}")
    found_model, counts, pricing = usage
    event: Dict[str, Any] = {"provider": provider, "model": model or found_model}
    for name, value in counts.items():
        if value is not None:
            event[name] = value
    for name in ATTRIBUTION:
        value = fields.get(name)
        if value is not None:
            event[name] = value
    reservation = fields.get("reservation")
    if reservation is not None:
        reservation_id = getattr(reservation, "reservation_id", None)
        if reservation_id is not None and "reservation_id" not in event:
            event["reservation_id"] = reservation_id

    found: Dict[str, Any] = {}
    for name, value in pricing.items():
        if value is None:
            continue
        if name in PRICING_COUNT_PARENTS:
            number = value if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER else as_count(value)
            if number:  # 0 prices as absent; anything but a count is the provider's oddity
                found[name] = number
        elif isinstance(value, str) and 0 < len(value) <= PRICING_CONTEXT_MAX_CHARS:
            found[name] = value
    metadata = fields.get("metadata")
    processing = fields.get("processing")
    if metadata is not None and not isinstance(metadata, Mapping):
        event["metadata"] = metadata  # not an object: validation reports it, as given
    elif found or processing is not None or metadata:
        merged = _merge_metadata(found, processing, metadata, event)
        if merged:
            event["metadata"] = merged
    return event  # type: ignore[return-value]


def _merge_metadata(
    found: Mapping[str, Any], processing: Optional[str], metadata: Optional[Mapping[str, Any]], event: Mapping[str, Any]
) -> Dict[str, Any]:
    """What the helper read from the response under what the caller gave (``processing=``,
    then ``metadata``, whose keys win)."""
    given: Dict[str, Any] = {}
    if processing is not None:
        given["processing"] = processing
    given.update(metadata or {})
    merged = {**{name: value for name, value in found.items() if name not in given}, **given}
    # A count from the response that its parent contradicts is left out (and then so is any
    # count that is part of it), rather than making the whole event invalid. The caller's stay.
    own_counts = [name for name in found if name not in given and name in PRICING_COUNT_PARENTS]
    dropped = True
    while dropped:
        dropped = False
        for name in own_counts:
            if name in merged and exceeded_parent(name, merged[name], merged, event) is not None:
                del merged[name]
                dropped = True
    return merged
