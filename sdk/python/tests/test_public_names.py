"""The names users import, pinned: splitting a module behind ``costtrack``,
``costtrack.providers`` or ``costtrack.validation`` must not drop or add one silently. Adding a
public name means adding it here too, on purpose. The service imports ``costtrack.validation``
names as well (``functions/costtrack_service``)."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import pytest

import costtrack

#: Module → the names it exports. Data, apart from the modules that define the names.
PUBLIC = {
    module: set(names)
    for module, names in json.loads((Path(__file__).parent / "public_names.json").read_text()).items()
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_each_public_module_exports_exactly_its_names(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert set(module.__all__) == PUBLIC[module_name]
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert len(module.__all__) == len(set(module.__all__))


def test_the_package_and_its_modules_hand_out_the_same_objects() -> None:
    from costtrack import providers, validation

    assert costtrack.providers is providers
    for name in ("EventValidationError", "FieldError", "validate_event"):
        assert getattr(costtrack, name) is getattr(validation, name)


def test_every_private_module_declares_what_it_offers() -> None:
    directory = Path(costtrack.__file__).parent
    modules = [info.name for info in pkgutil.iter_modules([str(directory)])]
    assert "_fields" in modules and "_provider_usage" in modules  # the listing found the split
    # _version.py is one line that the build reads (test_integrations holds it so).
    for name in (module for module in modules if module != "_version"):
        module = importlib.import_module(f"costtrack.{name}")
        assert isinstance(getattr(module, "__all__", None), (list, tuple)), name
        for exported in module.__all__:
            assert hasattr(module, exported), f"costtrack.{name}.{exported}"
