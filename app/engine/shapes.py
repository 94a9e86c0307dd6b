"""Model shapes from a Hugging Face ``config.json``: exact parameter counts and their split.

Why exact: public calculators miscount parameters (grouped-query attention, tied embeddings,
explicit ``head_dim``, mixtures of experts) and every later figure inherits the error. Each
builder (:mod:`app.engine.architectures`, one module per family) mirrors the module tree that
``transformers`` builds for that ``model_type``, so
the totals equal ``sum(p.numel() for p in model.parameters())`` with tied weights counted once
(verified against transformers 5.24 on the meta device; see ``app/catalog/seed/models.json``).

The split matters downstream:

* ``linear``: the weight matrices of the decoder blocks' linear layers (``nn.Linear`` or GPT-2's
  ``Conv1D``). These are what bitsandbytes stores in NF4 under QLoRA and what PEFT's
  ``target_modules="all-linear"`` adapts (PEFT never adapts ``lm_head``).
* ``embedding``: token embeddings, plus GPT-2's learned position embeddings.
* ``lm_head``: the output projection; 0 when it is tied to the embedding.
* ``norm``: every normalisation weight (and LayerNorm bias), including Qwen3's q/k norms.
* ``other``: biases of linear layers (bitsandbytes keeps them in 16 bit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.engine.errors import EngineError

LinearRole = Literal[
    "q", "k", "v", "o", "qkv", "attn_out", "gate", "up", "down", "gate_up", "fc", "fc_out",
    "router", "lm_head", "per_layer",
]
"""What a block linear layer does; LoRA target presets select by role (``lm_head``: the output
projection, a LoRA target only when named, see ``states.lm_head_spec``; ``per_layer``: Gemma 4's
per-layer-embedding gates and projections, neither attention nor MLP, adapted by "all-linear")."""

ATTENTION_ROLES: frozenset[str] = frozenset({"q", "k", "v", "o", "qkv", "attn_out"})
MLP_ROLES: frozenset[str] = frozenset({"gate", "up", "down", "gate_up", "fc", "fc_out"})


class ShapeError(EngineError):
    """A config the engine cannot turn into a shape; ``field`` names the config field."""


@dataclass(frozen=True, slots=True)
class LinearSpec:
    """One kind of linear layer in the decoder blocks.

    ``layers`` is how many decoder layers have it, ``copies`` how many instances each such
    layer holds (the experts of a mixture-of-experts layer), ``active_copies`` how many of them
    one token passes through.
    """

    name: str
    role: LinearRole
    in_features: int
    out_features: int
    layers: int
    copies: int = 1
    active_copies: int = 1
    bias: bool = False
    # What PEFT's "all-linear" builds for this kind under transformers 5 (tools/model_counts.py):
    # ``lora_target`` False where it adapts none (a router that became a parameter, a shared
    # expert whose leaf names PEFT remaps onto the fused experts), ``lora_rank_factor`` 2 for a
    # fused gate_up expert tensor, which PEFT adapts per expert at rank 2r.
    lora_target: bool = True
    lora_rank_factor: int = 1
    # Whether transformers 5's ``load_in_4bit`` stores this kind in NF4: its bitsandbytes
    # integration (``replace_with_bnb_linear``) swaps only modules whose type is exactly
    # ``nn.Linear`` (or GPT-2's ``Conv1D``) for ``Linear4bit``; fused 3-D expert tensors and
    # routers held as ``nn.Parameter`` (or an ``nn.Linear`` subclass, Llama 4's router) stay in
    # the checkpoint's dtype. Measured with bitsandbytes 0.50.2 on eight MoE types:
    # tools/moe_qlora_layout.py, tests/fixtures/moe_qlora_layout.json.
    packed_4bit: bool = True

    @property
    def weight_params(self) -> int:
        return self.in_features * self.out_features * self.copies * self.layers

    @property
    def bias_params(self) -> int:
        return self.out_features * self.copies * self.layers if self.bias else 0

    @property
    def instances(self) -> int:
        """Separate modules of this kind in the whole model (what LoRA wraps one by one)."""
        return self.copies * self.layers


@dataclass(frozen=True, slots=True)
class ParamSplit:
    """Parameter counts by storage class; they sum to the model's total."""

    linear: int
    embedding: int
    lm_head: int
    norm: int
    other: int

    @property
    def total(self) -> int:
        return self.linear + self.embedding + self.lm_head + self.norm + self.other


