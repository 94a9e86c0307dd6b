"""Operations: structured logs with a request id, Prometheus metrics, request timing."""
