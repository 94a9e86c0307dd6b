"""Calibration harness: measure what one real Hugging Face training step keeps alive."""
