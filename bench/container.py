"""What a container sandbox costs per episode and per action: resetting the workspace sandbox (a fresh
container with the seed, booted on reset or swapped in from the warm spare) against resetting the shop (a SQLite snapshot restored into a running app
process, the baseline), a shell action through `docker exec`, a file probe through the engine, and a
page load through the unix-socket forwarder against the same page served on a TCP port.

    .venv/bin/python bench/container.py [--runs 10]

Prints the median and p90 milliseconds of each and the ratios to the baselines.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandboxes.app_process import AppProcess
from sandboxes.container import ContainerApp
from sandboxes.docker_images import engine_available
from sandboxes.manifest import load_manifest
from sandboxes.registry import SHIPPED_DIR


def timings(call, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        out.append((time.perf_counter() - t0) * 1000)
    return sorted(out)


def fetch(url: str) -> None:
    with urllib.request.urlopen(url, timeout=30) as r:
        r.read()


def row(name: str, ms: list[float], baseline: list[float] | None) -> str:
    med = statistics.median(ms)
    ratio = f"{med / statistics.median(baseline):8.1f}x" if baseline else "baseline".rjust(9)
    return f"{name:58} {med:9.1f} {ms[int(len(ms) * 0.9) - 1 if len(ms) > 1 else 0]:9.1f} {ratio}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    ok, why = engine_available()
    if not ok:
        sys.exit(f"bench/container.py needs a Docker engine: {why}")
    workspace = load_manifest(SHIPPED_DIR / "workspace")
    lines = [f"{'':58} {'median ms':>9} {'p90 ms':>9} {'ratio':>9}"]
    with AppProcess(load_manifest(SHIPPED_DIR / "shop")) as shop:
        shop_reset = timings(shop.restore, args.runs)
        lines.append(row("reset: shop, SQLite snapshot restore (baseline)", shop_reset, None))
        with ContainerApp(workspace, warm_spare=False) as cold:
            lines.append(row("reset: workspace, fresh container + seed, booted on reset", timings(cold.restore, args.runs), shop_reset))
        with ContainerApp(workspace) as app:

            def warm_reset() -> None:
                app._spare_thread.join()  # an episode longer than a boot: the spare is ready (not timed)
                t0 = time.perf_counter()
                app.restore()
                warm.append((time.perf_counter() - t0) * 1000)

            warm: list[float] = []
            for _ in range(args.runs):
                warm_reset()
            lines.append(row("reset: workspace, swapping in the warm spare", sorted(warm), shop_reset))
            shell = timings(lambda: app.exec("ls -l data && wc -l data/budget.csv"), args.runs)
            lines.append(row("shell action: docker exec (ls; wc)", shell, None))
            probe = timings(lambda: app.read_file("data/budget.csv"), args.runs)
            lines.append(row("file probe: get_archive of a CSV", probe, shell))
            tcp = AppProcess(workspace.model_copy(update={"start": workspace.start.model_copy(update={
                "command": ["{python}", "app.py", "--port", "{port}", "--root", str(Path(tempfile.mkdtemp()) / "ws"),
                            "--seed", "seed"]})}))
            tcp.manifest.folder = workspace.folder
            with tcp:
                direct = timings(lambda: fetch(tcp.base_url + "/view/data/budget.csv"), args.runs * 3)
                lines.append(row("page: /view/data/budget.csv, app on a TCP port (baseline)", direct, None))
                forwarded = timings(lambda: fetch(app.base_url + "/view/data/budget.csv"), args.runs * 3)
                lines.append(row("page: the same, in the container via the forwarder", forwarded, direct))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
