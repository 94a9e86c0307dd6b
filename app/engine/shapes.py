"""Model shapes from a Hugging Face ``config.json``: exact parameter counts and their split.

Why exact: public calculators miscount parameters (grouped-query attention, tied embeddings,
explicit ``head_dim``, mixtures of experts) and every later figure inherits the error. Each
builder here mirrors the module tree that ``transformers`` builds for that ``model_type``, so
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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Final, Literal

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
    (``app/engine/approximate.py``): ``model_type`` as the config gave it (cut short),
    ``fields`` as dotted paths (``text_config.hidden_size`` when read from a nested config)."""

    model_type: str
    fields: tuple[str, ...]
    # Parts it knows are there but could not count (approximate.MISSING_*): "tower", "experts",
    # "tie" (whether lm_head is tied, not said).
    missing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MixerLayers:
    """A hybrid model's token mixers that are not softmax attention (arch_hybrid.py), with the
    widths their activations depend on (activations_hybrid.py).

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
    # Set when the shape is an approximation of a model type no builder knows (approximate.py).
    approximation: Approximation | None = None
    # A multimodal checkpoint's vision/audio tower and projector: loaded beside the language
    # model, frozen, never adapted (app/engine/arch_multimodal.py); not in ``split``.
    tower_params: int = 0
    # Of tower_params, an audio encoder and its embedder (Gemma 4 E2B, E4B), named on the page.
    audio_tower_params: int = 0
    # Hybrid models' linear-attention or Mamba layers (arch_hybrid.py).
    mixer: MixerLayers | None = None
    # Multi-head latent attention's RMSNorms on its compressed q and kv (q_lora_rank +
    # kv_lora_rank per layer; arch_moe.py): their activations (activations.py).
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


MAX_LAYERS: Final = 1024
"""Decoder layers. Largest released: 126 (Llama 3.1 405B); GPT-3 175B had 96."""
MAX_HIDDEN_SIZE: Final = 65_536
"""Model width. Largest released: 16,384 (Llama 3.1 405B); GPT-3 175B: 12,288."""
MAX_INTERMEDIATE_SIZE: Final = 262_144
"""MLP or expert width. Largest released: 53,248 (Llama 3.1 405B)."""
MAX_VOCAB_SIZE: Final = 2_097_152
"""Vocabulary. Largest released: 262,144 (Gemma 3); Kimi K2: 163,840."""
MAX_HEADS: Final = 1024
"""Attention (and key/value) heads. Largest released: 128 (Llama 3.1 405B, DeepSeek-V3)."""
MAX_HEAD_DIM: Final = 2048
"""Width of one head. Largest released: 256 (Gemma 2/3); DeepSeek-V3's MLA: 192."""
MAX_EXPERTS: Final = 4096
"""Experts per MoE layer. Largest released: 512 (Qwen3-Next); Kimi K2: 384."""
MAX_POSITIONS: Final = 2**27
"""Context positions (134M). Largest released: 10,485,760 (Llama 4 Scout)."""
MAX_CONV_KERNEL: Final = 64
"""Depthwise convolution width of Mamba-2 and Gated DeltaNet layers. Released: 4."""
MAX_STATE_SIZE: Final = 4096
"""Mamba-2 state per head (``ssm_state_size``). Released: 128 (Nemotron-H)."""
MAX_IMAGE_SIZE: Final = 16_384
"""Vision tower image side and patch, in pixels. Released: 1540 (Pixtral), patches 14-16."""
MAX_SMALL_FACTOR: Final = 64
"""Small integer factors: channels, merge sizes, temporal patches, norms per parallel block."""
MAX_COMPRESS_RATE: Final = 4096
"""Tokens compressed into one KV entry (DeepSeek-V4's ``compress_rates``). Released: 4, 128."""

