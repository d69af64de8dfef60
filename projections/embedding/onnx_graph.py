"""Build an fp32 ONNX graph of a BERT encoder from its ``model.safetensors``, without torch.

The graph takes ``input_ids`` and ``attention_mask`` (int64, batch × tokens) and returns
``last_hidden_state`` (float32, batch × tokens × hidden): BERT's embeddings (word + position +
token type 0, LayerNorm), then ``num_hidden_layers`` post-norm encoder layers (self-attention
with the padding mask, GELU feed-forward). Pooling is left to the caller. The weights are read
from the safetensors file with numpy (its format is a JSON header and raw little-endian
arrays), so building needs only ``onnx`` and numpy.

:func:`convert` writes the graph once into a cache directory, atomically (a temporary file
renamed into place), under a name derived from the weights file and :data:`GRAPH_VERSION`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.projections.errors import EmbeddingConfigError

GRAPH_VERSION = 1
"""Bumped whenever the graph this module builds changes; part of the cached file's name."""

OPSET = 17  # LayerNormalization is an operator from opset 17 on
_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Return every tensor of the safetensors file at ``path`` as a numpy array.

    Raises:
        EmbeddingConfigError: the file is not a safetensors file or holds an unknown dtype.
    """
    data = path.read_bytes()
    try:
        (size,) = struct.unpack_from("<Q", data, 0)
        header = json.loads(data[8 : 8 + size])
    except (struct.error, ValueError) as error:
        raise EmbeddingConfigError(f"{path}: not a safetensors file ({error})") from None
    base = 8 + size
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec.get("dtype"))
        if dtype is None:
            raise EmbeddingConfigError(f"{path}: tensor {name!r} has dtype {spec.get('dtype')!r}")
        start, end = spec["data_offsets"]
        array = np.frombuffer(
            data, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize, offset=base + start
        )
        tensors[name] = array.reshape(spec["shape"])
    return tensors


def weights_key(weights: Path) -> str:
    """Return a short name for the graph built from ``weights``: header, size, time, version."""
    with weights.open("rb") as file:
        (size,) = struct.unpack("<Q", file.read(8))
        header = file.read(size)
    stat = weights.stat()
    digest = hashlib.sha256(header)
    digest.update(f"{stat.st_size}:{stat.st_mtime_ns}:{GRAPH_VERSION}".encode())
    return digest.hexdigest()[:16]


def convert(model_dir: Path, cache_dir: Path) -> Path:
    """Return the ONNX file of the model in ``model_dir``, building it into ``cache_dir`` once.

    ``model_dir`` holds ``config.json`` and ``model.safetensors`` (a Hugging Face BERT). The
    file is written to a temporary name and renamed, so a concurrent reader sees the whole
    graph or none; two processes converting at once both write the same bytes.
    """
    weights = model_dir / "model.safetensors"
    target = cache_dir / f"{model_dir.name}-{weights_key(weights)}.onnx"
    if target.is_file():
        return target
    config = json.loads((model_dir / "config.json").read_text())
    model = build_graph(config, read_safetensors(weights))
    cache_dir.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=cache_dir, prefix=target.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(model.SerializeToString())
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def build_graph(config: dict[str, Any], tensors: dict[str, npt.NDArray[Any]]) -> Any:
    """Return the ``onnx.ModelProto`` of the BERT encoder ``config`` and ``tensors`` describe.

    Raises:
        EmbeddingConfigError: the config is not a BERT with absolute positions and GELU, or a
            tensor is missing.
    """
    onnx = importlib.import_module("onnx")
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    if (
        config.get("hidden_act", "gelu") != "gelu"
        or config.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise EmbeddingConfigError("only BERT encoders with GELU and absolute positions convert")
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    head_size = hidden // heads
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""

    initializers: list[Any] = []
    nodes: list[Any] = []

    def weight(name: str, *, transpose: bool = False) -> str:
        key = prefix + name
        if key not in tensors:
            raise EmbeddingConfigError(f"the weights have no tensor {key!r}")
        array = np.asarray(tensors[key], dtype=np.float32)
        array = np.ascontiguousarray(array.T if transpose else array)
        initializers.append(numpy_helper.from_array(array, name))
        return name

    def constant(name: str, value: npt.NDArray[Any]) -> str:
        initializers.append(numpy_helper.from_array(value, name))
        return name

    def node(op: str, inputs: list[str], output: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], **attributes))
        return output

    def dense(x: str, name: str, out: str) -> str:
        product = node("MatMul", [x, weight(f"{name}.weight", transpose=True)], f"{out}/mm")
        return node("Add", [product, weight(f"{name}.bias")], out)

    def layer_norm(x: str, name: str, out: str) -> str:
        return node(
            "LayerNormalization",
            [x, weight(f"{name}.weight"), weight(f"{name}.bias")],
            out,
            axis=-1,
            epsilon=eps,
        )

    # Embeddings: word + position (0..T-1) + token type 0.
    words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "emb/w")
    shape = node("Shape", ["input_ids"], "emb/shape")
    length = node(
        "Gather", [shape, constant("one", np.array(1, dtype=np.int64))], "emb/len", axis=0
    )
    positions = node(
        "Range",
        [constant("zero", np.array(0, dtype=np.int64)), length, "one"],
        "emb/pos_ids",
    )
    position = node(
        "Gather", [weight("embeddings.position_embeddings.weight"), positions], "emb/pos"
    )
    types = np.asarray(tensors[prefix + "embeddings.token_type_embeddings.weight"], np.float32)
    summed = node("Add", [words, position], "emb/wp")
    summed = node("Add", [summed, constant("emb/type0", np.ascontiguousarray(types[0]))], "emb/sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "emb/out")

    # The padding mask as an additive bias on the attention scores: 0 kept, float32 min masked.
    mask = node("Cast", ["attention_mask"], "mask/f", to=onnx.TensorProto.FLOAT)
    inverted = node("Sub", [constant("mask/one", np.array(1.0, np.float32)), mask], "mask/inv")
    floor = np.array(np.finfo(np.float32).min, np.float32)
    bias = node("Mul", [inverted, constant("mask/min", floor)], "mask/bias2d")
    bias = node("Unsqueeze", [bias, constant("mask/axes", np.array([1, 2], np.int64))], "mask/bias")
    split = constant("heads/shape", np.array([0, 0, heads, head_size], np.int64))
    merge = constant("heads/merge", np.array([0, 0, hidden], np.int64))
    scale = constant("heads/scale", np.array(1.0 / math.sqrt(head_size), np.float32))

    for index in range(layers):
        name, tag = f"encoder.layer.{index}", f"l{index}"
        q = dense(x, f"{name}.attention.self.query", f"{tag}/q")
        k = dense(x, f"{name}.attention.self.key", f"{tag}/k")
        v = dense(x, f"{name}.attention.self.value", f"{tag}/v")
        q = node(
            "Transpose", [node("Reshape", [q, split], f"{tag}/q4")], f"{tag}/qt", perm=[0, 2, 1, 3]
        )
        k = node(
            "Transpose", [node("Reshape", [k, split], f"{tag}/k4")], f"{tag}/kt", perm=[0, 2, 3, 1]
        )
        v = node(
            "Transpose", [node("Reshape", [v, split], f"{tag}/v4")], f"{tag}/vt", perm=[0, 2, 1, 3]
        )
        scores = node("Mul", [node("MatMul", [q, k], f"{tag}/qk"), scale], f"{tag}/scaled")
        probs = node("Softmax", [node("Add", [scores, bias], f"{tag}/masked")], f"{tag}/p", axis=-1)
        context = node(
            "Transpose",
            [node("MatMul", [probs, v], f"{tag}/ctx4")],
            f"{tag}/ctxt",
            perm=[0, 2, 1, 3],
        )
        context = node("Reshape", [context, merge], f"{tag}/ctx")
        attended = dense(context, f"{name}.attention.output.dense", f"{tag}/ao")
        x = layer_norm(
            node("Add", [attended, x], f"{tag}/ar"),
            f"{name}.attention.output.LayerNorm",
            f"{tag}/a",
        )
        inner = dense(x, f"{name}.intermediate.dense", f"{tag}/i")
        activated = _gelu(node, constant, inner, f"{tag}/gelu")
        out = dense(activated, f"{name}.output.dense", f"{tag}/o")
        x = layer_norm(
            node("Add", [out, x], f"{tag}/or"),
            f"{name}.output.LayerNorm",
            "last_hidden_state" if index == layers - 1 else f"{tag}/out",
        )

    graph = helper.make_graph(
        nodes,
        "bert-encoder",
        [
            helper.make_tensor_value_info("input_ids", onnx.TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info(
                "attention_mask", onnx.TensorProto.INT64, ["batch", "tokens"]
            ),
        ],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", onnx.TensorProto.FLOAT, ["batch", "tokens", hidden]
            )
        ],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="engram"
    )
    model.ir_version = 8  # readable by every onnxruntime that runs opset 17
    return model


def _gelu(node: Any, constant: Any, x: str, tag: str) -> str:
    """The exact (erf) GELU BERT uses: x · ½ · (1 + erf(x / √2))."""
    scaled = node(
        "Div", [x, constant(f"{tag}/sqrt2", np.array(math.sqrt(2.0), np.float32))], f"{tag}/s"
    )
    shifted = node(
        "Add",
        [node("Erf", [scaled], f"{tag}/erf"), constant(f"{tag}/one", np.array(1.0, np.float32))],
        f"{tag}/e1",
    )
    half = node("Mul", [x, constant(f"{tag}/half", np.array(0.5, np.float32))], f"{tag}/h")
    return str(node("Mul", [half, shifted], f"{tag}/out"))
