"""Property tests from the contract: schemathesis generates requests from
/api/v1/openapi.json and calls the app in process with a valid key. No answer may be a
server error, and every answer must match the documented status codes, content types and
schemas. Bounded (``MAX_EXAMPLES`` per operation) so it stays well under a minute.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.accounts import api_keys
from app.catalog.seed import seed_database
from app.config import load_settings
from app.db import migrate
from app.db.session import make_engine, make_session_factory
from app.main import create_app
from tests.fake_hub import FakeHub

pytestmark = pytest.mark.serial  # one node id for every operation: xdist would run one of them

MAX_EXAMPLES = 25
# The schema is read from the app at import (it needs no database); the database behind it is
# migrated and seeded by the module fixture before the first generated request.
_DIR = Path(tempfile.mkdtemp(prefix="sizer-schemathesis-"))
_URL = f"sqlite:///{_DIR / 'api.db'}"
# A model id with a "/" is looked up on the Hub: this fake one on 127.0.0.1, which has no
# repositories (404), so no generated request reaches the internet.
_HUB = FakeHub()
_HUB.start()
schema = schemathesis.openapi.from_asgi(
    "/api/v1/openapi.json",
    create_app(load_settings(database_url=_URL, hub_endpoint=_HUB.endpoint)),
)


@pytest.fixture(scope="module")
def partner_key() -> Iterator[str]:
    """A key on the migrated, seeded database, with a limit high enough to fuzz."""
    migrate.upgrade(_URL)
    engine = make_engine(_URL)
    with make_session_factory(engine).begin() as session:
        seed_database(session)
        fuzzer = api_keys.create_partner(session, name="Fuzzer").id
        _, key = api_keys.issue_key(session, partner_id=fuzzer, rate_limit_per_minute=1_000_000)
    engine.dispose()
    yield key
    shutil.rmtree(_DIR, ignore_errors=True)
    _HUB.stop()


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_no_server_error_and_no_response_outside_the_contract(
    case: Any, partner_key: str
) -> None:
    case.call_and_validate(
        headers={"Authorization": f"Bearer {partner_key}"},
        checks=[schemathesis.checks.not_a_server_error, status_code_conformance,
                content_type_conformance, response_schema_conformance],
    )
