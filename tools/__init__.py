"""Developer tools for GPU Sizer (not part of the service package)."""
