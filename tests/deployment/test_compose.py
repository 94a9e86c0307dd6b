"""compose.yaml and docs/operations.md, "Deployment", describe the same set-up: the same
services, published ports and settings; every SIZER_ setting it passes exists; nginx includes
the proxy settings the two-instance test runs, and the instances trust nginx's address alone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML (dev lock) ships no types

from app.config import Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
OPERATIONS = ROOT / "docs" / "operations.md"
NGINX_CONF = ROOT / "deploy" / "nginx.conf"


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return loaded


def documented() -> dict[str, tuple[set[str], set[str]]]:
    """The table of the "Deployment" section: service -> (ports, settings)."""
    text = OPERATIONS.read_text(encoding="utf-8")
    section = text[text.index("\n## Deployment\n"):]
    section = section[:section.index("\n## ", 1)]
    rows: dict[str, tuple[set[str], set[str]]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        service = re.fullmatch(r"`([a-z0-9-]+)`", cells[0]) if len(cells) == 4 else None
        if service is None:
            continue
        ports = set(re.findall(r"`(\d+:\d+)`", cells[2]))
        settings = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[3]))
        rows[service.group(1)] = (ports, settings)
    return rows


def in_compose() -> dict[str, tuple[set[str], set[str]]]:
    return {
        name: ({str(port) for port in service.get("ports", [])},
               set(service.get("environment", {})))
        for name, service in compose()["services"].items()
    }


def test_the_docs_and_compose_yaml_name_the_same_services_ports_and_settings() -> None:
    assert documented() == in_compose()
    assert set(in_compose()) == {"postgres", "redis", "migrations", "app", "nginx"}


def test_every_setting_compose_passes_to_the_app_exists() -> None:
    known = {f"SIZER_{name.upper()}" for name in Settings.model_fields}
    for service in ("migrations", "app"):
        assert set(compose()["services"][service]["environment"]) <= known


def test_two_instances_of_one_image_share_one_database_and_one_redis() -> None:
    services = compose()["services"]
    assert services["app"]["deploy"]["replicas"] == 2
    assert services["app"]["image"] == services["migrations"]["image"]
    assert services["app"]["environment"] == services["migrations"]["environment"]
    assert services["app"]["depends_on"]["migrations"]["condition"] == (
        "service_completed_successfully")


def test_nginx_runs_the_proxy_settings_the_two_instance_test_runs() -> None:
    nginx = compose()["services"]["nginx"]
    mounts = dict(volume.rsplit(":", 1)[0].split(":", 1) for volume in nginx["volumes"])
    assert mounts["./deploy/nginx.conf"] == "/etc/nginx/nginx.conf"
    included = re.findall(r"include\s+(\S+);", NGINX_CONF.read_text(encoding="utf-8"))
    assert included == [mounts["./deploy/proxy.conf"]]
    assert "server app:8000;" in NGINX_CONF.read_text(encoding="utf-8")


def test_the_instances_trust_the_forwarded_headers_of_nginx_alone() -> None:
    services = compose()["services"]
    address = services["nginx"]["networks"]["sizer"]["ipv4_address"]
    assert services["app"]["environment"]["SIZER_FORWARDED_ALLOW_IPS"] == address
    assert "ports" not in services["app"]  # reached only through nginx