FIELD_BOUNDS: Final[Mapping[str, int]] = {
    "num_hidden_layers": MAX_LAYERS, "n_layer": MAX_LAYERS,
    "hidden_size": MAX_HIDDEN_SIZE, "n_embd": MAX_HIDDEN_SIZE,
    "intermediate_size": MAX_INTERMEDIATE_SIZE, "moe_intermediate_size": MAX_INTERMEDIATE_SIZE,
    "n_inner": MAX_INTERMEDIATE_SIZE,
    "vocab_size": MAX_VOCAB_SIZE,
    "num_attention_heads": MAX_HEADS, "n_head": MAX_HEADS, "num_key_value_heads": MAX_HEADS,
    "head_dim": MAX_HEAD_DIM,
    "num_experts": MAX_EXPERTS, "num_local_experts": MAX_EXPERTS,
    "num_experts_per_tok": MAX_EXPERTS,
    "decoder_sparse_step": MAX_LAYERS,
    "max_position_embeddings": MAX_POSITIONS, "n_positions": MAX_POSITIONS,
    # Hybrid, multimodal and older dense models (arch_hybrid.py, arch_multimodal.py,
    # arch_dense.py).
    "full_attention_interval": MAX_LAYERS, "linear_num_key_heads": MAX_HEADS,
    "linear_num_value_heads": MAX_HEADS, "linear_key_head_dim": MAX_HEAD_DIM,
    "linear_value_head_dim": MAX_HEAD_DIM, "linear_conv_kernel_dim": MAX_CONV_KERNEL,
    "shared_expert_intermediate_size": MAX_INTERMEDIATE_SIZE,
    "mamba_num_heads": MAX_HEADS, "mamba_head_dim": MAX_HEAD_DIM, "n_groups": MAX_HEADS,
    "ssm_state_size": MAX_STATE_SIZE, "conv_kernel": MAX_CONV_KERNEL,
    "n_routed_experts": MAX_EXPERTS, "moe_shared_expert_intermediate_size": MAX_INTERMEDIATE_SIZE,
    "moe_latent_size": MAX_HIDDEN_SIZE, "num_kv_heads": MAX_HEADS,
    "ffn_hidden_size": MAX_INTERMEDIATE_SIZE, "num_ln_in_parallel_attn": MAX_SMALL_FACTOR,
    "depth": MAX_LAYERS, "num_position_embeddings": MAX_POSITIONS,
    "out_hidden_size": MAX_HIDDEN_SIZE, "patch_size": MAX_IMAGE_SIZE,
    "image_size": MAX_IMAGE_SIZE, "num_channels": MAX_SMALL_FACTOR,
    "in_channels": MAX_SMALL_FACTOR, "spatial_merge_size": MAX_SMALL_FACTOR,
    "temporal_patch_size": MAX_SMALL_FACTOR,
    # arch_moe.py: experts, MLA ranks and head widths, layer schedules.
    "n_shared_experts": MAX_EXPERTS,
    "first_k_dense_replace": MAX_LAYERS, "interleave_moe_layer_step": MAX_LAYERS,
    "intermediate_size_mlp": MAX_INTERMEDIATE_SIZE,
    "q_lora_rank": MAX_HIDDEN_SIZE, "kv_lora_rank": MAX_HIDDEN_SIZE,
    "qk_rope_head_dim": MAX_HEAD_DIM, "qk_nope_head_dim": MAX_HEAD_DIM, "v_head_dim": MAX_HEAD_DIM,
    "index_n_heads": MAX_HEADS, "index_head_dim": MAX_HEAD_DIM,
    "index_topk_freq": MAX_LAYERS, "index_skip_topk_offset": MAX_LAYERS,
    "vision_output_dim": MAX_HIDDEN_SIZE, "projector_input_dim": MAX_HIDDEN_SIZE,
    "projector_output_dim": MAX_HIDDEN_SIZE, "vt_hidden_size": MAX_HIDDEN_SIZE,
    "vt_intermediate_size": MAX_INTERMEDIATE_SIZE, "vt_num_hidden_layers": MAX_LAYERS,
    "init_pos_emb_height": MAX_IMAGE_SIZE, "init_pos_emb_width": MAX_IMAGE_SIZE,
    "pos_emb_height": MAX_IMAGE_SIZE, "pos_emb_width": MAX_IMAGE_SIZE,
    "mm_hidden_size": MAX_HIDDEN_SIZE,
    # arch_gemma4.py: the second attention width, per-layer embeddings, KV sharing, towers.
    "global_head_dim": MAX_HEAD_DIM, "num_global_key_value_heads": MAX_HEADS,
    "num_kv_shared_layers": MAX_LAYERS, "hidden_size_per_layer_input": MAX_HIDDEN_SIZE,
    "vocab_size_per_layer_input": MAX_VOCAB_SIZE, "top_k_experts": MAX_EXPERTS,
    "position_embedding_size": MAX_POSITIONS, "conv_kernel_size": MAX_CONV_KERNEL,
    "output_proj_dims": MAX_HIDDEN_SIZE,
    # arch_moe.py (MiMo-V2-Flash), arch_deepseek_v4.py: grouped output, hyper-connections,
    # compression rates.
    "block_ff_dim": MAX_INTERMEDIATE_SIZE, "block_multiple_of": MAX_INTERMEDIATE_SIZE,
    "conv_L_cache": MAX_CONV_KERNEL,
    "o_groups": MAX_HEADS, "o_lora_rank": MAX_HIDDEN_SIZE, "hc_mult": MAX_SMALL_FACTOR,
    "compress_rate_csa": MAX_COMPRESS_RATE, "compress_rate_hca": MAX_COMPRESS_RATE,
    "compress_rates.compressed_sparse_attention": MAX_COMPRESS_RATE,
    "compress_rates.heavily_compressed_attention": MAX_COMPRESS_RATE,
}
"""Upper bound of every integer architecture field the engine reads.

Why: a config.json is a stranger's document, and nothing the engine does may cost more because
a value in it is large (a qwen3_moe config with 10^8 layers once held a worker for 41 s). The
bounds sit 4-16x above the largest released model, so no real config is refused, and they keep
every product of them (parameter counts, bytes) a modest integer. A value above its bound is
refused with the field named; ``tests/engine/test_config_bounds.py`` holds every builder to
them and checks that an estimate's work does not grow with any of them."""


