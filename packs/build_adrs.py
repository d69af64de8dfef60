"""Build ``engram-adrs.pack``: the project's ADRs as a knowledge pack (the shipped example).

Each ADR becomes a concept ``engram.adr.NNNN`` (type ``fact``; its status, date, file and
decision in the payload; a ``cites`` link to every ADR it names) and a memory holding its
title and decision, so recall finds it. The pack is sealed with ``example.key``, a key
published here on purpose: this pack is an example, not a secret. Run from the repository:

    python packs/build_adrs.py
"""

from __future__ import annotations

import hashlib
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

from engram.agents.packs import ConceptNode, Manifest, MemoryNode, PackKey, pack_id, write_pack
from engram.agents.packs.format import encode_nodes
from engram.ledger.catalog import ConceptLink

HERE = Path(__file__).resolve().parent
NAME, VERSION = "engram-adrs", "1"


def section(text: str, title: str) -> str:
    """Return the first paragraph of the ``## title`` section, on one line."""
    match = re.search(rf"^## {title}\s*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if match is None:
        return ""
    paragraph = match.group(1).strip().split("\n\n")[0]
    return " ".join(paragraph.split())


def nodes(adr_dir: Path) -> list[ConceptNode | MemoryNode]:
    """Return a concept and a memory per ADR, in number order."""
    out: list[ConceptNode | MemoryNode] = []
    for path in sorted(adr_dir.glob("[0-9][0-9][0-9][0-9]-*.md")):
        text = path.read_text(encoding="utf-8")
        number = path.name[:4]
        title = text.splitlines()[0].lstrip("# ").strip()
        decision = section(text, "Decision")
        cited = sorted({n.zfill(4) for n in re.findall(r"ADRs? (\d{4})", text)} - {number})
        out.append(
            ConceptNode(
                id=f"engram.adr.{number}",
                type="fact",
                label=title,
                payload={
                    "file": f"adr/{path.name}",
                    "status": section(text, "Status"),
                    "date": (re.findall(r"^Date: (\S+)", text, re.M) or [""])[0],
                    "decision": decision,
                },
                links=[ConceptLink(to=f"engram.adr.{n}", rel="cites", weight=0.5) for n in cited],
            )
        )
        out.append(
            MemoryNode(
                id=f"adr-{number}",
                text=f"ADR {number}: {title}. {decision}",
                type="observation",
                importance=6,
                tags=["adr"],
            )
        )
    return out


def main() -> int:
    """Build the pack next to this script."""
    jsonl = encode_nodes(nodes(HERE.parent / "adr"))
    manifest = Manifest(
        id=pack_id(NAME, VERSION),
        name=NAME,
        version=VERSION,
        domain=["engram", "architecture"],
        created_at=datetime.now(UTC),
        checksum=hashlib.sha256(jsonl).hexdigest(),
        nodes=jsonl.count(b"\n"),
    )
    write_pack(HERE / f"{NAME}.pack", manifest, jsonl, PackKey.from_file(HERE / "example.key"))
    print(f"wrote {NAME}.pack: {manifest.nodes} nodes, checksum {manifest.checksum[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
