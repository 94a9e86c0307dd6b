"""Partner JSON API, version 1: public schemas, key auth, routers (mounted at /api/v1)."""
