"""Quote requests: what a customer asked for, with the sizing it was asked from."""
