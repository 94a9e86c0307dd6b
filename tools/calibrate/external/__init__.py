"""External validation: published GPU peak-memory figures and the engine held against them."""