class _Config:
    """Typed access to config fields with errors that name the field."""

    def __init__(self, raw: Mapping[str, object]) -> None:
        self.raw = raw

    def integer(self, *names: str, default: int | None = None) -> int:
        for name in names:
            value = self.raw.get(name)
            if value is None:
                continue
            return _bounded(name, value)
        if default is not None:
            return default
        raise ShapeError(names[0], "config_missing")

    def count(self, name: str) -> int:
        """A number of things that may be none: 0 when absent, null or 0, else bounded as
        :meth:`integer` bounds it (Gemma 4's ``num_kv_shared_layers``, and its
        ``hidden_size_per_layer_input``, 0 where a model has no per-layer embeddings)."""
        value = self.raw.get(name)
        if value is None or (value == 0 and not isinstance(value, bool)):
            return 0
        return _bounded(name, value)

    def optional_int(self, name: str) -> int | None:
        value = self.raw.get(name)
        if value is None:
            return None
        return _bounded(name, value)

    def is_set(self, name: str, default: object = None) -> bool:
        """Whether an optional numeric setting is switched on (present, not null, not 0)."""
        value = self.raw.get(name, default)
        if value is None or value is False:
            return False
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ShapeError(name, "positive_or_null", value=repr(value))
        return value > 0

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ShapeError(name, "true_or_false", value=repr(value))
        return value

    def layer_list(self, name: str, layers: int) -> frozenset[int]:
        """A list of layer indices (0 to ``layers`` - 1), each at most once.

        Its length is therefore bounded by :data:`MAX_LAYERS`, whatever the document holds."""
        value = self.raw.get(name)
        if value is None:
            return frozenset()
        if not isinstance(value, list) or len(value) > layers:
            raise ShapeError(name, "layer_list_length", layers=layers)
        indices = frozenset(v for v in value if isinstance(v, int) and not isinstance(v, bool))
        if len(indices) != len(value) or not all(0 <= i < layers for i in indices):
            raise ShapeError(name, "layer_indices", last=layers - 1)
        return indices


