"""Customer-facing surface (pages come later); for now the health probes."""
