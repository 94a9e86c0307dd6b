"""The kit every architecture builder shares: the config reader and its bounds, attention
dimensions, the separate q/k/v/o projections, the gated MLP, fused experts, and the assembly of
a :class:`~app.engine.shapes.ModelShape` from its linear layers and norms.

Public on purpose: each family module (``llama``, ``qwen``, ``gemma``, ``moe``, ...) builds from
these pieces and imports them by their public names; no builder reaches into another module's
private ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from app.engine.shapes import LinearSpec, ModelShape, ParamSplit, ShapeError

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


MAX_SSM_CHUNK: Final = 8192
"""Mamba-2 chunk length in tokens (``chunk_size``). Released: 128 (Nemotron-H), 256 (Granite
4.0 H)."""


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
    # Hybrid, multimodal and older dense models (hybrid.py, multimodal.py, llama.py, gemma.py,
    # phi.py, gpt.py, lfm2.py).
    "full_attention_interval": MAX_LAYERS, "linear_num_key_heads": MAX_HEADS,
    "linear_num_value_heads": MAX_HEADS, "linear_key_head_dim": MAX_HEAD_DIM,
    "linear_value_head_dim": MAX_HEAD_DIM, "linear_conv_kernel_dim": MAX_CONV_KERNEL,
    "shared_expert_intermediate_size": MAX_INTERMEDIATE_SIZE,
    "mamba_num_heads": MAX_HEADS, "mamba_head_dim": MAX_HEAD_DIM, "n_groups": MAX_HEADS,
    "ssm_state_size": MAX_STATE_SIZE, "conv_kernel": MAX_CONV_KERNEL,
    "n_routed_experts": MAX_EXPERTS, "moe_shared_expert_intermediate_size": MAX_INTERMEDIATE_SIZE,
    "share_expert_dim": MAX_INTERMEDIATE_SIZE, "num_sliding_attention_heads": MAX_HEADS,
    "num_nextn_predict_layers": MAX_LAYERS,
    "moe_latent_size": MAX_HIDDEN_SIZE, "num_kv_heads": MAX_HEADS,
    "ffn_hidden_size": MAX_INTERMEDIATE_SIZE, "num_ln_in_parallel_attn": MAX_SMALL_FACTOR,
    "depth": MAX_LAYERS, "num_position_embeddings": MAX_POSITIONS,
    "out_hidden_size": MAX_HIDDEN_SIZE, "patch_size": MAX_IMAGE_SIZE,
    "image_size": MAX_IMAGE_SIZE, "num_channels": MAX_SMALL_FACTOR,
    "in_channels": MAX_SMALL_FACTOR, "spatial_merge_size": MAX_SMALL_FACTOR,
    "temporal_patch_size": MAX_SMALL_FACTOR,
    # moe.py, deepseek.py: experts, MLA ranks and head widths, layer schedules.
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
    # gemma4.py: the second attention width, per-layer embeddings, KV sharing, towers.
    "global_head_dim": MAX_HEAD_DIM, "num_global_key_value_heads": MAX_HEADS,
    "num_kv_shared_layers": MAX_LAYERS, "hidden_size_per_layer_input": MAX_HIDDEN_SIZE,
    "vocab_size_per_layer_input": MAX_VOCAB_SIZE, "top_k_experts": MAX_EXPERTS,
    "position_embedding_size": MAX_POSITIONS, "conv_kernel_size": MAX_CONV_KERNEL,
    "output_proj_dims": MAX_HIDDEN_SIZE,
    # moe.py (MiMo-V2-Flash), deepseek.py (V4): grouped output, hyper-connections,
    # compression rates.
    "block_ff_dim": MAX_INTERMEDIATE_SIZE, "block_multiple_of": MAX_INTERMEDIATE_SIZE,
    "conv_L_cache": MAX_CONV_KERNEL,
    "o_groups": MAX_HEADS, "o_lora_rank": MAX_HIDDEN_SIZE, "hc_mult": MAX_SMALL_FACTOR,
    "compress_rate_csa": MAX_COMPRESS_RATE, "compress_rate_hca": MAX_COMPRESS_RATE,
    "compress_rates.compressed_sparse_attention": MAX_COMPRESS_RATE,
    "compress_rates.heavily_compressed_attention": MAX_COMPRESS_RATE,
    # granite_hybrid.py: Granite 4.0's Mamba-2 sizes and its shared MLP.
    "mamba_n_heads": MAX_HEADS, "mamba_d_head": MAX_HEAD_DIM, "mamba_d_state": MAX_STATE_SIZE,
    "mamba_n_groups": MAX_HEADS, "mamba_d_conv": MAX_CONV_KERNEL,
    "mamba_expand": MAX_SMALL_FACTOR, "shared_intermediate_size": MAX_INTERMEDIATE_SIZE,
    # ernie.py: ERNIE 4.5's expert names and layer schedule.
    "moe_num_experts": MAX_EXPERTS, "moe_k": MAX_EXPERTS, "moe_num_shared_experts": MAX_EXPERTS,
    "moe_layer_start_index": MAX_LAYERS, "moe_layer_end_index": MAX_LAYERS,
    "moe_layer_interval": MAX_LAYERS,
    # falcon_h1.py: the Mamba inner width Falcon-H1 names.
    "mamba_d_ssm": MAX_INTERMEDIATE_SIZE,
    # hybrid.py, granite_hybrid.py, falcon_h1.py: Mamba-2's chunk length.
    "chunk_size": MAX_SSM_CHUNK, "mamba_chunk_size": MAX_SSM_CHUNK,
    # longcat.py: LongCat-Flash's layer pairs, expert width, identity experts and picks.
    "num_layers": MAX_LAYERS // 2, "expert_ffn_hidden_size": MAX_INTERMEDIATE_SIZE,
    "zero_expert_num": MAX_EXPERTS,
    # hunyuan.py: the experts a token passes (a number, or one per layer).
    "moe_topk": MAX_EXPERTS,
    # exaone_moe.py: the shared experts' count.
    "num_shared_experts": MAX_EXPERTS,
    # afmoe.py: the first dense layers.
    "num_dense_layers": MAX_LAYERS,
    # minimax_m3.py: the dense layers' MLP width, the vision projector's.
    "dense_intermediate_size": MAX_INTERMEDIATE_SIZE, "projector_hidden_size": MAX_HIDDEN_SIZE,
}
"""Upper bound of every integer architecture field the engine reads.

