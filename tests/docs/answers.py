"""Answers a README shows, checked against the served OpenAPI document: every field of a shown
answer must be declared in the schema of the operation that gives it (``<!-- answer: … -->``,
see ``blocks.py``). Fields are checked, not values: a README elides values (``"evt_…"``) and
whole members (``, …}``), which the document's patterns would refuse."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

Schema = Mapping[str, Any]

STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
ELISION = re.compile(r",\s*…|…\s*,?")


def without_elisions(text: str) -> str:
    """The JSON a README shows with its elided members (a bare ``…`` outside strings) left out."""
    parts: list[str] = []
    last = 0
    for found in STRING.finditer(text):
        parts.append(ELISION.sub("", text[last : found.start()]))
        parts.append(found.group(0))
        last = found.end()
    parts.append(ELISION.sub("", text[last:]))
    return "".join(parts)


class Document:
    def __init__(self, document: Schema) -> None:
        self.document = document

    def resolve(self, schema: Schema) -> Schema:
        while "$ref" in schema:
            ref = schema["$ref"]
            if not ref.startswith("#/"):
                raise ValueError(f"an external $ref: {ref}")
            target: Any = self.document
            for part in ref[2:].split("/"):
                target = target[part]
            schema = target
        return schema

    def branches(self, schema: Schema) -> Iterator[Schema]:
        """The schema and every schema it combines (anyOf, oneOf, allOf), resolved."""
        schema = self.resolve(schema)
        yield schema
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in schema.get(key, ()):
                yield from self.branches(branch)

    def target(self, detail: str, kind: str = "application/json") -> Schema:
        """The schema an ``answer`` marker names: ``schema NAME``, or ``METHOD PATH`` (every
        response of that operation, as one anyOf)."""
        words = detail.split()
        if len(words) == 2 and words[0] == "schema":
            schemas = self.document["components"]["schemas"]
            if words[1] not in schemas:
                raise ValueError(f"no schema {words[1]!r} in the OpenAPI document")
            return {"$ref": f"#/components/schemas/{words[1]}"}
        if len(words) != 2:
            raise ValueError(f"an answer marker names `METHOD PATH` or `schema NAME`, not {detail!r}")
        method, path = words[0].lower(), words[1]
        operation = self.document["paths"].get(path, {}).get(method)
        if operation is None:
            raise ValueError(f"no operation {words[0]} {path} in the OpenAPI document")
        found = [
            response["content"][kind]["schema"]
            for response in (self.resolve(r) for r in operation["responses"].values())
            if kind in response.get("content", {})
        ]
        if not found:
            raise ValueError(f"{words[0]} {path} has no {kind} answer in the OpenAPI document")
        return {"anyOf": found}

    def undeclared(self, value: Any, schema: Schema, where: str = "") -> list[str]:
        """The fields of ``value`` (by their path) that ``schema`` does not declare. An object
        schema that declares no properties at all is free-form (``metadata``)."""
        branches = list(self.branches(schema))
        if isinstance(value, dict):
            declared = [branch["properties"] for branch in branches if "properties" in branch]
            extra = [b["additionalProperties"] for b in branches if isinstance(b.get("additionalProperties"), dict)]
            if not declared and not extra:
                return []
            problems: list[str] = []
            for name, member in value.items():
                inner = [properties[name] for properties in declared if name in properties] or extra
                if not inner:
                    problems.append(f"{where}.{name}" if where else name)
                else:
                    problems.extend(self.undeclared(member, {"anyOf": inner}, f"{where}.{name}" if where else name))
            return problems
        if isinstance(value, list):
            items = [branch["items"] for branch in branches if isinstance(branch.get("items"), dict)]
            if not items:
                return []
            return [
                problem
                for n, item in enumerate(value)
                for problem in self.undeclared(item, {"anyOf": items}, f"{where}[{n}]")
            ]
        return []

    def property_names(self, schema: Schema, seen: set[int] | None = None) -> set[str]:
        """Every property name declared anywhere under ``schema`` (a CSV's columns flatten it)."""
        seen = set() if seen is None else seen
        names: set[str] = set()
        for branch in self.branches(schema):
            if id(branch) in seen:
                continue
            seen.add(id(branch))
            for name, member in branch.get("properties", {}).items():
                names.add(name)
                names |= self.property_names(member, seen)
            if isinstance(branch.get("items"), dict):
                names |= self.property_names(branch["items"], seen)
        return names


def check_answer(document: Document, language: str, detail: str, text: str) -> list[str]:
    """What is wrong with a shown answer (empty when every field it shows is declared)."""
    if language == "csv":
        header = next(csv.reader(io.StringIO(text)))
        words = detail.split()
        declared = document.property_names(document.target(" ".join(words[:2])))
        missing = [column for column in header if column not in declared]
        return [f"columns not declared by {detail}: {', '.join(missing)}"] if missing else []
    try:
        value = json.loads(without_elisions(text))
    except ValueError as error:
        return [f"not JSON (after dropping elided members): {error}"]
    missing = document.undeclared(value, document.target(detail))
    return [f"fields not declared by {detail}: {', '.join(missing)}"] if missing else []
