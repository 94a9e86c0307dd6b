"""Build the service image (`make image`): docker where a daemon answers, buildah otherwise.

With docker, the Dockerfile starts from Debian's ``debian:bookworm-slim``. Without a daemon (our
machines, CI) nothing can be pulled either, so the base is made the way Debian makes it: Debian's
own ``debootstrap --variant=minbase bookworm`` from this machine's Debian mirror (the one apt is
configured with), packed into a tarball kept in a cache directory outside the checkout
(``SIZER_IMAGE_CACHE``, else ``$XDG_CACHE_HOME/gpu-sizer``, else ``~/.cache/gpu-sizer``), and
committed as :data:`BASE_TAG`. Then ``buildah bud`` builds the Dockerfile FROM that tag with
chroot isolation, keeping every layer so that a code change rebuilds only the last one. The
storage driver is overlay where buildah can mount one (a layer holds only its changes), else
vfs (plain copies: what works without a daemon, user namespaces or overlay mounts).

Package downloads here go through a proxy with its own certificate authority: the machine's CA
bundle is mounted read-only into the build and handed to pip (the Dockerfile's ``PIP_CERT``).

Both need root (debootstrap writes device nodes, buildah's chroot isolation chroots);
:func:`unavailable` says why this machine cannot build, for the container test's skip reason.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE_TAG = "localhost/gpu-sizer-base:bookworm"
IMAGE_TAG = "localhost/gpu-sizer:latest"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
CA_IN_BUILD = "/run/host-ca.crt"
VFS = ("buildah", "--storage-driver", "vfs")
"""vfs: plain directory copies, the one storage driver that needs no kernel overlay support.
Every layer is a full copy of the file system (some 400 MB): a code change took 72-108 s to
rebuild the last layer here."""
OVERLAY_ROOT = Path("/var/lib/containers/overlay")
OVERLAY_RUNROOT = Path("/run/containers/overlay")
OVERLAY = ("buildah", "--root", str(OVERLAY_ROOT), "--runroot", str(OVERLAY_RUNROOT),
           "--storage-driver", "overlay")
"""overlay where the kernel lets buildah mount it: a layer holds only what changed, so a code
change rebuilds in about 11 s (10.7 s in the container test, 4.7 s built alone; a first build
44.5-58 s against vfs's 127.5 s, docs/performance.md). A storage root of its own: buildah
refuses to open a root with another driver than the one that made it, and the default root
may hold vfs images from before."""
DRIVER_ENV = "SIZER_BUILDAH_DRIVER"
"""Set to ``vfs`` or ``overlay`` to skip the probe (:func:`buildah`)."""
SIZE_UNITS = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9}
"""buildah prints sizes in decimal units."""
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))


def cache_dir() -> Path:
    """Where the debootstrap tarball is kept between runs (outside the checkout)."""
    configured = os.environ.get("SIZER_IMAGE_CACHE")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "gpu-sizer"


def _source_texts() -> list[str]:
    files: list[Path] = []
    for place in APT_SOURCES:
        if place.is_dir():
            files.extend(sorted(place.glob("*.list")) + sorted(place.glob("*.sources")))
        elif place.is_file():
            files.append(place)
    return [path.read_text(encoding="utf-8", errors="replace") for path in files]


def debian_mirror(texts: Sequence[str] | None = None) -> str:
    """The Debian archive apt on this machine uses (one-line or deb822 sources), else
    deb.debian.org. Security and third-party archives are passed over: only an archive that
    serves the bookworm suite itself is a mirror debootstrap can install from."""
    for text in _source_texts() if texts is None else texts:
        for line in text.splitlines():
            one_line = re.match(r"\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
            if one_line and one_line.group(2) == SUITE:
                return one_line.group(1).rstrip("/")
        for stanza in re.split(r"\n\s*\n", text):
            fields: dict[str, str] = dict(re.findall(r"(?m)^(\w[\w-]*):\s*(.*)$", stanza))
            if SUITE in fields.get("Suites", "").split() and "deb" in fields.get("Types",
                                                                                 "").split():
                return fields.get("URIs", DEFAULT_MIRROR).split()[0].rstrip("/")
    return DEFAULT_MIRROR


def shipped(relative: str, rules: Sequence[str] | None = None) -> bool:
    """Whether the build context carries the file at ``relative`` (a path in the checkout),
    by .dockerignore's rules as docker and buildah read them: the last rule that matches the
    path or one of its parent directories decides, ``!`` lets through again."""
    if rules is None:
        rules = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    parts = Path(relative).parts
    candidates = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
    verdict = True
    for line in rules:
        rule = line.strip()
        if not rule or rule.startswith("#"):
            continue
        keep = rule.startswith("!")
        pattern = rule.lstrip("!").strip("/")
        if pattern.startswith("**/"):
            tail = pattern[3:]
            hit = any(fnmatch.fnmatchcase(part, tail) for part in parts)
        else:
            hit = any(fnmatch.fnmatchcase(path, pattern) for path in candidates)
        if hit:
            verdict = keep
    return verdict


def docker_daemon() -> bool:
    """True when a docker client is installed and its daemon answers."""
    if shutil.which("docker") is None:
        return False
    answered = subprocess.run(
        ["docker", "info"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return answered.returncode == 0


def overlay_mounts() -> bool:
    """Whether buildah can mount an overlay container here: made, mounted and removed once."""
    made = subprocess.run([*OVERLAY, "from", "scratch"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=False)
    container = made.stdout.strip()
    if made.returncode != 0 or not container:
        return False
    try:
        mounted = subprocess.run([*OVERLAY, "mount", container], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, check=False)
        return mounted.returncode == 0
    finally:
        subprocess.run([*OVERLAY, "rm", container], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)


@functools.cache
def buildah() -> tuple[str, ...]:
    """The buildah command with its storage: overlay where it mounts, else vfs; once a
    process (the answer does not change while it runs). :data:`DRIVER_ENV` decides instead."""
    chosen = os.environ.get(DRIVER_ENV, "").strip()
    if chosen in ("vfs", "overlay"):
        return VFS if chosen == "vfs" else OVERLAY
    return OVERLAY if shutil.which("buildah") and overlay_mounts() else VFS


def unavailable() -> str | None:
    """Why this machine cannot build and run the image with buildah, or None if it can."""
    missing = [tool for tool in ("buildah", "debootstrap") if shutil.which(tool) is None]
    if missing:
        return (
            f"{' and '.join(missing)} not installed (Debian packages buildah, debootstrap; "
            ".ci/run installs them)"
        )
    if os.geteuid() != 0:
        return "debootstrap and buildah's chroot isolation need root"
    return None


def _run(command: Sequence[str], **kwargs: object) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(list(command), check=True, **kwargs)  # type: ignore[call-overload]


def base_tarball(mirror: str | None = None) -> Path:
    """The minimal bookworm root file system as a tarball, made once per cache directory."""
    cache = cache_dir()
    tarball = cache / f"{SUITE}-minbase.tar.gz"
    if tarball.is_file():
        return tarball
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="debootstrap-") as scratch:
        rootfs = Path(scratch) / "rootfs"
        _run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), mirror or debian_mirror()])
        # What debian:bookworm-slim leaves out too: downloaded packages and package lists.
        for leftover in (rootfs / "var/cache/apt/archives").glob("*.deb"):
            leftover.unlink()
        shutil.rmtree(rootfs / "var/lib/apt/lists", ignore_errors=True)
        (rootfs / "var/lib/apt/lists/partial").mkdir(parents=True)
        partial = Path(scratch) / "rootfs.tar.gz"
        _run(["tar", "-C", str(rootfs), "--numeric-owner", "-czf", str(partial), "."])
        partial.replace(tarball)
    return tarball


def _has_image(tag: str) -> bool:
    found = subprocess.run(
        [*buildah(), "images", "--quiet", tag],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False,
    )
    return found.returncode == 0 and bool(found.stdout.strip())


def base_image() -> str:
    """:data:`BASE_TAG` in buildah's storage, committed from :func:`base_tarball` if missing."""
    if _has_image(BASE_TAG):
        return BASE_TAG
    tarball = base_tarball()
    container = subprocess.run(
        [*buildah(), "from", "scratch"], stdout=subprocess.PIPE, text=True, check=True
    ).stdout.strip()
    _run([*buildah(), "add", container, str(tarball), "/"])
    _run([*buildah(), "config", "--cmd", "/bin/bash", container])
    _run([*buildah(), "commit", "--rm", container, BASE_TAG])
    return BASE_TAG


def _image_id(tag: str) -> str | None:
    found = subprocess.run(
        [*buildah(), "images", "--quiet", "--no-trunc", tag],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False,
    )
    return found.stdout.strip() or None if found.returncode == 0 else None


def build_with_buildah(tag: str = IMAGE_TAG) -> None:
    """``buildah bud`` of the Dockerfile FROM :func:`base_image`, layers kept for the next run.

    The image ``tag`` named before is removed once the new one has its name: with vfs every
    image is a full copy of its file system (some 400 MB), and CI builds on every run. The
    layers it shares with the new image (the cached base, Debian's Python, the dependencies)
    stay. The storage is :func:`buildah`'s: overlay where it mounts, else vfs."""
    base = base_image()
    previous = _image_id(tag)
    command = [
        *buildah(), "bud", "--isolation", "chroot", "--network", "host", "--layers",
        "--format", "docker",  # OCI images have no HEALTHCHECK
        "--pull-never", "--build-arg", f"BASE_IMAGE={base}", "--tag", tag,
    ]
    if CA_BUNDLE.is_file():
        command += [
            "--volume", f"{CA_BUNDLE}:{CA_IN_BUILD}:ro", "--build-arg", f"PIP_CERT={CA_IN_BUILD}",
        ]
    _run([*command, str(ROOT)])
    if previous is not None and previous != _image_id(tag):
        subprocess.run([*buildah(), "rmi", previous], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def image_size(tag: str) -> int:
    """The image's size in bytes (all layers, uncompressed), from buildah's "387 MB"."""
    listed = subprocess.run(
        [*buildah(), "images", "--json", tag], stdout=subprocess.PIPE, text=True, check=True
    )
    number, unit = str(json.loads(listed.stdout)[0]["size"]).split()
    return round(float(number) * SIZE_UNITS[unit])


def build_with_docker(tag: str = IMAGE_TAG) -> None:
    """``docker build``: Debian's own debian:bookworm-slim is the base."""
    _run(["docker", "build", "--tag", tag, str(ROOT)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.image", description=__doc__)
    parser.add_argument("--tag", default=IMAGE_TAG, help=f"image name (default {IMAGE_TAG})")
    args = parser.parse_args(argv)
    started = time.monotonic()
    if docker_daemon():
        build_with_docker(args.tag)
    else:
        reason = unavailable()
        if reason is not None:
            print(f"cannot build the image: no docker daemon, and {reason}", file=sys.stderr)
            return 2
        build_with_buildah(args.tag)
    print(f"built {args.tag} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
