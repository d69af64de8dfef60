"""Knowledge packs: public concepts and memories sealed in one authenticated file (ADR 0041).

:mod:`engram.agents.packs.format` is the file (manifest, nodes, AES-GCM envelope, keys);
:mod:`engram.agents.packs.transfer` exports from and imports into a ledger.
"""

from engram.agents.packs.format import (
    ConceptNode,
    Manifest,
    MemoryNode,
    PackAuthError,
    PackChecksumError,
    PackConflictError,
    PackError,
    PackFormatError,
    PackKey,
    PackKeyError,
    node_event_id,
    pack_id,
    peek,
    read_pack,
    write_pack,
)
from engram.agents.packs.transfer import Imported, export_pack, import_nodes, import_pack

__all__ = [
    "ConceptNode",
    "Imported",
    "Manifest",
    "MemoryNode",
    "PackAuthError",
    "PackChecksumError",
    "PackConflictError",
    "PackError",
    "PackFormatError",
    "PackKey",
    "PackKeyError",
    "export_pack",
    "import_nodes",
    "import_pack",
    "node_event_id",
    "pack_id",
    "peek",
    "read_pack",
    "write_pack",
]
