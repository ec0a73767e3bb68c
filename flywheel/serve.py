"""`flywheel serve`: every deployment in prefect.yaml, served from one process, against the local Prefect
server (flywheel/prefect_server.py) when no other is configured.

`prefect.serve` needs no work pool, worker or pull step: this process polls the API and runs each
flow run in a subprocess from the repo folder, which works offline on one machine. prefect.yaml
also names a process work pool, so `prefect deploy --all` + `prefect worker start` run the same
deployments on many machines.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from flywheel import prefect_server
from flywheel.prefect_server import DEFAULT_PORT

REPO = Path(__file__).resolve().parents[1]


@dataclass
class DeploymentSpec:
    """One entry of prefect.yaml's `deployments`."""

    name: str
    entrypoint: str  # path/to/flow.py:function
    parameters: dict[str, Any] = field(default_factory=dict)
    crons: list[str] = field(default_factory=list)
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    concurrency_limit: int | None = None


def load_specs(prefect_yaml: Path) -> list[DeploymentSpec]:
    try:
        doc = yaml.safe_load(prefect_yaml.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read {prefect_yaml}: {exc}; run from the repo root or pass --prefect-yaml") from None
    specs = []
    for i, d in enumerate(doc.get("deployments") or []):
        if not d.get("name") or not d.get("entrypoint"):
            raise ValueError(f"{prefect_yaml}: deployment #{i + 1} needs a name and an entrypoint (path/flow.py:function)")
        specs.append(DeploymentSpec(
            name=d["name"], entrypoint=d["entrypoint"], parameters=d.get("parameters") or {},
            crons=[s["cron"] for s in d.get("schedules") or [] if "cron" in s],
            description=d.get("description"), tags=d.get("tags") or [], concurrency_limit=d.get("concurrency_limit"),
        ))
    return specs


def load_flow(spec: DeploymentSpec, root: Path = REPO):
    """The flow object behind an entrypoint; raises ImportError naming the entrypoint when it does not load."""
    from prefect.flows import load_flow_from_entrypoint

    path, _, func = spec.entrypoint.partition(":")
    if not (root / path).exists():
        raise ImportError(f"{spec.entrypoint}: no file {path}")
    try:
        return load_flow_from_entrypoint(f"{root / path}:{func}", use_placeholder_flow=False)
    except Exception as exc:  # a missing function, a syntax error, an import inside the flow module
        raise ImportError(f"{spec.entrypoint}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc


def unknown_parameters(spec: DeploymentSpec, flow) -> list[str]:
    accepted = inspect.signature(flow.fn).parameters
    return sorted(set(spec.parameters) - set(accepted))


def missing_parameters(spec: DeploymentSpec, flow) -> list[str]:
    """Flow parameters without a default that the deployment does not give: every scheduled run would fail."""
    required = [n for n, p in inspect.signature(flow.fn).parameters.items() if p.default is inspect.Parameter.empty]
    return sorted(set(required) - set(spec.parameters))


def serve(prefect_yaml: Path, port: int = DEFAULT_PORT, limit: int = 2, server_timeout_s: float = 300.0) -> int:
    """Serve every deployment whose entrypoint imports, until Ctrl-C, against PREFECT_API_URL or else a local
    server (the one `flywheel server start` left running, or one started here and stopped on exit)."""
    specs = load_specs(prefect_yaml)
    root = prefect_yaml.resolve().parent
    home, started = prefect_server.prefect_home(), False
    api_url = os.environ.get("PREFECT_API_URL")
    if not api_url:
        print(f"starting a local Prefect server on 127.0.0.1:{port} (state in {home}; first start ~15 s)…", flush=True)
        state, started = prefect_server.start(port, home, server_timeout_s)
        api_url = os.environ["PREFECT_API_URL"] = state.api_url  # before prefect is imported: its settings are read then
    try:
        os.chdir(root)  # flow runs start in this folder, where the entrypoints' paths are relative to
        return _serve_specs(specs, root, api_url, limit)
    except KeyboardInterrupt:
        return 0
    finally:
        if started:
            prefect_server.stop(home)


def build_deployments(specs: list[DeploymentSpec], root: Path = REPO) -> tuple[list, list[str], list[str]]:
    """Runner deployments for the specs that load; (deployments, their names, a note per skipped spec)."""
    deployments, names, skipped = [], [], []
    for spec in specs:
        try:
            flow = load_flow(spec, root)
        except ImportError as exc:
            skipped.append(f"skipped {spec.entrypoint} ({spec.name}): it does not import — {exc}")
            continue
        bad, missing = unknown_parameters(spec, flow), missing_parameters(spec, flow)
        if bad or missing:
            skipped.append(f"skipped {flow.name}/{spec.name}: in prefect.yaml, "
                           + "; ".join(([f"parameters the flow does not take: {', '.join(bad)}"] if bad else [])
                                       + ([f"required parameters not given: {', '.join(missing)}"] if missing else [])))
            continue
        deployments.append(flow.to_deployment(
            name=spec.name, cron=spec.crons or None, parameters=spec.parameters, description=spec.description,
            tags=spec.tags, concurrency_limit=spec.concurrency_limit,
            _sync=True,  # Prefect picks sync or async by its caller's context; we are always sync here
        ))
        names.append(f"{flow.name}/{spec.name}")
    return deployments, names, skipped


def _serve_specs(specs: list[DeploymentSpec], root: Path, api_url: str, limit: int) -> int:
    deployments, names, skipped = build_deployments(specs, root)
    for note in skipped:
        print(note, flush=True)
    if not deployments:
        print("no deployment to serve", file=sys.stderr)
        return 2
    from prefect.exceptions import TerminationSignal
    from prefect.runner import Runner

    runner = Runner(limit=limit)
    for deployment in deployments:  # registered with the API here, so a run triggered after the message finds it
        runner.add_deployment(deployment, _sync=True)
    print(f"serving {len(deployments)} deployments: {', '.join(names)}", flush=True)
    print("trigger one from another terminal, e.g.:\n"
          f"  PREFECT_API_URL={api_url} prefect deployment run '{names[0]}' --watch", flush=True)
    try:
        asyncio.run(runner.start())
    except TerminationSignal:
        pass
    return 0
