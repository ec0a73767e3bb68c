"""Android driver round trips: a device addressed by transport id vs by serial, through an adb server
that is a network hop away (a device farm), simulated by the fake adb server's per-request latency.

    .venv/bin/python bench/android.py [--steps 20] [--rtt-ms 20]

Each step is what a rollout does per turn: observe (dumpsys window, uiautomator dump, screencap) and one
tap. By serial, adbutils asks the server's version before every command; by transport id it does not.
The simulated round trip is paid per connection and per request (the driver's check that the server
still answers is one connection per command in both). Prints adb requests and milliseconds per step
for each, and the ratio. The device is the fake adb
server's simulation of notes-android (a test double): the figures measure the protocol, not a phone.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandboxes.actions import Tap  # noqa: E402
from sandboxes.android import AndroidDriver, open_android_driver  # noqa: E402
from sandboxes.manifest import load_manifest  # noqa: E402
from tests.doubles.fake_adb import FakeAdbServer, FakeDevice  # noqa: E402


def run(driver: AndroidDriver, server: FakeAdbServer, steps: int) -> tuple[float, float]:
    driver.reset()
    mark, t0 = len(server.requests), time.perf_counter()
    for i in range(steps):
        driver.observe(screenshot=True)
        driver.act(Tap(x=500, y=60 + (i % 3)))  # on the heading: the screen stays the same
    elapsed = time.perf_counter() - t0
    return (len(server.requests) - mark) / steps, elapsed * 1000 / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rtt-ms", type=float, default=20.0)
    args = parser.parse_args()
    manifest = load_manifest(ROOT / "sandboxes" / "notes-android")
    with FakeAdbServer([FakeDevice("emulator-5554", app_source=manifest.folder)]) as server:
        os.environ["FLYWHEEL_ADB_PORT"] = str(server.port)
        by_id = open_android_driver(manifest)
        server.latency_s = args.rtt_ms / 1000
        try:
            by_serial = AndroidDriver(manifest, by_id.client.device(by_id.serial), client=by_id.client, serial=by_id.serial)
            by_serial.snapshot_path.write_bytes(by_id.snapshot_path.read_bytes())
            serial_req, serial_ms = run(by_serial, server, args.steps)
            id_req, id_ms = run(by_id, server, args.steps)
            by_serial.close()
        finally:
            by_id.close()
    print(f"simulated round trip to the adb server: {args.rtt_ms:.0f} ms, {args.steps} steps (observe + tap) each")
    print(f"by serial:       {serial_req:5.1f} adb requests/step  {serial_ms:7.1f} ms/step")
    print(f"by transport id: {id_req:5.1f} adb requests/step  {id_ms:7.1f} ms/step")
    print(f"ratio serial/transport id: {serial_ms / id_ms:.2f}x time, {serial_req / id_req:.2f}x requests")


if __name__ == "__main__":
    main()
