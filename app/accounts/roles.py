"""The staff roles (the vocabulary ``staff_user.role`` is checked against).

``sales`` works the quote desk and the catalog; ``admin`` also reaches the admin pages and
the partner API keys (``app/staff/routes.py``). The table's CHECK constraint is built from
:data:`STAFF_ROLES`, which lives in app/vocabularies.py, below the tables; the domain names it
here for its users.
"""

from __future__ import annotations

from app.vocabularies import STAFF_ROLES as STAFF_ROLES
