"""What the tests may do to the machine: private user and mount namespaces (``unshare``).

Tests that need read-only media or a full disk make them in a namespace of their own, so
nothing is mounted for anyone else and nothing is left behind.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

import pytest


@cache
def userns_mounts() -> bool:
    """Say whether ``unshare -rm`` works here (user and mount namespaces for tests)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    return probe.returncode == 0


needs_userns = pytest.mark.skipif(
    not userns_mounts(), reason="needs `unshare -rm` (user and mount namespaces)"
)
