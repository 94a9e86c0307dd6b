"""The one error a ``sizer`` command raises for a problem its user can fix."""

from __future__ import annotations

EXIT_USER_ERROR = 2
"""argparse's own status for a usage error, and ``sizer``'s for everything else a user can fix
(app/cli/__init__.py), so a script tells "fix your input" (2) from "a bug" (1)."""


class CliError(Exception):
    """A problem the user can fix. :func:`app.cli.main` prints it as one line on standard error,
    ``sizer <command>: error: <subject>: <reason>``, and exits with :data:`EXIT_USER_ERROR`.

    ``subject`` names what to fix (an option, a file, the database); ``reason`` says what is
    wrong and, where there is one, the command that fixes it.
    """

    def __init__(self, reason: str, *, subject: str | None = None) -> None:
        super().__init__(f"{subject}: {reason}" if subject else reason)
        self.subject = subject
        self.reason = reason
