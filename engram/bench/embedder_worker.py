"""One fresh process of the embedder suite: import a MiniLM runtime, load it, encode, report.

``python -m engram.bench.embedder_worker PROVIDER TEXTS OUT`` (PROVIDER ``onnx`` or ``st``)
reads the texts (a JSON list), embeds one to load the model, then all of them in one call,
then 32 of them one per call; saves the vectors to OUT (``.npy``) and prints one JSON line:
import and load seconds, encode seconds, milliseconds per single-text call, peak resident
memory in MB, and the best rate of a one-thread fp32 matrix product of the encoder's shape
just before the encode (numpy's BLAS, GFLOP/s): the ceiling the encode's arithmetic is read
against. Both runtimes use one thread, so the figures compare the runtimes, not the cores a
shared machine happens to lend.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(provider: str, texts_path: str, out: str) -> None:
    """Measure ``provider`` on the texts at ``texts_path``; write vectors to ``out``."""
    import numpy as np

    with open(texts_path, encoding="utf-8") as file:
        texts = json.load(file)
    start = time.perf_counter()
    if provider == "onnx":
        importlib.import_module("onnxruntime")
        importlib.import_module("tokenizers")
        imported = time.perf_counter()
        from engram.projections.embedding.onnx_provider import OnnxEmbedder

        embedder: object = OnnxEmbedder(model="all-MiniLM-L6-v2", threads=1)
    else:
        importlib.import_module("sentence_transformers")
        importlib.import_module("torch").set_num_threads(1)
        imported = time.perf_counter()
        from engram.projections.embedding.st import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder(model="all-MiniLM-L6-v2", device="cpu")
    embedder.embed(texts[:1])  # type: ignore[attr-defined]
    loaded = time.perf_counter()
    sgemm = sgemm_gflops()
    encode_start = time.perf_counter()
    vectors = embedder.embed(texts)  # type: ignore[attr-defined]
    encoded = time.perf_counter()
    singles = texts[:32]
    for text in singles:  # one text per call, as recall embeds its query
        embedder.embed([text])  # type: ignore[attr-defined]
    single = (time.perf_counter() - encoded) / len(singles)
    np.save(out, vectors)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "import_s": imported - start,
                "load_s": loaded - imported,
                "encode_s": encoded - encode_start,
                "single_ms": single * 1000,
                "texts": len(texts),
                "peak_mb": peak,
                "sgemm_gflops": sgemm,
            }
        )
    )


def sgemm_gflops(seconds: float = 1.0) -> float:
    """Return the best rate of a one-thread fp32 product shaped like the encoder's.

    (1024 tokens × 384) · (384 × 1536), MiniLM's feed-forward, called again and again for
    ``seconds``; the fastest call is the ceiling: what a tuned SGEMM reaches on this core when
    nothing else takes it, in GFLOP/s.
    """
    import numpy as np

    rng = np.random.default_rng(0)
    left = rng.random((1024, 384), dtype=np.float32)
    right = rng.random((384, 1536), dtype=np.float32)
    out = np.empty((1024, 1536), dtype=np.float32)
    np.matmul(left, right, out=out)
    best, start = float("inf"), time.perf_counter()
    while time.perf_counter() - start < seconds:
        before = time.perf_counter()
        np.matmul(left, right, out=out)
        best = min(best, time.perf_counter() - before)
    return 2 * 1024 * 384 * 1536 / best / 1e9


if __name__ == "__main__":
    main(*sys.argv[1:4])
