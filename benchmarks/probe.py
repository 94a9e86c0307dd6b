"""Re-run the outside probes' reproductions (issues 13 and 24) against a real service: `make probe`.

The probe that filed issue 13 found an anonymous denial of service and nine medium holes by
sending requests to a running instance. This script sends the same requests to a fresh
`sizer serve` (its own PostgreSQL database, migrated and seeded, see ``_service.py``) and prints
one line per reproduction: ``refused`` (answered with a 4xx that names the problem),
``harmless`` (answered, but nothing the attacker wanted happened) or ``OPEN`` (the hole is
still there). It exits 1 if any line is ``OPEN``. The regression tests for each point live in
the test suite; this is the end-to-end check, over real HTTP, of what the probe saw.

Loopback only. Figures it prints (seconds, megabytes) are measurements of this run, not limits.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import httpx

from benchmarks._service import DEFAULT_SERVER, ROOT, SIZER, Service, running_service

Verdict = Literal["refused", "harmless", "OPEN"]
PASSWORD = "correct horse battery staple 42"
QWEN3_MOE = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
    "vocab_size": 151936, "max_position_embeddings": 40960,
}
CSRF_INPUT = re.compile(r'name="csrf_token"\s+value="([^"]+)"')
CSRF_META = re.compile(r'name="csrf-token"\s+content="([^"]+)"')


@dataclass(frozen=True)
class Finding:
    point: str
    what: str
    verdict: Verdict
    detail: str


def _rss_mb(pid: int) -> float:
    """Resident memory of the server process and its children, in MB (Linux /proc)."""
    total = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for one in pids:
        status = Path(f"/proc/{one}/status")
        if status.exists():
            match = re.search(r"VmRSS:\s+(\d+) kB", status.read_text())
            total += int(match.group(1)) if match else 0
    return total / 1024


def _parallel(count: int, call: Callable[[int], httpx.Response]) -> list[httpx.Response]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(call, range(count)))


def _sizer(
    service: Service, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"SIZER_DATABASE_URL": service.database_url, "PATH": "/usr/bin:/bin"}
    return subprocess.run([*SIZER, *args], cwd=ROOT, env=env, input=stdin, capture_output=True,
                          text=True, timeout=120)


# --- 1. the denial of service through one config.json field ------------------------------------

def probe_layers(service: Service) -> list[Finding]:
    base = service.base_url
    findings = []
    for layers in (10**8, 9007199254740992):
        config = json.dumps({**QWEN3_MOE, "num_hidden_layers": layers})
        started = time.perf_counter()

        def page(_: int, config: str = config) -> httpx.Response:
            return httpx.get(f"{base}/", params={"model": "custom", "config": config}, timeout=120)

        pages = _parallel(40, page)
        seconds = time.perf_counter() - started
        health = httpx.get(f"{base}/healthz", timeout=10)
        named = all("num_hidden_layers" in r.text for r in pages)
        ok = all(r.status_code < 500 for r in pages) and named and health.status_code == 200
        findings.append(Finding(
            "1", f"40 GET / with qwen3_moe num_hidden_layers={layers}",
            "refused" if ok and seconds < 10 else "OPEN",
            f"statuses {sorted({r.status_code for r in pages})}, field named: {named}, "
            f"all 40 answered in {seconds:.2f} s, /healthz {health.status_code}",
        ))
    config_doc = {**QWEN3_MOE, "num_hidden_layers": 10**8}
    for path in ("/api/v1/estimates", "/api/v1/recommendations"):
        started = time.perf_counter()
        response = httpx.post(f"{base}{path}", json={"model_config": config_doc, "method": "lora"},
                              headers={"Authorization": f"Bearer {service.api_key}"}, timeout=60)
        seconds = time.perf_counter() - started
        ok = response.status_code == 422 and "num_hidden_layers" in response.text
        findings.append(Finding("1", f"POST {path} with 10^8 layers",
                                "refused" if ok else "OPEN",
                                f"{response.status_code} in {seconds * 1000:.0f} ms"))
    return findings


# --- 2. the language switch's return path --------------------------------------------------------

def probe_redirect(service: Service) -> list[Finding]:
    findings = []
    for raw in ("/%09/evil.example/x", "/%E2%80%A8", "//evil.example", "/%5Cevil.example",
                "https://evil.example/"):
        response = httpx.get(f"{service.base_url}/lang/en?next={raw}", follow_redirects=False)
        location = response.headers.get("location", "")
        target = urlsplit(location)
        same_origin = location.startswith("/") and not location.startswith("//") \
            and not target.netloc and "\\" not in location and location.isascii()
        verdict: Verdict = "harmless" if response.status_code < 500 and same_origin else "OPEN"
        findings.append(Finding("2", f"/lang/en?next={raw}", verdict,
                                f"{response.status_code} Location: {location!r}"))
    return findings


# --- 3 and 4. sign-in throttling and hashing ----------------------------------------------------

def _sign_in(base: str, email: str, password: str, headers: dict[str, str] | None = None,
             client: httpx.Client | None = None) -> httpx.Response:
    own = client or httpx.Client(base_url=base, timeout=60)
    try:
        form = own.get(f"{base}/staff/sign-in")
        token = own.cookies.get("sizer_staff_signin", "")
        return own.post(f"{base}/staff/sign-in", headers=headers or {},
                        data={"email": email, "password": password, "csrf_token": token,
                              "next": "/staff/quotes"}, follow_redirects=False) \
            if form.status_code == 200 else form
    finally:
        if client is None:
            own.close()


def probe_sign_in(service: Service) -> list[Finding]:
    base = service.base_url
    rotating = [
        _sign_in(base, "sales@probe.example", "wrong", {"X-Forwarded-For": f"203.0.113.{i}"})
        for i in range(10)
    ]
    checked = sum(1 for r in rotating if r.status_code == 422)
    findings = [Finding(
        "3a", "10 wrong passwords, a new X-Forwarded-For each",
        "refused" if checked <= 5 else "OPEN",
        f"{checked} checked, {sum(1 for r in rotating if r.status_code == 429)} throttled (429)",
    )]
    burst = _parallel(30, lambda _: _sign_in(base, "admin@probe.example", "wrong"))
    checked = sum(1 for r in burst if r.status_code == 422)
    findings.append(Finding(
        "3b", "30 concurrent wrong passwords for one account (limit 5)",
        "refused" if checked <= 5 else "OPEN",
        f"{checked} checked; statuses {sorted({r.status_code for r in burst})}",
    ))
    before = _rss_mb(service.pid)
    started = time.perf_counter()
    bogus = _parallel(40, lambda i: _sign_in(base, f"nobody{i}@probe.example", "wrong"))
    seconds = time.perf_counter() - started
    after = _rss_mb(service.pid)
    health_started = time.perf_counter()
    health = httpx.get(f"{base}/healthz", timeout=10)
    health_ms = (time.perf_counter() - health_started) * 1000
    busy = sum(1 for r in bogus if r.status_code == 503 and r.headers.get("retry-after"))
    findings.append(Finding(
        "4", "40 concurrent sign-ins with unknown e-mails",
        "harmless" if after - before < 400 and health.status_code == 200 else "OPEN",
        f"RSS {before:.0f} -> {after:.0f} MB, {busy} x 503 with Retry-After, "
        f"all answered in {seconds:.1f} s, /healthz then {health_ms:.0f} ms",
    ))
    return findings


# --- 5. quote-request spam ------------------------------------------------------------------------

def probe_quote_spam(service: Service) -> list[Finding]:
    base = service.base_url
    data = {"item": "gpu:rtx-pro-6000", "name": "Spam", "company": "Spam GmbH",
            "email": "spam@probe.example", "country": "DE", "quantity": "1"}
    statuses = [httpx.post(f"{base}/quote", data=data, follow_redirects=False).status_code
                for _ in range(60)]
    stored = sum(1 for s in statuses if s in (200, 303))
    limited = statuses.count(429)
    return [Finding("5", "60 quote requests from one address in a minute",
                    "refused" if limited and stored <= 10 else "OPEN",
                    f"{stored} stored, {limited} refused with 429")]


# --- 6. partner identity --------------------------------------------------------------------------

def probe_partners(service: Service) -> list[Finding]:
    first = _sizer(service, "apikey", "create", "--new-partner", "Muller AG")
    findings = []
    for name in ("Müller AG", "MULLER AG", "Ä"):
        second = _sizer(service, "apikey", "create", "--new-partner", name)
        if name == "Ä":
            again = _sizer(service, "apikey", "create", "--new-partner", "A")
            ok = second.returncode in (0, 2) and (second.returncode == 2 or again.returncode == 2)
            detail = f"'Ä' exit {second.returncode}, then 'A' exit {again.returncode}"
        else:
            ok = first.returncode == 0 and second.returncode == 2
            detail = f"exit {second.returncode}: {second.stderr.strip()[:120]}"
        findings.append(Finding("6", f"a key for new partner {name!r} beside 'Muller AG'",
                                "refused" if ok else "OPEN", detail))
    return findings


# --- 7. metrics -----------------------------------------------------------------------------------

def probe_metrics(service: Service) -> list[Finding]:
    """Two rounds of invented methods and paths: the first may add the fixed ``other`` and
    ``unmatched`` series once; the second must add nothing."""
    base = service.base_url

    def round_of_invented_requests() -> int:
        before = httpx.get(f"{base}/metrics").text.count("\n")
        for i in range(50):
            httpx.request(f"M{uuid.uuid4().hex[:8].upper()}", f"{base}/x{uuid.uuid4().hex}{i}")
        return httpx.get(f"{base}/metrics").text.count("\n") - before

    first, second = round_of_invented_requests(), round_of_invented_requests()
    return [Finding("7", "2 x 50 requests with invented methods and paths",
                    "harmless" if second == 0 else "OPEN",
                    f"/metrics grew by {first} lines (the fixed 'other'/'unmatched' series), "
                    f"then by {second}")]


# --- 8. 500s from a config's values ---------------------------------------------------------------

def probe_config_values(service: Service) -> list[Finding]:
    base = service.base_url
    huge = '{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}"
    cases: dict[str, httpx.Response] = {
        "GET / with a 5,000-digit integer": httpx.get(
            f"{base}/", params={"model": "custom", "config": huge}),
        "POST /api/v1/estimates with a 5,000-digit integer": httpx.post(
            f"{base}/api/v1/estimates", content='{"model_config": ' + huge + "}",
            headers={"Authorization": f"Bearer {service.api_key}",
                     "Content-Type": "application/json"}),
    }
    findings = [
        Finding("8", what, "refused" if 400 <= r.status_code < 500 else "OPEN",
                f"{r.status_code}") for what, r in cases.items()
    ]
    with httpx.Client(base_url=base, timeout=60) as client:
        signed = _sign_in(base, "importer@probe.example", PASSWORD, client=client)
        page = client.get("/staff/models/import")
        match = CSRF_INPUT.search(page.text) or CSRF_META.search(page.text)
        token = match.group(1) if match else ""
        for name, text in (
            ("NaN", '{"model_type": "llama", "rope_theta": NaN}'),
            ("a lone surrogate", '{"model_type": "llama", "note": "\\ud800"}'),
            ("nesting 100,000 deep", '{"n": ' + "[" * 100_000 + "]" * 100_000 + "}"),
            ("a 5,000-digit integer", huge),
        ):
            response = client.post("/staff/models/import", data={
                "csrf_token": token, "config": text, "slug": "probe-" + uuid.uuid4().hex[:6],
                "action": "save", "name": "Probe", "license": "apache-2.0"})
            ok = signed.status_code in (200, 303) and 400 <= response.status_code < 500
            findings.append(Finding("8", f"staff import of a config with {name}",
                                    "refused" if ok else "OPEN",
                                    f"sign-in {signed.status_code}, import {response.status_code}"))
    models = httpx.get(f"{base}/api/v1/models", params={"q": "probe"},
                       headers={"Authorization": f"Bearer {service.api_key}"})
    stored = '"probe-' in models.text
    findings.append(Finding("8", "nothing from those imports stored",
                            "harmless" if models.status_code == 200 and not stored else "OPEN",
                            f"/api/v1/models?q=probe: {models.status_code}, stored: {stored}"))
    error_page = httpx.request("BREW", f"{base}/")
    missing = [h for h in ("x-content-type-options", "content-security-policy")
               if h not in error_page.headers]
    findings.append(Finding("8", "an error answered outside the handlers (BREW /)",
                            "harmless" if not missing else "OPEN",
                            f"{error_page.status_code}, security headers missing: {missing}"))
    return findings


# --- 9. absolute links ----------------------------------------------------------------------------

def probe_links(service: Service) -> list[Finding]:
    response = httpx.post(
        f"{service.base_url}/api/v1/recommendations",
        json={"model": "llama-3.1-8b", "method": "lora"},
        headers={"Authorization": f"Bearer {service.api_key}", "Host": "evil.example",
                 "X-Forwarded-Host": "evil.example"})
    leaked = "evil.example" in response.text or "evil.example" in str(response.headers)
    links = response.text.count('"quote_url":"http')
    return [Finding("9", "API recommendations (quote_url) with Host: evil.example",
                    "harmless" if response.status_code == 200 and not leaked else "OPEN",
                    f"{response.status_code}, {links} quote_url links, forged host: {leaked}")]


# --- 10. dependency floors ------------------------------------------------------------------------

def probe_dependencies(_: Service) -> list[Finding]:
    from importlib.metadata import version

    floors = {"fastapi": "0.121", "starlette": "0.49.1", "python-multipart": "0.0.18",
              "h11": "0.16", "jinja2": "3.1.6"}

    def as_tuple(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", text)[:3])

    findings = []
    for package, floor in floors.items():
        installed = version(package)
        ok = as_tuple(installed) >= as_tuple(floor)
        findings.append(Finding("10", f"{package} >= {floor}", "harmless" if ok else "OPEN",
                                f"installed {installed}"))
    lock = (ROOT / "requirements.lock").exists() and (ROOT / "requirements-dev.lock").exists()
    findings.append(Finding("10", "lock files committed", "harmless" if lock else "OPEN",
                            "requirements.lock, requirements-dev.lock"))
    return findings


# --- issue 24: control characters, the Hub path, cross-site posts, headers -----------------------

def probe_second(service: Service) -> list[Finding]:
    """The second probe's reproductions (issue 24) that need no Hub of our own (the tests hold
    the Hub path against a fake Hub: waiters, remembered failures, stored revisions, redirects)."""
    base = service.base_url
    nul = httpx.post(f"{base}/q/abc%00def/accept", data={"confirm": "1"})
    api = httpx.post(f"{base}/api/v1/estimates", json={"model": "llama-3.1-8b\x00",
                                                       "method": "lora"},
                     headers={"Authorization": f"Bearer {service.api_key}"})
    lookups = [httpx.get(f"{base}/", params={"model": f"probe/model{n}"}).status_code
               for n in range(12)]
    foreign = httpx.post(f"{base}/quote", data={"item": "gpu:rtx-pro-6000"},
                         headers={"Origin": "https://evil.example"})
    page = httpx.get(f"{base}/")
    _sizer(service, "apikey", "create", "--new-partner", "ACME Compute")
    look_alike = _sizer(service, "apikey", "create", "--new-partner", "ACME Comput\u0435")
    return [
        Finding("24.1", "POST /q/abc%00def/accept", "refused" if nul.status_code == 422
                else "OPEN", f"{nul.status_code}"),
        Finding("24.1", "a NUL in the API's model", "refused" if api.status_code == 422
                else "OPEN", f"{api.status_code}"),
        Finding("24.2", "12 anonymous Hub look-ups from one address",
                "refused" if 429 in lookups and 500 not in lookups else "OPEN",
                f"statuses {sorted(set(lookups))}, first 429 at #{lookups.index(429) + 1}"
                if 429 in lookups else f"statuses {sorted(set(lookups))}"),
        Finding("24.4", "POST /quote with a foreign Origin",
                "refused" if foreign.status_code == 403 else "OPEN", f"{foreign.status_code}"),
        Finding("24.5", "Permissions-Policy, no server banner",
                "harmless" if "permissions-policy" in page.headers
                and "server" not in page.headers else "OPEN",
                f"server: {page.headers.get('server', '-')}"),
        Finding("24.5", "partner 'ACME Comput\\u0435' beside 'ACME Compute'",
                "refused" if look_alike.returncode == 2 else "OPEN",
                look_alike.stderr.strip()[:120]),
    ]


PROBES = (probe_layers, probe_redirect, probe_sign_in, probe_quote_spam, probe_partners,
          probe_metrics, probe_config_values, probe_links, probe_dependencies, probe_second)


def _prepare(service: Service) -> None:
    """Staff accounts the probe signs in as (and fails to)."""
    for email, role in (("sales@probe.example", "sales"), ("admin@probe.example", "admin"),
                        ("importer@probe.example", "admin")):
        made = _sizer(service, "user", "create", email, "--role", role, "--password-stdin",
                      stdin=PASSWORD + "\n")
        if made.returncode != 0:
            raise RuntimeError(f"sizer user create {email}: {made.stderr.strip()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-server", default=DEFAULT_SERVER)
    args = parser.parse_args(argv)
    findings: list[Finding] = []
    # The Hub on a closed loopback port: look-ups fail at once, offline or not (issue 24).
    with running_service(args.database_server, workers=1,
                         extra_env={"SIZER_HUB_ENDPOINT": "http://127.0.0.1:9"}) as service:
        _prepare(service)
        for probe in PROBES:
            findings.extend(probe(service))
    width = max(len(f.what) for f in findings)
    for finding in findings:
        print(f"{finding.point:>3}  {finding.verdict:<8}  {finding.what:<{width}}  "
              f"{finding.detail}")
    still_open = [f for f in findings if f.verdict == "OPEN"]
    print(f"{len(findings)} reproductions: {len(findings) - len(still_open)} refused or harmless,"
          f" {len(still_open)} open")
    return 1 if still_open else 0


if __name__ == "__main__":
    sys.exit(main())
