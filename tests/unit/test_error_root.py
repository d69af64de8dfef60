"""Every exception engram defines derives from one root, ``engram.EngramError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import engram
from engram.errors import EngramError

# The command line's entry module runs the CLI when imported.
_SKIP = {"engram.__main__"}


def _modules() -> list[str]:
    # The layers install under engram.* from folders of their own, so each is walked itself.
    names = []
    for root in ("engram", "engram.ledger", "engram.projections", "engram.agents", "engram.jobs"):
        package = importlib.import_module(root)
        names.append(root)
        for info in pkgutil.walk_packages(package.__path__, f"{root}."):
            if info.name not in _SKIP:
                names.append(info.name)
    return sorted(set(names))


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as missing:
            # An optional extra that is not installed; engram's own modules must import.
            if (missing.name or "").partition(".")[0] == "engram":
                raise
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(value, BaseException)
                and not issubclass(value, Warning)  # warnings are told, not raised
                and value.__module__ == name
                and not value.__name__.startswith("_")
            ):
                found[f"{name}.{value.__qualname__}"] = value
    return list(found.values())


def test_walk_finds_the_families() -> None:
    names = {cls.__name__ for cls in _exception_classes()}
    assert {"LedgerError", "ProjectionError", "AgentError", "JobError", "CliError"} <= names


@pytest.mark.parametrize("cls", _exception_classes(), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_public_exception_derives_from_engram_error(cls: type[BaseException]) -> None:
    assert issubclass(cls, EngramError), f"{cls.__module__}.{cls.__name__} is outside EngramError"
    assert cls.__name__.endswith("Error"), f"{cls.__module__}.{cls.__name__} does not end in Error"


def test_root_is_exported_at_the_top() -> None:
    assert engram.EngramError is EngramError
    assert "EngramError" in engram.__all__


def test_a_driver_message_is_joined_onto_one_line() -> None:
    from engram.ledger.errors import driver_message

    error = RuntimeError('relation "x" does not exist\nLINE 1: select * from x\n              ^\n')
    assert driver_message(error) == 'relation "x" does not exist LINE 1: select * from x'
