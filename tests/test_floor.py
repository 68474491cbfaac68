"""The dependency floors in pyproject.toml are real: CI installs exactly those versions in a separate
venv (.ci/run, ``STREAMARMS_FLOOR=1``) and runs ``pytest -m floor`` (the subset listed in
tests/conftest.py). These tests check that every module imports on what is installed and, in that
venv, that what is installed really is the floor."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def floors() -> dict[str, str]:
    """``{distribution: lowest allowed version}`` from ``[project].dependencies``."""
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    out = {}
    for d in deps:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(,.*)?", d)
        assert m, f"dependency {d!r} has no '>=' floor"
        out[m.group(1)] = m.group(2)
    return out


def release(v: str) -> tuple[int, ...]:
    """``"0.17"`` and ``"0.17.0"`` compare equal (trailing zeros dropped)."""
    parts = [int(p) for p in re.findall(r"\d+", v)]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def test_every_module_imports():
    import streamarms.connectors

    names = [m.name for m in pkgutil.walk_packages(streamarms.__path__, "streamarms.")]
    names += [m.name for m in pkgutil.walk_packages(streamarms.connectors.__path__, "streamarms.connectors.")]
    assert "streamarms.detector" in names and "streamarms.connectors.kafka" in names
    for name in names:
        if not name.endswith("__main__"):  # `python -m` entry points run on import
            importlib.import_module(name)
    # the river modules a user combines the detector with
    importlib.import_module("river.anomaly")
    importlib.import_module("river.compose")
    importlib.import_module("river.checks")


def test_every_dependency_has_a_floor():
    assert set(floors()) >= {"numpy", "river", "kafka-python", "prometheus-client"}


@pytest.mark.skipif(os.environ.get("STREAMARMS_FLOOR") != "1", reason="only in CI's lowest-versions venv")
def test_installed_versions_are_the_floors():
    for dist, low in floors().items():
        got = metadata.version(dist)
        assert release(got) == release(low), f"{dist}: {got} installed, floor {low}"
