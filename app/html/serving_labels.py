"""The Serve mode's inputs as people read them, for every page that shows a serving sizing:
the Serve form itself (``app/web/serving_form.py``), the quote form, the customer's ``/q/`` page
and the staff desk's quote and print views (a stored request keeps the raw values; these words
name them). Templates reach them as ``serving_labels`` (``app/html/templating.py``)."""

from __future__ import annotations

from typing import Final

from app.html.forms import N_

WEIGHT_LABELS: Final = {
    "published": N_("As published (the checkpoint's own format; 16-bit when it names none)"),
    "bf16": N_("bf16"), "fp16": N_("fp16"),
    "fp8": N_("FP8 (8-bit weights and activations)"), "int8": N_("INT8 (W8A8)"),
    "awq": N_("AWQ 4-bit (group 128)"), "gptq": N_("GPTQ 4-bit (group 128)"),
    "nvfp4": N_("NVFP4 (4-bit, Blackwell)"), "mxfp4": N_("MXFP4 (4-bit experts, as gpt-oss)"),
    "gguf-q4_k_m": N_("GGUF Q4_K_M (llama.cpp)"), "gguf-q8_0": N_("GGUF Q8_0 (llama.cpp)"),
}
KV_LABELS: Final = {
    "auto": N_("As the model (16-bit)"), "bf16": N_("bf16"), "fp16": N_("fp16"),
    "fp8": N_("FP8 (half the memory)"),
}
RUNTIME_LABELS: Final = {
    "vllm": N_("vLLM"), "sglang": N_("SGLang"), "llama.cpp": N_("llama.cpp"),
}
FIELD_LABELS: Final = {
    "model": N_("Model"), "weights": N_("Weights format"), "kv": N_("KV cache"),
    "context": N_("Context per user (tokens)"), "users": N_("Concurrent users"),
    "gpus": N_("GPUs per model (tensor parallel)"), "runtime": N_("Serving runtime"),
    "gpu": N_("Card to check"),
    "speed": N_("Minimum tokens/s per user"),
}
"""Each Serve field's label: beside the control, and before its error wherever the field is
refused away from the form (a quote link with a bad value)."""
