"""The staff roles (the vocabulary ``staff_user.role`` is checked against).

``sales`` works the quote desk and the catalog; ``admin`` also reaches the admin pages and
the partner API keys (``app/staff/routes.py``). The table's CHECK constraint is built from
:data:`STAFF_ROLES`.
"""

from __future__ import annotations

STAFF_ROLES: tuple[str, ...] = ("sales", "admin")
