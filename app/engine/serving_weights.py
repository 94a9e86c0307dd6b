"""Weight memory of a served model per GPU: the checkpoint format and tensor parallelism.

What a serving engine holds is not ``params x bits / 8``: quantised checkpoints quantise only the
decoder blocks' linear layers and carry scales (and zeros) beside them, while embeddings,
``lm_head``, norms, biases and MoE routers stay 16-bit (shared/reference/serving-findings.md §2).

Bits per quantised weight, each from the format's layout:

* ``fp8`` (W8A8; compressed-tensors, ModelOpt, ``--quantization fp8``): 8 bits plus fp32
  scales per tensor or per output channel (``vllm/model_executor/layers/quantization/fp8.py``),
  counted per output channel;
* ``int8`` (W8A8 INT8, compressed-tensors): 8 bits plus an fp32 scale per output channel;
* ``awq`` (int4, group 128): ``qweight`` int32 packs 8 weights, ``scales`` fp16 per group of 128,
  ``qzeros`` int32 packs 8 zeros per group: 4 + 16/128 + 4/128 = 4.15625 bits
  (``awq.py`` L159-191, v0.11.0);
* ``gptq`` (int4, group 128): as AWQ plus ``g_idx``, one int32 per input channel
  (``gptq.py``);
* ``nvfp4`` (ModelOpt): E2M1 4-bit plus one FP8 E4M3 scale per 16 weights = 4.5 bits, and an
  fp32 per-tensor ``weight_scale_2`` (negligible) (``modelopt.py`` L838-925);
* ``mxfp4`` (OCP MX; gpt-oss): E2M1 plus one E8M0 scale per 32 = 4.25 bits; gpt-oss quantises
  only its MoE experts (``mxfp4.py``), so on an MoE model only the experts take it;
* ``gguf-q4_k_m`` and ``gguf-q8_0`` (llama.cpp): the whole file's average, 4.89 and 8.50 bits
  per weight over every tensor (``ggml-org/llama.cpp`` ``tools/quantize/README.md``: Llama-3.1-8B
  Q4_K_M 4.58 GiB against 14.96 GiB F16), since llama.cpp quantises embeddings and output too.

Tensor parallelism (vLLM's ``ColumnParallelLinear``/``RowParallelLinear``,
``VocabParallelEmbedding``, ``ParallelLMHead``): linear layers and the vocabulary split over
the ranks; norms, routers (``ReplicatedLinear``) and the key/value projections beyond the
key/value heads are replicated (each rank keeps ``max(1, kv_heads // tp)`` heads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from app.engine.shapes import ModelShape

WeightFormat = Literal["bf16", "fp16", "fp8", "int8", "awq", "gptq", "nvfp4", "mxfp4",
                       "gguf-q4_k_m", "gguf-q8_0"]
WEIGHT_FORMATS: tuple[WeightFormat, ...] = ("bf16", "fp16", "fp8", "int8", "awq", "gptq",
                                            "nvfp4", "mxfp4", "gguf-q4_k_m", "gguf-q8_0")

SIXTEEN_BIT: Final = 16
GROUP_SIZE: Final = 128
"""AWQ/GPTQ quantisation group (the usual ``q_group_size``/``group_size`` 128)."""
INT4_BITS: Final = 4 + 16 / GROUP_SIZE + 4 / GROUP_SIZE
"""AWQ/GPTQ int4: weight, fp16 scale and packed 4-bit zero per group of 128 (4.15625)."""
NVFP4_BITS: Final = 4 + 8 / 16
"""NVFP4: E2M1 plus an FP8 E4M3 scale per 16 weights (4.5)."""
MXFP4_BITS: Final = 4 + 8 / 32
"""MXFP4: E2M1 plus an E8M0 scale per 32 weights (4.25)."""
GGUF_Q4_K_M_BITS: Final = 4.89
"""llama.cpp Q4_K_M, bits per weight over the whole file (tools/quantize/README.md)."""
GGUF_Q8_0_BITS: Final = 8.50
"""llama.cpp Q8_0: 8-bit weights and an fp16 scale per 32 (8.5 bits)."""
CHANNEL_SCALE_BYTES: Final = 4
"""fp32 scale per output channel (FP8/INT8 W8A8 per-channel checkpoints)."""
GIDX_BYTES: Final = 4
"""GPTQ ``g_idx``: one int32 per input channel of each quantised layer."""

QUANTISED_BITS: Final[dict[str, float]] = {
    "bf16": SIXTEEN_BIT, "fp16": SIXTEEN_BIT, "fp8": 8, "int8": 8, "awq": INT4_BITS,
    "gptq": INT4_BITS, "nvfp4": NVFP4_BITS, "mxfp4": MXFP4_BITS,
    "gguf-q4_k_m": GGUF_Q4_K_M_BITS, "gguf-q8_0": GGUF_Q8_0_BITS,
}
"""Bits per quantised weight, by format (scales included, see the module docstring)."""

GGUF_FORMATS: Final = frozenset({"gguf-q4_k_m", "gguf-q8_0"})
FOUR_BIT_FORMATS: Final = frozenset({"awq", "gptq", "nvfp4", "mxfp4", "gguf-q4_k_m"})
ROTARY_CACHE_BYTES_PER_POSITION_DIM: Final = 2
"""vLLM's rotary embedding keeps a cos/sin cache of ``max_position_embeddings x head_dim`` in the
model dtype on every rank (``RotaryEmbedding._compute_cos_sin_cache``); 32 MiB for Llama 3.1's
131,072 positions, part of the logged "Model loading took"."""


@dataclass(frozen=True, slots=True)
class WeightBytes:
    """Weights on one GPU: the quantised linear layers and the 16-bit rest."""

    quantised: int
    sixteen_bit: int

    @property
    def total(self) -> int:
        return self.quantised + self.sixteen_bit


def _kv_replication(shape: ModelShape, tp: int) -> float:
    """How many times larger a rank's key/value projection is than an even split: heads are
    replicated when the tensor-parallel degree exceeds the key/value heads."""
    per_gpu = max(1, shape.num_kv_heads // tp)
    return per_gpu * tp / shape.num_kv_heads


def weight_bytes(shape: ModelShape, fmt: WeightFormat, tp: int) -> WeightBytes:
    """The weights one of ``tp`` ranks holds in this format."""
    bits = QUANTISED_BITS[fmt]
    if fmt in GGUF_FORMATS:  # llama.cpp's bits per weight already average every tensor
        return WeightBytes(quantised=int(shape.total_params * bits / 8 / tp), sixteen_bit=0)
    experts_only = fmt == "mxfp4" and shape.is_moe
    quantised = 0.0
    kept = 0.0
    for spec in shape.linears:
        params = spec.in_features * spec.out_features * spec.copies * spec.layers
        share = params / tp
        if spec.role in ("k", "v"):
            share *= _kv_replication(shape, tp)
        if spec.role == "qkv" and shape.num_kv_heads < tp:
            kv_part = 2 * shape.kv_width / (shape.q_width + 2 * shape.kv_width)
            share *= 1 + kv_part * (_kv_replication(shape, tp) - 1)
        if spec.role == "router" or (experts_only and spec.copies == 1):
            kept += share * 2
            continue
        quantised += share * bits / 8
        rows = spec.out_features * spec.copies * spec.layers / tp
        if fmt in ("fp8", "int8"):
            quantised += rows * CHANNEL_SCALE_BYTES
        if fmt == "gptq":
            quantised += spec.in_features * spec.copies * spec.layers * GIDX_BYTES / tp
    vocab = (shape.split.embedding + shape.split.lm_head) / tp
    rotary = (shape.max_positions or 0) * shape.head_dim * ROTARY_CACHE_BYTES_PER_POSITION_DIM
    tower = shape.tower_params / tp  # a multimodal checkpoint's vision tower, 16-bit
    kept += (vocab + shape.split.norm + shape.split.other / tp + tower) * 2 + rotary
    return WeightBytes(quantised=int(quantised), sixteen_bit=int(kept))


def active_weight_bytes(shape: ModelShape, fmt: WeightFormat, tp: int, batch: int, *,
                        total: int | None = None) -> int:
    """Weight bytes one decode step reads on one GPU at ``batch`` requests: every dense weight,
    and of the experts the share the batch touches. With ``k`` of ``E`` experts per token
    routed evenly, a batch of ``B`` tokens leaves an expert untouched with probability
    ``(1 - k/E)^B``. ``total``: :func:`weight_bytes`'s total, when the caller has it."""
    if total is None:
        total = weight_bytes(shape, fmt, tp).total
    if not shape.is_moe:
        return total
    expert_share = 0.0
    for spec in shape.linears:
        if spec.copies > 1:
            expert_share += spec.in_features * spec.out_features * spec.copies * spec.layers
    expert_fraction = expert_share / shape.total_params
    touched = 1 - (1 - shape.experts_per_token / shape.num_experts) ** batch
    return int(total * (1 - expert_fraction * (1 - touched)))


