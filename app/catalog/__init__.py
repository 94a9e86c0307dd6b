"""The catalog domain: GPUs, systems and model cards, read through one cached service."""