@dataclass(frozen=True, slots=True)
class Approximation:
    """Why a shape is approximate, and which config fields it was counted from
    (``app/engine/architectures/approximate.py``): ``model_type`` as the config gave it (cut short),
    ``fields`` as dotted paths (``text_config.hidden_size`` when read from a nested config)."""

    model_type: str
    fields: tuple[str, ...]
    # Parts it knows are there but could not count (approximate.MISSING_*): "tower", "experts",
    # "tie" (whether lm_head is tied, not said).
    missing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MixerLayers:
    """A hybrid model's token mixers that are not softmax attention (architectures/hybrid.py),
    with the widths their activations depend on (activations_hybrid.py).

    ``kind``: Gated DeltaNet (Qwen3-Next, Qwen3.5) or Mamba-2 (Nemotron-H). ``layers`` have
    this mixer, ``attention_layers`` softmax attention, ``mlp_layers`` an MLP or experts (every
    layer in Qwen's hybrids; Nemotron-H's blocks hold one of the four each). Widths: the
    key/query width before (``key_dim``) and after (``expanded_key_dim``) the value heads'
    grouping, the value (Mamba: inner) width, the heads, each head's state
    (``state_per_head``: key x value head dims, Mamba head dim x state size)."""

    kind: Literal["gated_deltanet", "mamba2"]
    layers: int
    attention_layers: int
    mlp_layers: int
    key_dim: int
    expanded_key_dim: int
    value_dim: int
    heads: int
    state_per_head: int
    conv_dim: int
    # Mamba-2's chunk length in tokens (``chunk_size``, ``mamba_chunk_size``): transformers'
    # PyTorch path keeps a chunk x chunk matrix per head and chunk (activations_hybrid.py).
    # 0 for Gated DeltaNet, whose chunks are 64 tokens in transformers' code.
    chunk_size: int = 0
    # Whether the Mamba-2 mixer gates its output through an RMSNorm (Falcon-H1's
    # ``mamba_rms_norm``; always in Nemotron-H and Granite 4.0 H).
    gated_norm: bool = True


@dataclass(frozen=True, slots=True)
class ModelShape:
    """Everything the engine needs to know about a model's architecture."""

    model_type: str
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_positions: int | None
    tied_embeddings: bool
    linears: tuple[LinearSpec, ...]
    split: ParamSplit
    num_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    norms_per_layer: int = 2
    qk_norm: bool = False
    gated_mlp: bool = True
    # Gemma 2's tanh soft-capping of attention scores and of the final logits.
    attention_softcap: bool = False
    final_logit_softcap: bool = False
    # Kinds of causal mask the model builds (Gemma 2/3: full and sliding-window).
    mask_kinds: int = 1
    # Set when the shape is an approximation of a model type no builder knows
    # (architectures/approximate.py).
    approximation: Approximation | None = None
    # A multimodal checkpoint's vision/audio tower and projector: loaded beside the language
    # model, frozen, never adapted (app/engine/architectures/multimodal.py); not in ``split``.
    tower_params: int = 0
    # Of tower_params, an audio encoder and its embedder (Gemma 4 E2B, E4B), named on the page.
    audio_tower_params: int = 0
    # Parameters transformers keeps in fp32 whatever dtype the model is loaded in (MoE routers
    # it creates as float32 and names in ``_keep_in_fp32_modules_strict``; registry.py): of
    # ``split``, held at 4 bytes in a frozen 16-bit base (states.base_weight_bytes).
    fp32_params: int = 0
    # Hybrid models' linear-attention or Mamba layers (architectures/hybrid.py).
    mixer: MixerLayers | None = None
    # Multi-head latent attention's RMSNorms on its compressed q and kv (q_lora_rank +
    # kv_lora_rank per layer; architectures/deepseek.py): their activations (activations.py).
    latent_norm_width: int = 0
    # Learned attention sinks concatenated to the scores (gpt-oss; activations.eager_score_bytes).
    attention_sinks: bool = False

    @property
    def total_params(self) -> int:
        return self.split.total

    @property
    def active_params(self) -> int:
        """Parameters one token passes through: all experts but the active ones left out."""
        inactive = sum(
            (spec.copies - spec.active_copies) * spec.layers
            * (spec.in_features * spec.out_features + (spec.out_features if spec.bias else 0))
            for spec in self.linears
        )
        return self.total_params - inactive

    @property
    def kv_width(self) -> int:
        """Width of one token's key (or value) projection: kv heads x head_dim."""
        return self.num_kv_heads * self.head_dim

    @property
    def q_width(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def largest_layer_params(self) -> int:
        """Parameters of one decoder layer: what ZeRO-3/FSDP gathers at once.

        A layer is taken to hold every kind of linear layer the model has; for a Qwen3-MoE
        with some dense layers that counts the dense MLP too, an overestimate of a few percent.
        """
        linear = sum(
            spec.copies * spec.in_features * spec.out_features
            + (spec.copies * spec.out_features if spec.bias else 0)
            for spec in self.linears
        )
        return linear + self.split.norm // max(self.num_layers, 1)
