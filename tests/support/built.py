"""The SAM build the deploy tests read: where it is, and whether its sources changed since."""

from __future__ import annotations

from tests.conftest import ROOT

BUILD = ROOT / ".aws-sam" / "build"
SAM = ROOT / ".costtrack" / "tools" / "sam" / "bin" / "sam"
SOURCES = [ROOT / "template.yaml", ROOT / "functions", ROOT / "sdk" / "python" / "src", ROOT / "sdk" / "node" / "src"]


def newest_source_change() -> float:
    return max(path.stat().st_mtime for source in SOURCES if source.exists() for path in [source, *source.rglob("*")])
