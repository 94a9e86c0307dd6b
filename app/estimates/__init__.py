"""Estimates: the one path from a request (page, partner API, CLI) to the engine's answer."""
