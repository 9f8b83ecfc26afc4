"""The model catalogue: what a model needs in memory, and what the hosts and cards offer.

Memory, not compute, is what runs out on a small GPU cluster. Working out what fits needs a few
architectural facts per model (parameters, bits per weight, attention layout, the KV-cache dtype,
the longest context it supports) and a few per host (total memory, what the OS keeps). They live
in a YAML file shipped with this package (`models.yaml`, every figure's source or assumption in
its comments); users add or override entries with their own file, given to `load_catalog` or
named in `$STEWARD_MODELS` (several paths separated by the platform's path separator).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from tools.bases import Frozen
from tools.errors import InvalidInput

GIB = 1024**3
MIB = 1024**2

CATALOG_ENV = "STEWARD_MODELS"
"""Environment variable naming extra catalogue files, separated by `os.pathsep`."""

KvDtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "fp4"]
Attention = Literal["gqa", "mla"]

KV_DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
}


class ServingOverhead(Frozen):
    """Memory a serving engine takes per node beyond weights and KV cache, in GiB."""

    runtime_gib: float = Field(ge=0)
    """CUDA context, cuBLAS/NCCL workspaces, the engine process itself."""
    cuda_graphs_gib: float = Field(ge=0)
    """Captured CUDA graphs for the decode batch sizes."""
    activations_gib: float = Field(ge=0)
    """Peak activations of one chunked-prefill step (the engine's profile run)."""

    @property
    def total_bytes(self) -> int:
        return round((self.runtime_gib + self.cuda_graphs_gib + self.activations_gib) * GIB)


class ModelSpec(Frozen):
    """One servable model, quantised as it is actually served."""

    name: str = Field(min_length=1)
    description: str = ""
    params_total_b: float = Field(gt=0, description="All parameters, in billions.")
    params_active_b: float | None = Field(default=None, gt=0, description="Per token (MoE).")
    bits_per_weight: float = Field(gt=0, le=32)
    layers: int = Field(ge=1)
    kv_layers: int | None = Field(default=None, ge=0)
    """Layers that keep a KV cache; fewer than `layers` in hybrid linear-attention models."""
    attention: Attention = "gqa"
    kv_heads: int = Field(default=0, ge=0)
    head_dim: int = Field(default=0, ge=0)
    kv_lora_rank: int = Field(default=0, ge=0)
    """MLA: width of the compressed latent cached per token and layer."""
    rope_head_dim: int = Field(default=0, ge=0)
    """MLA: the decoupled RoPE key cached next to the latent."""
    kv_dtype: KvDtype = "bf16"
    linear_state_mib: float = Field(default=0.0, ge=0)
    """Recurrent state of the linear-attention layers, per sequence (independent of context)."""
    max_context: int = Field(ge=1)
    overhead: ServingOverhead | None = None
    """Per-node serving overhead; the catalogue's default when absent."""

    @model_validator(mode="after")
    def _attention_shape(self) -> ModelSpec:
        if self.attention == "gqa" and (self.kv_heads < 1 or self.head_dim < 1):
            raise ValueError("a GQA model needs kv_heads >= 1 and head_dim >= 1")
        if self.attention == "mla" and self.kv_lora_rank < 1:
            raise ValueError("an MLA model needs kv_lora_rank >= 1")
        if self.params_active_b is not None and self.params_active_b > self.params_total_b:
            raise ValueError("params_active_b is larger than params_total_b")
        if self.kv_layers is not None and self.kv_layers > self.layers:
            raise ValueError("kv_layers is larger than layers")
        return self

    @property
    def cache_layers(self) -> int:
        return self.layers if self.kv_layers is None else self.kv_layers

    @property
    def weight_bytes(self) -> int:
        """Bytes of the weights: parameters x bits per weight / 8."""
        return round(self.params_total_b * 1e9 * self.bits_per_weight / 8)

    def kv_bytes_per_token(self, tensor_parallel: int = 1) -> float:
        """KV-cache bytes one token of context costs on each tensor-parallel rank.

        GQA: 2 (K and V) x layers x KV heads x head dim x dtype bytes, the heads divided among
        the ranks (a rank always keeps at least one). MLA: layers x (latent + RoPE key) x dtype
        bytes, and the latent is replicated on every rank, as vLLM does.
        """
        dtype_bytes = KV_DTYPE_BYTES[self.kv_dtype]
        if self.attention == "mla":
            return self.cache_layers * (self.kv_lora_rank + self.rope_head_dim) * dtype_bytes
        heads = -(-self.kv_heads // tensor_parallel)
        return 2 * self.cache_layers * heads * self.head_dim * dtype_bytes


class HostProfile(Frozen):
    """A kind of machine `fit` can be asked about without a live cluster."""

    name: str
    description: str = ""
    memory_gib: float = Field(gt=0)
    unified_memory: bool = False
    os_reserve_gib: float = Field(default=0.0, ge=0)
    """Memory the OS and other host processes keep, assumed when nothing is measured."""

    @property
    def memory_bytes(self) -> int:
        return round(self.memory_gib * GIB)

    @property
    def os_reserve_bytes(self) -> int:
        return round(self.os_reserve_gib * GIB)


class GpuSpec(Frozen):
    """Memory of a card model, used when NVML does not report it."""

    name: str
    memory_gib: float = Field(gt=0)
    unified_memory: bool = False


class Catalog(Frozen):
    """Models, host profiles and card specs, after merging every catalogue file."""

    default_overhead: ServingOverhead
    default_host: str
    unified_os_reserve_gib: float = Field(ge=0)
    """OS reserve on a unified-memory node whose used memory is not measured."""
    models: dict[str, ModelSpec]
    hosts: dict[str, HostProfile]
    gpus: dict[str, GpuSpec]
    sources: tuple[str, ...] = ()

    @cached_property
    def digest(self) -> str:
        """A SHA-256 of the content: what is derived with a catalogue is keyed by it, so a
        catalogue read again from the same files finds what the first one left."""
        return hashlib.sha256(self.model_dump_json(exclude={"sources"}).encode()).hexdigest()

    def model(self, name: str) -> ModelSpec:
        """The named model, or InvalidInput naming the known ones."""
        spec = self.models.get(name)
        if spec is None:
            known = ", ".join(sorted(self.models))
            raise InvalidInput(
                f"model {name!r} is not in the catalogue ({', '.join(self.sources)}); "
                f"known: {known}; add it to a file named in ${CATALOG_ENV}"
            )
        return spec

    def host(self, name: str | None = None) -> HostProfile:
        key = name or self.default_host
        host = self.hosts.get(key)
        if host is None:
            known = ", ".join(sorted(self.hosts))
            raise InvalidInput(f"host profile {key!r} is not in the catalogue; known: {known}")
        return host

    def overhead(self, spec: ModelSpec) -> ServingOverhead:
        return spec.overhead or self.default_overhead

    @property
    def unified_os_reserve_bytes(self) -> int:
        return round(self.unified_os_reserve_gib * GIB)


def _read(path: Path | str, text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        raise InvalidInput(f"{where}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: a catalogue is a mapping with models/hosts/gpus keys")
    return data


def _named(section: Any, path: Path | str, key: str) -> dict[str, dict[str, Any]]:
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise InvalidInput(f"{path}: {key} must be a mapping of name to fields")
    out: dict[str, dict[str, Any]] = {}
    for name, fields in section.items():
        if not isinstance(fields, Mapping):
            raise InvalidInput(f"{path}: {key}.{name} must be a mapping of fields")
        out[str(name)] = {"name": str(name), **fields}
    return out


def _merge(documents: Iterable[tuple[str, dict[str, Any]]]) -> Catalog:
    merged: dict[str, Any] = {"models": {}, "hosts": {}, "gpus": {}}
    sources: list[str] = []
    for source, doc in documents:
        sources.append(source)
        unknown = set(doc) - {"defaults", "models", "hosts", "gpus"}
        if unknown:
            raise InvalidInput(
                f"{source}: unknown top-level key(s) {sorted(unknown)}; "
                "expected defaults, models, hosts, gpus"
            )
        defaults = doc.get("defaults") or {}
        if not isinstance(defaults, Mapping):
            raise InvalidInput(f"{source}: defaults must be a mapping")
        merged.update(defaults)
        for key in ("models", "hosts", "gpus"):
            merged[key].update(_named(doc.get(key), source, key))
    merged["sources"] = tuple(sources)
    try:
        return Catalog.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidInput(f"catalogue ({', '.join(sources)}): {problems}") from exc


def _extra_paths(paths: Iterable[Path | str]) -> list[Path]:
    env = os.environ.get(CATALOG_ENV, "")
    from_env = [Path(p) for p in env.split(os.pathsep) if p]
    return [*from_env, *(Path(p) for p in paths)]


def load_catalog(*extra: Path | str) -> Catalog:
    """The shipped catalogue, then `$STEWARD_MODELS` files, then `extra`: later entries win."""
    shipped = resources.files("tools.placement").joinpath("models.yaml")
    documents = [("tools/placement/models.yaml", _read("models.yaml", shipped.read_text()))]
    for path in _extra_paths(extra):
        try:
            text = path.read_text()
        except OSError as exc:
            raise InvalidInput(
                f"{path}: cannot read the model catalogue ({exc.strerror}); "
                f"fix the path given by --catalog or ${CATALOG_ENV}"
            ) from exc
        documents.append((str(path), _read(path, text)))
    return _merge(documents)


_default: Catalog | None = None


def default_catalog() -> Catalog:
    """The shipped catalogue merged with `$STEWARD_MODELS`, read once per process."""
    global _default  # noqa: PLW0603 - one parsed catalogue per process
    if _default is None:
        _default = load_catalog()
    return _default
