"""Partners are rows with their own id; a key is issued for a partner named explicitly, and a new
partner that reads like an existing one is refused with the reason (issue 13, point 6).

Before, a key attached to whichever partner had the same ASCII slug: a key issued for
"Müller AG" (or "Ä") while "Muller AG" (or "A") existed silently joined that partner and
listed its quote requests. Services on SQLite and PostgreSQL, the API, and `sizer apikey`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app import text_input
from app.accounts import api_keys
from app.accounts.api_keys import PartnerNameTaken
from app.cli import main as sizer
from app.db.session import SessionFactory
from app.db.tables import ApiKey, Partner
from app.errors import InvalidInput, NotFound
from tests.api.v1.test_quote_requests import request_body
from tests.security.catalogue import BAD_PARTNER_NAMES, BadPartnerName


@pytest.fixture
def session(seeded: SessionFactory) -> Iterator[Session]:
    with seeded() as session:
        yield session
        session.rollback()


@pytest.mark.parametrize(("existing", "asked"), [
    ("Muller AG", "Müller AG"),
    ("Muller AG", "MULLER-AG"),
    ("Muller AG", "  muller   ag  "),
    ("A", "Ä"),
    ("Strasse GmbH", "Straße GmbH"),
    ("株式会社", "株式会社"),
])
def test_a_new_partner_that_reads_like_an_existing_one_is_refused(
    session: Session, existing: str, asked: str
) -> None:
    first = api_keys.create_partner(session, name=existing)
    with pytest.raises(PartnerNameTaken) as refused:
        api_keys.create_partner(session, name=asked)
    error = refused.value
    assert (error.field, error.existing_id, error.existing_name, error.existing_slug) == (
        "new_partner_name", first.id, existing, first.slug)
    assert error.detail.startswith("new_partner_name: ") and existing in error.detail
    assert session.scalar(select(func.count()).select_from(Partner)) == 1


def test_names_that_only_look_alike_to_ascii_are_different_partners(session: Session) -> None:
    """Letters of any script are kept: "株式会社" was refused outright before (empty slug)."""
    names = ["Müller AG", "Mueller AG", "株式会社", "株式会社 東京", "Øresund Data", "resund Data"]
    made = [api_keys.create_partner(session, name=name) for name in names]
    assert len({p.id for p in made}) == len({p.slug for p in made}) == len(names)
    assert made[2].slug == api_keys.SLUG_FALLBACK
    assert made[3].slug.startswith(f"{api_keys.SLUG_FALLBACK}-")
    assert made[4].slug == "resund-data" and made[5].slug.startswith("resund-data-")


@pytest.mark.parametrize("name", ["", "   ", "!!!", "a\x00b", "a\u200bb", "x" * 201])
def test_a_name_that_cannot_be_a_partner_names_the_field(session: Session, name: str) -> None:
    with pytest.raises(InvalidInput, match=r"^new_partner_name: "):
        api_keys.create_partner(session, name=name)
    assert session.scalar(select(func.count()).select_from(Partner)) == 0


def test_a_key_is_issued_for_the_partner_by_id_only(session: Session) -> None:
    muller = api_keys.create_partner(session, name="Muller AG")
    record, _ = api_keys.issue_key(session, partner_id=muller.id)
    assert (record.partner_id, record.partner_slug) == (muller.id, "muller-ag")
    for unknown in (0, -1, 10**12, muller.id + 1000):
        with pytest.raises(NotFound, match=r"^partner_id: "):
            api_keys.issue_key(session, partner_id=unknown)
    api_keys.set_partner_active(session, partner_id=muller.id, active=False,
                                checked=api_keys.KeyCheckCache())
    with pytest.raises(InvalidInput, match=r"^partner_id: the partner is suspended"):
        api_keys.issue_key(session, partner_id=muller.id)
    assert session.scalar(select(func.count()).select_from(ApiKey)) == 1


def test_a_refused_look_alike_never_gets_a_key_to_the_partner_s_quote_requests(
    client: TestClient, seeded: SessionFactory
) -> None:
    with seeded.begin() as session:
        muller = api_keys.create_partner(session, name="Muller AG").id
        _, muller_key = api_keys.issue_key(session, partner_id=muller)
    muller_auth = {"Authorization": f"Bearer {muller_key}"}
    created = client.post("/api/v1/quote-requests", headers=muller_auth, json=request_body())
    assert created.status_code == 201
    with seeded.begin() as session, pytest.raises(PartnerNameTaken):
        api_keys.create_partner(session, name="Müller AG")
    with seeded.begin() as session:  # a really different partner gets its own, empty list
        mueller = api_keys.create_partner(session, name="Mueller AG").id
        _, mueller_key = api_keys.issue_key(session, partner_id=mueller)
    listed = client.get("/api/v1/quote-requests",
                        headers={"Authorization": f"Bearer {mueller_key}"})
    assert listed.status_code == 200 and listed.json()["items"] == []
    own = client.get("/api/v1/quote-requests", headers=muller_auth).json()["items"]
    assert [item["id"] for item in own] == [created.json()["id"]]


def test_sizer_apikey_names_the_partner_explicitly(
    database_url: str, seeded: SessionFactory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    assert sizer(["apikey", "create", "--new-partner", "Muller AG"]) == 0
    assert "partner: muller-ag (Muller AG, id " in capsys.readouterr().out

    assert sizer(["apikey", "create", "--new-partner", "Müller AG"]) == 2
    err = capsys.readouterr().err
    assert "new_partner_name: 'Müller AG' reads like the existing partner 'Muller AG'" in err
    assert "--partner muller-ag" in err
    assert sizer(["apikey", "create", "--new-partner", "Ä"]) == 0
    assert sizer(["apikey", "create", "--new-partner", "A"]) == 2
    assert "reads like the existing partner 'Ä'" in capsys.readouterr().err

    assert sizer(["apikey", "create", "--partner", "muller-ag", "--label", "second"]) == 0
    assert "partner: muller-ag (Muller AG" in capsys.readouterr().out
    assert sizer(["apikey", "create", "--partner", "nobody"]) == 2
    assert "partner: no partner 'nobody'" in capsys.readouterr().err
    assert sizer(["apikey", "create", "--partner-id", "999999"]) == 2
    assert "partner_id: no partner with id 999999" in capsys.readouterr().err
    with pytest.raises(SystemExit) as both:  # one way to name the partner, not two
        sizer(["apikey", "create", "--partner", "muller-ag", "--new-partner", "X"])
    assert both.value.code == 2
    with pytest.raises(SystemExit) as none:
        sizer(["apikey", "create"])
    assert none.value.code == 2
    capsys.readouterr()

    assert sizer(["apikey", "partners"]) == 0
    listing = capsys.readouterr().out
    assert "muller-ag" in listing and "Muller AG" in listing and "Ä" in listing
    with seeded() as session:
        counts = {p.name: p.active_keys for p in api_keys.list_partners(session)}
    assert counts == {"Muller AG": 2, "Ä": 1}


def test_the_desk_and_cli_share_one_refusal(session: Session) -> None:
    """One error type, as data: the staff desk words it itself, the CLI prints the detail."""
    api_keys.create_partner(session, name="Muller AG")
    with pytest.raises(PartnerNameTaken) as refused:
        api_keys.create_partner(session, name="Müller AG")
    assert refused.value.status_code == 409 and refused.value.name == "Müller AG"


@pytest.mark.parametrize("entry", BAD_PARTNER_NAMES, ids=lambda e: e.id)
def test_sizer_apikey_refuses_every_bad_partner_name_of_the_catalogue(
    database_url: str, seeded: SessionFactory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], entry: BadPartnerName,
) -> None:
    monkeypatch.setenv("SIZER_DATABASE_URL", database_url)
    if entry.existing is not None:
        with seeded.begin() as session:
            api_keys.create_partner(session, name=entry.existing)
    if text_input.control_character(entry.name) is not None:
        # the command line's one control-character check refuses it before any command runs
        # (issue 24, point 1), naming the option
        with pytest.raises(SystemExit) as refused:
            sizer(["apikey", "create", "--new-partner", entry.name])
        assert refused.value.code == 2
        err = capsys.readouterr().err
        assert f"sizer apikey: error: --new-partner: {text_input.REASON}" in err
    else:
        assert sizer(["apikey", "create", "--new-partner", entry.name]) == 2
        err = capsys.readouterr().err
        assert "sizer apikey: error: new_partner_name: " in err
    if entry.existing is not None:
        assert f"reads like the existing partner {entry.existing!r}" in err
    with seeded() as session:
        assert [p.name for p in api_keys.list_partners(session)] == (
            [entry.existing] if entry.existing else [])
        assert session.scalar(select(func.count()).select_from(ApiKey)) == 0