def published_format(config: Mapping[str, Any]) -> WeightFormat | None:
    """The format a checkpoint is published in, read from its config.json's
    ``quantization_config`` (a multimodal config's ``text_config`` too), as transformers and
    vLLM read it; None when it names none we size exactly, and the model is then served in 16
    bits.

    * ``quant_method: mxfp4``: gpt-oss (``transformers/quantizers/quantizer_mxfp4.py``);
    * ``quant_method: fp8``: DeepSeek-V3/R1, Kimi K2, MiniMax-M2 (block-wise FP8, e4m3);
    * ``quant_method: awq`` / ``gptq`` at 4 bits, group 128 (AutoAWQ's and AutoGPTQ's default);
    * ``quant_method: modelopt`` with ``quant_algo`` FP8 or NVFP4 (NVIDIA's ModelOpt exports),
      or ModelOpt's own ``hf_quant_config.json`` (``producer.name: modelopt`` and the algorithm
      under ``quantization``), which vLLM takes as the ``quantization_config`` when config.json
      has none (``vllm/transformers_utils/config.py``: "ModelOpt 0.29.0 and before saves the
      quantization config in a separate hf_quant_config.json"; ``_parse_quant_hf_config``
      then sets ``quant_method`` modelopt);
    * ``quant_method: compressed-tensors`` with one weight scheme: 8-bit float (FP8), 8-bit int
      with 8-bit activations (W8A8 INT8) or 4-bit float (NVFP4). Its 4-bit integer schemes at
      another group size (Kimi K2.5's group 32) are none of our formats and are left out.
    """
    quant = config.get("quantization_config")
    text = config.get("text_config")
    if not isinstance(quant, Mapping) and isinstance(text, Mapping):
        quant = text.get("quantization_config")
    if not isinstance(quant, Mapping):
        return None
    method = str(quant.get("quant_method", "")).lower()
    producer, modelopt = quant.get("producer"), quant.get("quantization")
    if not method and isinstance(producer, Mapping) and isinstance(modelopt, Mapping) \
            and producer.get("name") == "modelopt":
        method, quant = "modelopt", modelopt
    if method in ("mxfp4", "fp8"):
        return cast(WeightFormat, method)
    if method in ("awq", "gptq"):
        bits = quant.get("bits", quant.get("w_bit", 4))
        group = quant.get("group_size", quant.get("q_group_size", GROUP_SIZE))
        return cast(WeightFormat, method) if (bits, group) == (4, GROUP_SIZE) else None
    if method == "modelopt":
        algo = str(quant.get("quant_algo", "")).upper()
        return {"FP8": "fp8", "NVFP4": "nvfp4"}.get(algo)  # type: ignore[return-value]
    if method == "compressed-tensors":
        return _compressed_tensors_format(quant)
    return None


def _compressed_tensors_format(quant: Mapping[str, Any]) -> WeightFormat | None:
    groups = quant.get("config_groups")
    if not isinstance(groups, Mapping) or len(groups) != 1:
        return None
    scheme = next(iter(groups.values()))
    weights = scheme.get("weights") if isinstance(scheme, Mapping) else None
    if not isinstance(weights, Mapping):
        return None
    kind, bits = weights.get("type"), weights.get("num_bits")
    if kind == "float" and bits == 8:
        return "fp8"
    if kind == "float" and bits == 4:
        return "nvfp4"
    if kind == "int" and bits == 8 and isinstance(scheme.get("input_activations"), Mapping):
        return "int8"
    return None


def sixteen_bit_format(config: Mapping[str, Any]) -> WeightFormat:
    """The 16-bit format a checkpoint without a quantised format is served in: fp16 when its
    config says float16 (``torch_dtype``, or ``dtype`` in transformers 5), bf16 otherwise."""
    dtype = config.get("torch_dtype", config.get("dtype"))
    return "fp16" if dtype == "float16" else "bf16"