def _bounded(name: str, value: object) -> int:
    """A positive integer no larger than the field's bound in :data:`FIELD_BOUNDS`."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ShapeError(name, "positive_integer", value=repr(value))
    bound = FIELD_BOUNDS.get(name)
    if bound is None:  # a field the engine reads must have a bound: a programming error
        raise AssertionError(f"no upper bound for config field {name!r}")
    if value > bound:
        raise ShapeError(name, "above_bound", bound=bound, value=value)
    return value


def _experts_per_token(cfg: _Config, experts: int, experts_field: str) -> int:
    """``num_experts_per_tok``, which cannot exceed the experts there are."""
    active = cfg.integer("num_experts_per_tok")
    if active > experts:
        raise ShapeError("num_experts_per_tok", "too_many_active_experts", active=active,
                         experts=experts, experts_field=experts_field)
    return active


def sparse_layer_count(layers: int, step: int, dense_only: frozenset[int]) -> int:
    """Layers that hold experts, in closed form (no loop over the layer count).

    ``Qwen3MoeDecoderLayer`` makes layer ``i`` sparse when ``(i + 1) % step == 0`` and ``i`` is
    not in ``mlp_only_layers``: that is every step-th layer, ``layers // step`` of them, less the
    listed ones among them. The list is at most ``layers`` long (:meth:`_Config.layer_list`)."""
    return layers // step - sum(1 for i in dense_only if (i + 1) % step == 0)


@dataclass(frozen=True, slots=True)
class _Attention:
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int


def _attention_dims(cfg: _Config) -> _Attention:
    hidden = cfg.integer("hidden_size")
    heads = cfg.integer("num_attention_heads")
    kv_heads = cfg.integer("num_key_value_heads", default=heads)
    explicit = cfg.optional_int("head_dim")
    if explicit is None:
        if hidden % heads:
            raise ShapeError("head_dim", "head_dim_indivisible")
        explicit = hidden // heads
    if heads % kv_heads:
        raise ShapeError("num_key_value_heads", "kv_heads_divide")
    return _Attention(hidden, heads, kv_heads, explicit)


def _separate_attention(
    att: _Attention, layers: int, *, qkv_bias: bool, o_bias: bool
) -> list[LinearSpec]:
    q_width = att.heads * att.head_dim
    kv_width = att.kv_heads * att.head_dim
    return [
        LinearSpec("q_proj", "q", att.hidden, q_width, layers, bias=qkv_bias),
        LinearSpec("k_proj", "k", att.hidden, kv_width, layers, bias=qkv_bias),
        LinearSpec("v_proj", "v", att.hidden, kv_width, layers, bias=qkv_bias),
        LinearSpec("o_proj", "o", q_width, att.hidden, layers, bias=o_bias),
    ]


def _gated_mlp(
    hidden: int, intermediate: int, layers: int, *, bias: bool = False,
    names: tuple[str, str, str] = ("gate_proj", "up_proj", "down_proj"),
    copies: int = 1, active: int = 1,
) -> list[LinearSpec]:
    gate, up, down = names
    return [
        LinearSpec(gate, "gate", hidden, intermediate, layers, copies, active, bias),
        LinearSpec(up, "up", hidden, intermediate, layers, copies, active, bias),
        LinearSpec(down, "down", intermediate, hidden, layers, copies, active, bias),
    ]


def _assemble(
    cfg: _Config,
    *,
    model_type: str,
    att: _Attention,
    intermediate: int,
    layers: int,
    linears: list[LinearSpec],
    norm_params: int,
    norms_per_layer: int,
    tied: bool,
    extra_embedding: int = 0,
    qk_norm: bool = False,
    num_experts: int = 0,
    experts_per_token: int = 0,
    moe_intermediate: int = 0,
    gated_mlp: bool = True,
    max_positions: int | None = None,
    attention_softcap: bool = False,
    final_logit_softcap: bool = False,
    mask_kinds: int = 1,
) -> ModelShape:
    vocab = cfg.integer("vocab_size")
    embedding = vocab * att.hidden + extra_embedding
    split = ParamSplit(
        linear=sum(spec.weight_params for spec in linears),
        embedding=embedding,
        lm_head=0 if tied else vocab * att.hidden,
        norm=norm_params,
        other=sum(spec.bias_params for spec in linears),
    )
    return ModelShape(
        model_type=model_type,
        hidden_size=att.hidden,
        intermediate_size=intermediate,
        num_layers=layers,
        num_heads=att.heads,
        num_kv_heads=att.kv_heads,
        head_dim=att.head_dim,
        vocab_size=vocab,
        max_positions=max_positions
        if max_positions is not None
        else cfg.optional_int("max_position_embeddings"),
        tied_embeddings=tied,
        linears=tuple(linears),
        split=split,
        num_experts=num_experts,
        experts_per_token=experts_per_token,
        moe_intermediate_size=moe_intermediate,
        norms_per_layer=norms_per_layer,
        qk_norm=qk_norm,
        gated_mlp=gated_mlp,
        attention_softcap=attention_softcap,
        final_logit_softcap=final_logit_softcap,
        mask_kinds=mask_kinds,
    )


Biases = tuple[bool, bool, bool]
"""Whether q/k/v, o and the MLP's linears carry a bias, as a dense builder reads them."""


