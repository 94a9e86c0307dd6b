"""`sizer user create --admin EMAIL`: the first admin, password from stdin or a prompt."""

from __future__ import annotations

import io

import pytest
from sqlalchemy import select

from app.accounts import passwords
from app.cli import main
from app.db.session import SessionFactory
from app.db.tables import StaffUser


def test_create_admin_from_stdin(
    database_url: str, session_factory: SessionFactory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    monkeypatch.setattr("sys.stdin", io.StringIO("a-long-enough-secret\n"))
    assert main(["user", "create", "--admin", "boss@shop.example", "--password-stdin"]) == 0
    assert "created admin boss@shop.example" in capsys.readouterr().out
    with session_factory() as session:
        user = session.scalars(select(StaffUser)).one()
        assert user.role == "admin"
        assert passwords.verify_password(user.password_hash, "a-long-enough-secret")
    monkeypatch.setattr("sys.stdin", io.StringIO("a-long-enough-secret\n"))
    assert main(["user", "create", "boss@shop.example", "--password-stdin"]) == 2
    assert "already has an account" in capsys.readouterr().err


def test_short_password_and_prompt_mismatch(
    database_url: str, session_factory: SessionFactory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["user", "create", "x@shop.example", "--password-stdin"]) == 2
    assert "at least 12 characters" in capsys.readouterr().err
    answers = iter(["first-password-1", "second-password-2"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    assert main(["user", "create", "x@shop.example"]) == 2
    assert "differ" in capsys.readouterr().err
    with session_factory() as session:
        assert session.scalars(select(StaffUser)).all() == []
