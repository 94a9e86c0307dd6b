"""GPU Sizer: fine-tuning memory sizing service."""
