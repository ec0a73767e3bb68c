"""The Docker engine and the offline images flywheel runs containers from.

No registry is reachable from these machines, so images are imported from a root filesystem built
here: busybox (from Debian's busybox-static package) for a shell and coreutils, with the host's own
Python interpreter and flywheel's virtualenv bind-mounted read-only at the same paths. The image stays
tiny (a container start copies it under the vfs storage driver) and the interpreter inside is the one
the tests already trust; nothing from the host is writable inside.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

BASE_IMAGE = "flywheel/base:busybox"
ENGINE_FIX = "start one with `scripts/start-docker` (installs Debian's docker.io when missing)"


class DockerUnavailable(Exception):
    """No Docker engine answers; the message says how to start one."""


def docker_client():
    """A connected docker SDK client, or DockerUnavailable naming the fix."""
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
        return client
    except Exception as exc:  # the SDK raises several kinds for a missing socket
        raise DockerUnavailable(f"no Docker engine answers ({type(exc).__name__}); {ENGINE_FIX}") from None


def engine_available() -> tuple[bool, str]:
    """(True, version) when an engine answers, else (False, the reason and fix) — for skips and doctor."""
    try:
        return True, docker_client().version().get("Version", "?")
    except DockerUnavailable as exc:
        return False, str(exc)


def _busybox_rootfs(into: Path) -> None:
    """Unpacks Debian's busybox-static into `into` and links its applets (sh, ls, cat, …) into /bin."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(["apt-get", "download", "busybox-static"], cwd=tmp, capture_output=True, text=True)
        debs = list(Path(tmp).glob("busybox-static_*.deb"))
        if done.returncode != 0 or not debs:
            raise DockerUnavailable(
                f"cannot fetch Debian's busybox-static for the base image: {done.stderr.strip()[-300:]}; "
                "run `apt-get update` (Debian's package registry must be reachable)"
            )
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(into)], check=True)
    busybox = into / "bin" / "busybox"
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout.split()
    for applet in applets:
        link = into / "bin" / applet
        if not link.exists():
            link.symlink_to("busybox")
    for d in ("tmp", "work", "proc", "sys", "dev", "etc", "usr", "lib", "lib64", "root"):
        (into / d).mkdir(exist_ok=True)
    (into / "tmp").chmod(0o1777)
    (into / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n")
    (into / "etc" / "group").write_text("root:x:0:\nnogroup:x:65534:\n")


def ensure_base_image(client=None) -> str:
    """The busybox base image's tag, importing it once per engine (~0.5 s)."""
    client = client or docker_client()
    try:
        client.images.get(BASE_IMAGE)
        return BASE_IMAGE
    except Exception:
        pass
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        raise DockerUnavailable("building the base image needs apt-get and dpkg-deb (a Debian machine)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "rootfs"
        root.mkdir()
        _busybox_rootfs(root)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(root, arcname=".")
        repo, tag = BASE_IMAGE.split(":")
        client.api.import_image_from_data(buf.getvalue(), repository=repo, tag=tag)
    return BASE_IMAGE


def host_python_mounts() -> dict[str, dict[str, str]]:
    """Read-only bind mounts that make this interpreter and its packages usable inside the base image:
    the Python installation, the virtualenv, and the system libraries they link against."""
    paths = {Path(sys.base_prefix), Path(sys.prefix), Path("/usr/lib"), Path("/lib"), Path("/lib64")}
    return {str(p): {"bind": str(p), "mode": "ro"} for p in sorted(paths) if p.exists()}


def container_python() -> str:
    """The interpreter path to run inside a container started with host_python_mounts()."""
    return sys.executable
