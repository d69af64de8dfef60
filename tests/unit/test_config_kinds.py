"""Event kinds declared in the config file: parsed, validated, registered, audited, recalled."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

import engram
from engram.config import resolve_settings
from engram.ledger import ConfigError, KindRegistry, NewEvent, PayloadError, default_registry
from engram.ledger.audit import open_audit
from engram.runtime import merged_registry, registry_for

CONFIG = """
[kinds."task.assigned"]
schema = 2

[kinds."task.assigned".fields]
task = "str"
assignee = "str"
priority = "int?"
labels = "list[str]?"
estimate = "float?"
done = "bool?"
extra = "json?"

[kinds."note.taken"]
open = true
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "engram.toml"
    path.write_text(f'ledger = "{tmp_path / "ledger.db"}"\n{CONFIG}')
    return path


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    return str(path)


def test_registry_for_adds_the_config_kinds_to_engram_s(config: Path) -> None:
    registry = registry_for(resolve_settings(config=str(config)))
    names = [spec.name for spec in registry]
    assert names == sorted(names)
    assert set(names) == {s.name for s in default_registry()} | {"task.assigned", "note.taken"}
    task = registry.get("task.assigned")
    assert task is not None
    assert task.schema == 2
    assert [f.name for f in msgspec.structs.fields(task.type)] == [
        "task",
        "assignee",
        "priority",
        "labels",
        "estimate",
        "done",
        "extra",
    ]


def test_config_kinds_append_through_open_and_read_back(config: Path) -> None:
    payload = {"task": "write the ADR", "assignee": "ana", "labels": ["docs"], "extra": {"a": 1}}
    with engram.open(config=str(config)) as ledger:
        position = ledger.append(
            [
                NewEvent(stream="tasks", kind="task.assigned", payload=payload),
                NewEvent(stream="notes", kind="note.taken", payload={"data": {"any": [1, "x"]}}),
            ]
        )[0]
        task, note = ledger.get([position, position + 1])
    assert task.schema == 2
    assert task.payload.task == "write the ADR"
    assert task.payload.priority is None
    assert task.payload.extra == {"a": 1}
    assert note.payload.data == {"any": [1, "x"]}


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"task": "t"}, "assignee"),  # a required field missing
        ({"task": "t", "assignee": 3}, "assignee"),  # a wrong type
        ({"task": "t", "assignee": "a", "labels": [1]}, "labels"),
        ({"task": "t", "assignee": "a", "extra": [1]}, "extra"),  # json means an object
        ({"task": "t", "assignee": "a", "colour": "red"}, "colour"),  # an unknown field
    ],
)
def test_a_wrong_payload_is_refused_and_nothing_is_written(
    config: Path, payload: dict[str, object], field: str
) -> None:
    with engram.open(config=str(config)) as ledger:
        with pytest.raises(PayloadError, match=field):
            ledger.append(NewEvent(stream="tasks", kind="task.assigned", payload=payload))
        with pytest.raises(PayloadError, match="text"):
            ledger.append(NewEvent(stream="notes", kind="note.taken", payload={"text": "x"}))
        with pytest.raises(PayloadError, match="data"):
            ledger.append(NewEvent(stream="notes", kind="note.taken", payload={"data": [1]}))
        assert ledger.head() == 0


def test_config_kinds_are_queried_in_sql_through_the_audit(config: Path) -> None:
    with engram.open(config=str(config)) as ledger:
        for who in ("ana", "ben", "ana"):
            ledger.append(
                NewEvent(
                    stream="tasks", kind="task.assigned", payload={"task": "t", "assignee": who}
                )
            )
        kinds = {spec.name: spec.type for spec in ledger.registry}
        with open_audit(ledger.audit_target(), kinds) as audit:
            result = audit.query(
                "SELECT assignee, count(*) FROM task_assigned GROUP BY assignee ORDER BY 1"
            )
    assert result.rows == [("ana", 2), ("ben", 1)]


def test_open_memory_takes_a_registry_and_recalls_in_the_same_handle(
    tmp_path: Path, config: Path
) -> None:
    class Shipped(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
        version: str

    mine = KindRegistry()
    mine.register("release.shipped", Shipped)
    with engram.open_memory(config=str(config), registry=mine) as memory:
        memory.ledger.append(
            [
                NewEvent(stream="rel", kind="release.shipped", payload=Shipped("1.0")),
                NewEvent(stream="t", kind="task.assigned", payload={"task": "t", "assignee": "a"}),
            ]
        )
        ana = memory.agent("ana")
        ana.observe("the release shipped on a rainy friday")
        result = ana.recall("rainy release", 3, record=False)
    assert [r.event.payload.text for r in result.items] == ["the release shipped on a rainy friday"]
    assert "release.shipped" not in default_registry()
    assert [s.name for s in mine] == ["release.shipped"]  # the given registry is not changed


def test_a_given_registry_may_not_redefine_engram_s_kinds(config: Path) -> None:
    class Other(msgspec.Struct):
        x: int

    mine = KindRegistry()
    mine.register("memory.observed", Other)
    with pytest.raises(ConfigError, match=r"memory\.observed"):
        merged_registry(resolve_settings(config=str(config)), mine)


def test_a_given_registry_clashing_with_a_config_kind_is_refused(config: Path) -> None:
    class Other(msgspec.Struct):
        x: int

    mine = default_registry()
    mine.register("note.taken", Other)
    with pytest.raises(ConfigError, match=rf"{config}.*note\.taken"):
        merged_registry(resolve_settings(config=str(config)), mine)


def test_the_same_declaration_merges_with_itself(config: Path) -> None:
    settings = resolve_settings(config=str(config))
    again = merged_registry(settings, registry_for(settings))
    assert len(again) == len(registry_for(settings))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[kinds."memory.observed"]\nfields = { a = "str" }', "clashes with engram's built-in"),
        ('[kinds."Bad Name"]\nfields = { a = "str" }', "'Bad Name'.*invalid"),
        ('[kinds."x.y"]\nfields = { a = "string" }', r"'x\.y': field 'a' has unknown type"),
        ('[kinds."x.y"]\nfields = { a = "list[json]" }', "field 'a' has unknown type"),
        ('[kinds."x.y"]\nfields = { class = "str" }', "field 'class'"),
        ('[kinds."x.y"]\nfields = { _a = "str" }', "field '_a'"),
        ('[kinds."x.y"]\nfields = {}', "fields must be a table"),
        ('[kinds."x.y"]\nschema = 0\nfields = { a = "str" }', "schema must be an int >= 1"),
        ('[kinds."x.y"]\nopen = true\nfields = { a = "str" }', "open kind takes no fields"),
        ('[kinds."x.y"]\nopen = "yes"', "open must be true or false"),
        ('[kinds."x.y"]\nfeilds = { a = "str" }', "unknown key"),
        ('[kinds]\n"x.y" = 3', "must be a table"),
        ('kinds = "x.y"', "kinds has the wrong type"),
    ],
)
def test_bad_declarations_name_the_file_the_kind_and_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as caught:
        resolve_settings(str(tmp_path / "l.db"), config=path)
    assert path in str(caught.value)


def test_kinds_may_come_as_an_option_too(tmp_path: Path) -> None:
    settings = resolve_settings(str(tmp_path / "l.db"), kinds={"x.y": {"fields": {"a": "str"}}})
    assert "x.y" in registry_for(settings)
    with pytest.raises(ConfigError, match=r"<options>: kind 'x\.y': field 'a' has unknown type"):
        resolve_settings(str(tmp_path / "l.db"), kinds={"x.y": {"fields": {"a": "date"}}})
