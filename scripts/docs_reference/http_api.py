"""The HTTP API reference: every path and method of the served OpenAPI document, with its
parameters, request body and responses (errors included), then every schema they use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scripts.docs_reference.markdown import anchor, cell, table

METHODS = ("get", "post", "put", "patch", "delete")


def operation_anchor(method: str, path: str) -> str:
    return anchor(method, path)


def schema_anchor(name: str) -> str:
    return anchor("schema", name)


def type_text(schema: dict[str, Any]) -> str:
    """A JSON Schema as one short line: references link to their schema's section."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{schema_anchor(name)})"
    if "anyOf" in schema or "oneOf" in schema:
        return " or ".join(type_text(s) for s in schema.get("anyOf", schema.get("oneOf", [])))
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return "array of " + type_text(schema.get("items", {}))
    if kind == "object" and "additionalProperties" in schema and isinstance(schema["additionalProperties"], dict):
        return "object of " + type_text(schema["additionalProperties"])
    text = " or ".join(kind) if isinstance(kind, list) else str(kind)
    limits = [
        f"{word} {schema[key]}"
        for key, word in (("format", "format"), ("pattern", "pattern"), ("minimum", "≥"), ("maximum", "≤"))
        if key in schema
    ]
    limits += [f"at most {schema[key]}" for key in ("maxLength", "maxItems") if key in schema]
    return text + (f" ({', '.join(limits)})" if limits else "")


def _content(content: dict[str, Any]) -> str:
    return "; ".join(f"`{kind}`: {type_text(body.get('schema', {}))}" for kind, body in content.items()) or "none"


def _operation(method: str, path: str, op: dict[str, Any], default_security: list[Any]) -> list[str]:
    out = [f"### `{method.upper()} {path}` {{ #{operation_anchor(method, path)} }}", ""]
    out += [op.get("summary", ""), ""]
    if op.get("description"):
        out += [op["description"], ""]
    # An operation without its own list takes the document's; an empty list means none.
    security = [name for requirement in op.get("security", default_security) for name in requirement]
    out += ["Authentication: " + (", ".join(f"`{name}`" for name in security) or "none") + ".", ""]
    parameters = op.get("parameters", [])
    if parameters:
        rows = [
            [
                f"`{p['name']}`",
                p["in"],
                "yes" if p.get("required") else "no",
                type_text(p.get("schema", {})),
                p.get("description", ""),
            ]
            for p in parameters
        ]
        out += [table(["Parameter", "In", "Required", "Type", "Description"], rows)]
    if "requestBody" in op:
        body = op["requestBody"]
        required = "required" if body.get("required") else "optional"
        out += [f"Request body ({required}): {_content(body.get('content', {}))}", ""]
    rows = [
        [f"`{status}`", response.get("description", ""), _content(response.get("content", {}))]
        for status, response in sorted(op.get("responses", {}).items())
    ]
    out += [table(["Status", "Meaning", "Body"], rows)]
    return out


def _schema(name: str, schema: dict[str, Any]) -> list[str]:
    out = [f"### {name} {{ #{schema_anchor(name)} }}", ""]
    if schema.get("description"):
        out += [cell(schema["description"]), ""]
    properties = schema.get("properties")
    if properties:
        required = set(schema.get("required", []))
        rows = [
            [f"`{field}`", "yes" if field in required else "no", type_text(spec), spec.get("description", "")]
            for field, spec in properties.items()
        ]
        out += [table(["Field", "Required", "Type", "Description"], rows)]
        if schema.get("additionalProperties") is False:
            out += ["No other fields.", ""]
    else:
        out += [f"Type: {type_text(schema)}", ""]
    return out


def page(document_path: Path) -> str:
    document = json.loads(document_path.read_text(encoding="utf-8"))
    info = document["info"]
    out = [
        "# HTTP API",
        "",
        f"{info['title']} {info['version']}: {info.get('description', '')}",
        "",
        "Generated from the OpenAPI 3.1 document the service serves at `GET /v1/openapi.json`, "
        "when the site is built. Every path, with its parameters, request body and answers "
        "(errors included); the schemas follow. The rules behind them: [API rules](../api-rules.md).",
        "",
        "## Authentication",
        "",
    ]
    schemes = document.get("components", {}).get("securitySchemes", {})
    rows = [[f"`{n}`", s.get("scheme", s.get("type", "")), s.get("description", "")] for n, s in schemes.items()]
    out += [table(["Scheme", "Kind", "Description"], rows)]
    out += ["## Paths", ""]
    for path in sorted(document["paths"]):
        for method in METHODS:
            if method in document["paths"][path]:
                out += _operation(method, path, document["paths"][path][method], document.get("security", []))
    out += ["## Schemas", ""]
    for name, schema in sorted(document.get("components", {}).get("schemas", {}).items()):
        out += _schema(name, schema)
    return "\n".join(out) + "\n"
