"""Keep each package's curated face honest and the layers pointing down."""

import ast
import importlib
import importlib.metadata
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ["ledger", "projections", "agents", "jobs", "engram"]
RANK = {name: rank for rank, name in enumerate(LAYERS)}
# Installed, every layer lives under engram.* (ADR 0016); the folder keeps the layer's name.
MODULE = {name: name if name == "engram" else f"engram.{name}" for name in LAYERS}
# Packages with a curated face: every layer but jobs (not built yet), and subpackages.
CURATED = ["ledger", "projections", "projections/embedding", "agents", "engram"]


def _module(package: str) -> str:
    layer, _, rest = package.partition("/")
    return MODULE[layer] + (f".{rest.replace('/', '.')}" if rest else "")


@pytest.mark.parametrize("package", LAYERS)
def test_every_built_package_has_an_init(package: str) -> None:
    if package == "jobs" and not any((ROOT / package).glob("*.py")):
        pytest.skip("jobs is not built yet")
    assert (ROOT / package / "__init__.py").is_file()


@pytest.mark.parametrize("package", CURATED)
def test_all_lists_exactly_the_public_names(package: str) -> None:
    module = importlib.import_module(_module(package))
    exported = list(module.__all__)
    assert exported, f"{package}.__all__ is empty: re-export the names people use"

    # Order is ruff's job (RUF022, isort-style); here: no duplicates.
    assert len(exported) == len(set(exported)), f"{package}.__all__ has duplicates"
    missing = [name for name in exported if not hasattr(module, name)]
    assert not missing, f"{package}.__all__ names undefined attributes: {missing}"
    public = sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not inspect.ismodule(value)
        and type(value).__module__ != "__future__"  # `from __future__ import ...`
    )
    unlisted = [name for name in public if name not in exported]
    assert not unlisted, f"{package} defines public names missing from __all__: {unlisted}"


def _layer_of(module: str) -> str:
    """Name the layer a module belongs to: ``engram.agents.memory`` is in ``agents``."""
    parts = module.split(".")
    if parts[0] == "engram" and len(parts) > 1 and parts[1] in RANK:
        return parts[1]
    return parts[0]


def test_the_distribution_claims_one_top_level_name() -> None:
    top_level = importlib.metadata.distribution("engram").read_text("top_level.txt") or ""
    assert top_level.split() == ["engram"]


def _upward_imports(path: Path, rank: int) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    violations = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [node.module]
        else:
            continue
        for target in targets:
            if RANK.get(_layer_of(target), -1) > rank:
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                violations.append(f"{where} imports {target}")
    return violations


def test_imports_point_down_the_layers() -> None:
    files = [(path, RANK[layer]) for layer in LAYERS for path in (ROOT / layer).rglob("*.py")]
    if not files:
        pytest.skip("no package sources yet")
    violations = [v for path, rank in files for v in _upward_imports(path, rank)]
    assert not violations, "imports pointing up the layers:\n" + "\n".join(violations)


def test_agents_write_no_sql_over_projection_tables() -> None:
    """Projections own their tables and the reads over them; agents call those reads."""
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "agents").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(word in line for word in ("SELECT", "FROM ", "INSERT", "UPDATE ", "DELETE"))
    ]
    assert not found, "SQL in agents/:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "module",
    ["engram.projections", "engram.projections.embedding", "engram.agents", "engram.ledger"],
)
def test_a_package_face_imports_alone_without_cycles(module: str) -> None:
    """Each face imports first in a fresh interpreter (an import cycle would fail here)."""
    import subprocess
    import sys

    code = f"import {module}, sys; assert {module!r} in sys.modules"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
