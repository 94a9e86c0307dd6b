"""The staff desk under /staff: sign-in, quotes, catalog editing, model import, audit, keys."""