Why: a config.json is a stranger's document, and nothing the engine does may cost more because
a value in it is large (unbounded, a qwen3_moe config with 10^8 layers held a worker for 41 s). The
bounds sit 4-16x above the largest released model, so no real config is refused, and they keep
every product of them (parameter counts, bytes) a modest integer. A value above its bound is
refused with the field named; ``tests/engine/test_config_bounds.py`` holds every builder to
them and checks that an estimate's work does not grow with any of them."""


class Config:
    """Typed access to config fields with errors that name the field."""

    def __init__(self, raw: Mapping[str, object]) -> None:
        self.raw = raw

    def integer(self, *names: str, default: int | None = None) -> int:
        for name in names:
            value = self.raw.get(name)
            if value is None:
                continue
            return bounded(name, value)
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
        return bounded(name, value)

    def optional_int(self, name: str) -> int | None:
        value = self.raw.get(name)
        if value is None:
            return None
        return bounded(name, value)

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


def bounded(name: str, value: object) -> int:
    """A positive integer no larger than the field's bound in :data:`FIELD_BOUNDS`."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ShapeError(name, "positive_integer", value=repr(value))
    bound = FIELD_BOUNDS.get(name)
    if bound is None:  # a field the engine reads must have a bound: a programming error
        raise AssertionError(f"no upper bound for config field {name!r}")
    if value > bound:
        raise ShapeError(name, "above_bound", bound=bound, value=value)
    return value


def experts_per_token(cfg: Config, experts: int, experts_field: str) -> int:
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
    listed ones among them. The list is at most ``layers`` long (:meth:`Config.layer_list`)."""
    return layers // step - sum(1 for i in dense_only if (i + 1) % step == 0)


@dataclass(frozen=True, slots=True)
class Attention:
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int


def attention_dims(cfg: Config) -> Attention:
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
    return Attention(hidden, heads, kv_heads, explicit)


def separate_attention(
    att: Attention, layers: int, *, qkv_bias: bool, o_bias: bool
) -> list[LinearSpec]:
    q_width = att.heads * att.head_dim
    kv_width = att.kv_heads * att.head_dim
    return [
        LinearSpec("q_proj", "q", att.hidden, q_width, layers, bias=qkv_bias),
        LinearSpec("k_proj", "k", att.hidden, kv_width, layers, bias=qkv_bias),
        LinearSpec("v_proj", "v", att.hidden, kv_width, layers, bias=qkv_bias),
        LinearSpec("o_proj", "o", q_width, att.hidden, layers, bias=o_bias),
    ]


def gated_mlp(
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


def assemble(
    cfg: Config,
    *,
    model_type: str,
    att: Attention,
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


def fused_experts(
    hidden: int, width: int, layers: int, experts: int, active: int, *,
    peft_fused: bool = True, router_target: bool = True, bias: bool = False,
) -> list[LinearSpec]:
    """Router and experts of ``layers`` sparse layers as transformers 5 builds them: the
    router (hidden -> experts) and two fused 3-D tensors, ``gate_up_proj`` (hidden -> 2 x
    width) and ``down_proj``, ``experts`` deep. ``peft_fused``: PEFT 0.21 adapts the tensors
    (its conversion table knows the model type; app/engine/architectures/moe.py), the gate/up one at
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