def _dense_swiglu(cfg: _Config, model_type: str, *, biases: Callable[[_Config], Biases],
                  qk_norm: bool = False, tied_default: bool = False) -> ModelShape:
    """The Llama layout the dense Llama, Mistral, Qwen2 and Qwen3 share: RMSNorm before
    attention and MLP (and one final), separate q/k/v/o, SwiGLU.

    The models differ only in which linears carry a bias (``biases`` reads the config's flags,
    after the sizes, as the builders always read them) and in Qwen3's RMSNorm on q and k per
    head (``qk_norm``: ``head_dim`` weights each, two per layer). ``tied_default``: what the
    config class assumes when ``tie_word_embeddings`` is left out (``SmolLM3Config``: True)."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    qkv_bias, o_bias, mlp_bias = biases(cfg)
    linears = _separate_attention(att, layers, qkv_bias=qkv_bias, o_bias=o_bias)
    linears += _gated_mlp(att.hidden, intermediate, layers, bias=mlp_bias)
    norms = (2 * layers + 1) * att.hidden + (2 * layers * att.head_dim if qk_norm else 0)
    return _assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=2, qk_norm=qk_norm,
        tied=cfg.flag("tie_word_embeddings", tied_default),
    )


def _llama_biases(cfg: _Config) -> Biases:
    """Llama and Mistral: ``attention_bias`` on q, k, v and o; ``mlp_bias`` on the MLP."""
    attention_bias = cfg.flag("attention_bias", False)
    return attention_bias, attention_bias, cfg.flag("mlp_bias", False)


def _qwen2_biases(_cfg: _Config) -> Biases:
    """Qwen2 / Qwen2.5: always on q, k and v, never on o or the MLP (no config flag)."""
    return True, False, False


def _qwen3_biases(cfg: _Config) -> Biases:
    """Qwen3 dense: ``attention_bias`` on q, k, v and o; the MLP has none (no flag read)."""
    attention_bias = cfg.flag("attention_bias", False)
    return attention_bias, attention_bias, False


def _no_biases(_cfg: _Config) -> Biases:
    """Ministral 3: no biases anywhere (``Ministral3Attention``/``Ministral3MLP``, no flag)."""
    return False, False, False


def fused_experts(
    hidden: int, width: int, layers: int, experts: int, active: int, *,
    peft_fused: bool = True, router_target: bool = True, bias: bool = False,
) -> list[LinearSpec]:
    """Router and experts of ``layers`` sparse layers as transformers 5 builds them: the
    router (hidden -> experts) and two fused 3-D tensors, ``gate_up_proj`` (hidden -> 2 x
    width) and ``down_proj``, ``experts`` deep. ``peft_fused``: PEFT 0.21 adapts the tensors
    (its conversion table knows the model type; app/engine/arch_moe.py), the gate/up one at
    rank 2r; ``router_target``: it adapts the router. All three are parameters, not
    ``nn.Linear``: ``load_in_4bit`` leaves them 16-bit (``LinearSpec.packed_4bit``)."""
    if not layers:
        return []
    return [
        LinearSpec("gate", "router", hidden, experts, layers, bias=bias,
                   lora_target=router_target, packed_4bit=False),
        LinearSpec("gate_up_proj", "gate_up", hidden, 2 * width, layers, experts, active, bias,
                   lora_target=peft_fused, lora_rank_factor=2, packed_4bit=False),
        LinearSpec("down_proj", "down", width, hidden, layers, experts, active, bias,
                   lora_target=peft_fused, packed_4bit=False),
    ]


def _qwen3_moe(cfg: _Config, model_type: str = "qwen3_moe", *,
               peft_fused: bool = True) -> ModelShape:
    """Qwen3-MoE: Qwen3 attention; sparse layers hold a router and ``num_experts`` SwiGLU experts.

    A layer is sparse unless listed in ``mlp_only_layers`` or skipped by
    ``decoder_sparse_step`` (as ``Qwen3MoeDecoderLayer`` decides); dense layers use
    ``intermediate_size``. ``peft_fused`` False: PEFT's conversion table does not know the
    model type (Qwen3-VL-MoE's text model), so it adapts neither the fused experts nor the
    router parameter, and the dense layers' ``nn.Linear`` MLPs as any others.
    """
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    experts = cfg.integer("num_experts")
    active = _experts_per_token(cfg, experts, "num_experts")
    moe_intermediate = cfg.integer("moe_intermediate_size")
    step = cfg.integer("decoder_sparse_step", default=1)
    sparse = sparse_layer_count(layers, step, cfg.layer_list("mlp_only_layers", layers))
    dense = layers - sparse
    attention_bias = cfg.flag("attention_bias", False)
    linears = _separate_attention(att, layers, qkv_bias=attention_bias, o_bias=attention_bias)
    linears += fused_experts(att.hidden, moe_intermediate, sparse, experts, active,
                             peft_fused=peft_fused, router_target=peft_fused)
    if dense:  # PEFT 0.21 remaps gate_proj/up_proj/down_proj onto the experts: not adapted
        linears += [replace(spec, lora_target=not peft_fused)
                    for spec in _gated_mlp(att.hidden, intermediate, dense)]
    norms = (2 * layers + 1) * att.hidden + 2 * layers * att.head_dim
    return _assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=2, qk_norm=True,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=moe_intermediate,
    )


def _mixtral(cfg: _Config) -> ModelShape:
    """Mixtral: Llama attention; every layer a router and ``num_local_experts`` experts (w1/w3
    fused as gate_up_proj, w2 as down_proj in transformers 5; the same parameter count as one
    linear layer per expert, states.MOE_LORAS for what LoRA adapts).
    """
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    experts = cfg.integer("num_local_experts")
    active = _experts_per_token(cfg, experts, "num_local_experts")
    linears = _separate_attention(att, layers, qkv_bias=False, o_bias=False)
    linears += fused_experts(att.hidden, intermediate, layers, experts, active)
    return _assemble(
        cfg, model_type="mixtral", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * att.hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False), num_experts=experts,
        experts_per_token=active, moe_intermediate=intermediate,
    )


def _gemma(cfg: _Config, model_type: str, *, qk_norm: bool) -> ModelShape:
    """Gemma 2 / Gemma 3 text: four RMSNorms per layer (pre/post attention and feed-forward),
    explicit head_dim, GeGLU MLP, embeddings tied by default; Gemma 3 adds q/k norms.
    Gemma 2 soft-caps attention scores and logits (defaults 50 and 30 in transformers'
    Gemma2Config); both build a full and a sliding-window causal mask."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    attention_bias = cfg.flag("attention_bias", False)
    linears = _separate_attention(att, layers, qkv_bias=attention_bias, o_bias=attention_bias)
    linears += _gated_mlp(att.hidden, intermediate, layers)
    norms = (4 * layers + 1) * att.hidden + (2 * layers * att.head_dim if qk_norm else 0)
    return _assemble(
        cfg, model_type=model_type, att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=norms, norms_per_layer=4, qk_norm=qk_norm,
        tied=cfg.flag("tie_word_embeddings", True),
        attention_softcap=cfg.is_set(
            "attn_logit_softcapping", 50.0 if model_type == "gemma2" else None
        ),
        final_logit_softcap=cfg.is_set(
            "final_logit_softcapping", 30.0 if model_type == "gemma2" else None
        ),
        mask_kinds=2,
    )


def _phi3(cfg: _Config) -> ModelShape:
    """Phi-3 / Phi-4: fused ``qkv_proj`` and ``gate_up_proj``, no biases."""
    att = _attention_dims(cfg)
    layers = cfg.integer("num_hidden_layers")
    intermediate = cfg.integer("intermediate_size")
    q_width = att.heads * att.head_dim
    qkv_out = q_width + 2 * att.kv_heads * att.head_dim
    linears = [
        LinearSpec("qkv_proj", "qkv", att.hidden, qkv_out, layers),
        LinearSpec("o_proj", "o", q_width, att.hidden, layers),
        LinearSpec("gate_up_proj", "gate_up", att.hidden, 2 * intermediate, layers),
        LinearSpec("down_proj", "down", intermediate, att.hidden, layers),
    ]
    return _assemble(
        cfg, model_type="phi3", att=att, intermediate=intermediate, layers=layers,
        linears=linears, norm_params=(2 * layers + 1) * att.hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", False),
    )


def _gpt2(cfg: _Config) -> ModelShape:
    """GPT-2: Conv1D projections with biases, LayerNorm (weight and bias), learned positions,
    a plain GELU MLP of width ``n_inner`` (4 x hidden by default), lm_head tied."""
    hidden = cfg.integer("n_embd", "hidden_size")
    heads = cfg.integer("n_head", "num_attention_heads")
    layers = cfg.integer("n_layer", "num_hidden_layers")
    positions = cfg.integer("n_positions", "max_position_embeddings")
    inner = cfg.integer("n_inner", default=4 * hidden)
    if hidden % heads:
        raise ShapeError("n_head", "heads_divide_embd")
    att = _Attention(hidden, heads, heads, hidden // heads)
    linears = [
        LinearSpec("c_attn", "qkv", hidden, 3 * hidden, layers, bias=True),
        LinearSpec("c_proj", "attn_out", hidden, hidden, layers, bias=True),
        LinearSpec("c_fc", "fc", hidden, inner, layers, bias=True),
        LinearSpec("c_proj", "fc_out", inner, hidden, layers, bias=True),
    ]
    return _assemble(
        cfg, model_type="gpt2", att=att, intermediate=inner, layers=layers, linears=linears,
        norm_params=(2 * layers + 1) * 2 * hidden, norms_per_layer=2,
        tied=cfg.flag("tie_word_embeddings", True), extra_embedding=positions * hidden,
        gated_mlp=False, max_positions=positions,
    )
