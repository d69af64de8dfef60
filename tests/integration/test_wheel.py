"""The built wheel installs under one namespace, beside a distribution that owns ``agents``.

ADR 0016: the card's folders install as ``engram.ledger``, ``engram.projections``,
``engram.agents`` and ``engram.jobs``. This test builds the wheel from a copy of the source
tree, installs it into a fresh virtual environment next to a small distribution that provides
its own top-level ``agents`` (as the OpenAI Agents SDK does), and runs ``engram demo`` there.
engram's dependencies come from the registry through pip's cache, as a user's would.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("ledger", "projections", "agents", "jobs")
SOURCES = (*LAYERS, "engram")


def _run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENGRAM_LEDGER")}
    result = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{args[:3]} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _other_agents_wheel(folder: Path) -> Path:
    """Write a minimal wheel of a distribution whose top-level package is ``agents``."""
    files = {
        "agents/__init__.py": b'OWNER = "someone-else"\n',
        "other_agents-1.0.dist-info/METADATA": (
            b"Metadata-Version: 2.1\nName: other-agents\nVersion: 1.0\n"
        ),
        "other_agents-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: engram-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
        "other_agents-1.0.dist-info/top_level.txt": b"agents\n",
    }
    record = [_record_line(name, data) for name, data in files.items()]
    record.append("other_agents-1.0.dist-info/RECORD,,")
    path = folder / "other_agents-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("other_agents-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def _build_engram_wheel(tmp_path: Path) -> Path:
    tree = tmp_path / "src"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, tree / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in SOURCES:
        shutil.copytree(ROOT / folder, tree / folder, ignore=ignore)
    out = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(tree)],
        cwd=tmp_path,
        timeout=300,
    )  # fmt: skip
    (wheel,) = out.glob("engram-*.whl")
    return wheel


def test_wheel_installs_beside_another_agents_and_runs_the_demo(tmp_path: Path) -> None:
    wheel = _build_engram_wheel(tmp_path)

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    expected = {
        f"engram/{path.relative_to(ROOT / folder).as_posix()}"
        if folder == "engram"
        else f"engram/{folder}/{path.relative_to(ROOT / folder).as_posix()}"
        for folder in SOURCES
        for path in (ROOT / folder).rglob("*.py")
    }
    assert expected <= names, f"modules missing from the wheel: {sorted(expected - names)}"
    assert "engram/py.typed" in names
    tops = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert tops == {"engram"}, f"the wheel claims other top-level names: {tops}"

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    other = _other_agents_wheel(tmp_path)
    _run([str(python), "-m", "pip", "install", "-q", str(other), str(wheel)], tmp_path, 900)

    demo = _run([str(env_dir / "bin" / "engram"), "demo", "--dir", str(tmp_path / "demo")],
                tmp_path, 300)  # fmt: skip
    assert "verify" in demo.stdout.lower()
    probe = _run(
        [str(python), "-c",
         "import agents, engram, engram.agents; "
         "print(agents.OWNER, engram.__version__, engram.agents.__name__)"],
        tmp_path, 60,
    )  # fmt: skip
    owner, version, name = probe.stdout.split()
    assert owner == "someone-else"
    assert name == "engram.agents"
    assert (
        version
        == _run([str(env_dir / "bin" / "engram"), "--version"], tmp_path, 60).stdout.split()[-1]
    )
