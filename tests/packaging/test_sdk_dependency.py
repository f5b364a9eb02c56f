"""The service's dependency on the Python SDK is this checkout's ``sdk/python``, for uv and for
plain pip alike: never a bare name a package index could answer with someone else's project."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
SDK_NAME = tomllib.loads((ROOT / "sdk" / "python" / "pyproject.toml").read_text())["project"]["name"]


def _sdk_requirement(requirements: list[str]) -> Requirement:
    found = [Requirement(text) for text in requirements if Requirement(text).name == SDK_NAME]
    assert len(found) == 1, f"expected one requirement on {SDK_NAME}, got {found}"
    return found[0]


def test_the_declared_dependency_is_a_path_into_this_checkout() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = [text.replace("{root:uri}", ROOT.as_uri()) for text in project["project"]["dependencies"]]
    requirement = _sdk_requirement(declared)
    assert requirement.url == f"{ROOT.as_uri()}/sdk/python"
    assert project["tool"]["hatch"]["metadata"]["allow-direct-references"] is True
    # uv installs the same folder (editable) from its sources table.
    assert project["tool"]["uv"]["sources"][SDK_NAME] == {"path": "sdk/python", "editable": True}


def test_the_installed_service_metadata_names_the_sdk_folder_it_was_built_from() -> None:
    """What hatchling wrote when this environment was synced: what pip reads too."""
    requirement = _sdk_requirement(importlib.metadata.requires("costtrack-service") or [])
    assert requirement.url is not None
    url = urlsplit(requirement.url)
    assert url.scheme == "file"
    assert Path(unquote(url.path)) == ROOT / "sdk" / "python"
