"""The coverage model of a sandbox: which areas exist (screens, form actions, data entities; from its
source and from exploration) and how well verified tasks, trajectories and mined failures cover them.

Area keys are the same on every side: a screen is its route pattern (`/messages/<>`), an action the
method and pattern its form posts to (`POST /messages/<>/star`), an entity its table (`table messages`).
Forms and screens found only by exploring get keys of the same shape, marked `exploration`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from flows.exploration.ui_tree import url_pattern
from flows.task_synthesis.app_model import AppModel, build_app_model
from flows.task_synthesis.source import read_source
from lake import Lake
from sandboxes.manifest import SandboxManifest

KINDS = ("screen", "action", "entity")
IGNORED_PATHS = ("/health", "/static")
FAILURE_RATE_TARGET = 0.5  # areas whose trajectories fail this often are explored too
UNNAMED_FORM = "(no name)"  # a form with no label and no button name: a lone field sent with Enter
UNKNOWN_PAGE = "(page not known)"  # a form submitted before any page of the task was opened


@dataclass
class Area:
    key: str
    kind: str  # screen | action | entity
    exists_from: str  # source | exploration
    form_labels: list[re.Pattern] = field(default_factory=list)  # actions: the forms that post here
    buttons: list[str] = field(default_factory=list)
    templates: list[str] = field(default_factory=list)  # screens: the templates the page renders


@dataclass
class AreaCoverage:
    area: str
    kind: str
    exists_from: str
    verified_tasks: int = 0
    trajectories: int = 0
    failures: int = 0

    @property
    def failure_rate(self) -> float:
        return self.failures / self.trajectories if self.trajectories else 0.0


class AppAreas:
    """Every known area of one sandbox, and the mapping from URLs and forms to area keys."""

    def __init__(self, model: AppModel | None) -> None:
        self.areas: dict[str, Area] = {}
        self._screens: list[tuple[re.Pattern, str]] = []
        self.model = model
        if model is None:
            return
        for route in model.routes:
            if route.path.startswith(IGNORED_PATHS):
                continue
            regex = re.compile("^" + re.escape(route.pattern).replace("<>", "[^/]+") + "/?$")
            if "GET" in route.methods:
                self.areas.setdefault(route.pattern, Area(route.pattern, "screen", "source", templates=route.templates))
                self._screens.append((regex, route.pattern))
            if "POST" in route.methods:
                key = f"POST {route.pattern}"
                area = self.areas.setdefault(key, Area(key, "action", "source"))
                for form in model.forms:
                    if form.method == "post" and model.route_for_action(form) is route:
                        if form.label:
                            area.form_labels.append(_label_regex(form.label))
                        area.buttons += [b for b in form.buttons if b not in area.buttons]
        for form in model.forms:  # GET forms (search) lead to a screen
            if form.method == "get" and (route := model.route_for_action(form)) is not None and route.pattern in self.areas:
                area = self.areas[route.pattern]
                if form.label:
                    area.form_labels.append(_label_regex(form.label))
                area.buttons += [b for b in form.buttons if b not in area.buttons]
        for table in model.tables.values():
            if "id" in table.columns:
                self.areas[f"table {table.name}"] = Area(f"table {table.name}", "entity", "source")

    @classmethod
    def from_source(cls, manifest: SandboxManifest) -> AppAreas:
        try:
            return cls(build_app_model(read_source(manifest)))
        except Exception:  # an app whose source we cannot read is known from exploration alone
            return cls(None)

    # ---- mapping ------------------------------------------------------------------------------
    def screen(self, url: str) -> str:
        path = urlsplit(url).path or "/"
        for regex, key in self._screens:
            if regex.match(path):
                return key
        return url_pattern(path)

    def action(self, form_label: str, button: str, screen: str | None) -> str:
        """The area a form submission belongs to: the source route its form posts to, when the form's
        name (or, failing that, its button on this screen) identifies one; else an exploration key."""
        actions = [a for a in self.areas.values() if a.form_labels or a.buttons]
        if form_label:  # the most specific form name wins ("Remove .+ from wishlist" over "Remove .+")
            named = [
                (len(r.pattern), a.key) for a in actions for r in a.form_labels
                if r.fullmatch(form_label) and (_has_button(a, button) or not a.buttons)
            ]
            if named:
                return max(named)[1]
        templates = set(self.areas[screen].templates) if screen in self.areas else set()
        if self.model is not None and templates:
            for a in actions:
                if _has_button(a, button) and any(
                    f.template in templates and (not form_label or not f.label)
                    for f in self.model.forms
                    if any(_label_regex(b).fullmatch(button) for b in f.buttons) and self._route_key(f) == a.key
                ):
                    return a.key
        name = re.sub(r"[0-9]+", "#", form_label or button) or UNNAMED_FORM  # an unlabelled field sent with Enter
        return f"form {name} on {screen or UNKNOWN_PAGE}"

    def _route_key(self, form) -> str | None:
        route = self.model.route_for_action(form) if self.model else None
        if route is None:
            return None
        return f"POST {route.pattern}" if form.method == "post" else route.pattern

    def add_explored(self, key: str, kind: str) -> None:
        if key and key not in self.areas:
            self.areas[key] = Area(key, kind, "exploration")

    def task_areas(self, reference: list[dict[str, Any]], verifier: dict[str, Any]) -> set[str]:
        """Areas a task touches: the screens its reference opens, the forms it submits, the tables its
        verifier reads."""
        found: set[str] = set()
        screen = None
        typed_into = ""  # a lone field's name, when Enter submits it
        for act in reference:
            kind, target = act.get("action", ""), act.get("target") or {}
            if kind == "goto":
                screen = self.screen(act.get("url", "/"))
                found.add(screen)
            elif kind.endswith("click") and target.get("role") in ("button", "checkbox"):
                within = target.get("within") or "" if target["role"] == "button" else ""
                found.add(self.action(within, target.get("name") or "", screen))
            elif kind == "key" and act.get("keys") == ["Enter"] and typed_into:
                found.add(self.action("", typed_into, screen))
            typed_into = target.get("name") or "" if kind == "type" and target.get("role") and not target.get("within") else ""
        found |= {f"table {t}" for t in _verifier_tables(verifier)}
        return found


def _has_button(area: Area, button: str) -> bool:
    return any(_label_regex(b).fullmatch(button) for b in area.buttons)


def _label_regex(label: str) -> re.Pattern:
    neutral = re.sub(r"\{\{.*?\}\}", "\0", label)
    return re.compile(re.escape(neutral).replace("\0", ".+").replace("<>", ".+"), re.S)


def _verifier_tables(verifier: dict[str, Any]) -> list[str]:
    params = verifier.get("params") or {}
    tables = [params["table"]] if isinstance(params.get("table"), str) else []
    for check in params.get("checks") or []:
        tables += _verifier_tables(check)
    return tables


# ---- measuring --------------------------------------------------------------------------------------
def explored_areas(lake: Lake, sandbox: str) -> list[tuple[str, str]]:
    """Areas earlier explore runs found that the source does not show: (key, kind)."""
    if not lake.files("coverage"):
        return []
    rows = lake.query("SELECT DISTINCT area, area_kind FROM coverage WHERE sandbox = ? AND exists_from = 'exploration'", [sandbox])
    return list(dict.fromkeys((current_area_name(r["area"]), r["area_kind"]) for r in rows))


def current_area_name(key: str) -> str:
    """An area key as this version names it: lakes of earlier versions hold `form  on /` for a form with no name
    and `form X on ?` for one on a page not known."""
    if key.startswith("form  on "):
        key = f"form {UNNAMED_FORM} on {key.removeprefix('form  on ')}"
    if key.startswith("form ") and key.endswith(" on ?"):
        key = f"{key.removesuffix('?')}{UNKNOWN_PAGE}"
    return key


def measure(lake: Lake, sandbox: str, areas: AppAreas) -> list[AreaCoverage]:
    """Coverage of every known area by verified tasks, trajectories and mined failures."""
    cov = {k: AreaCoverage(k, a.kind, a.exists_from) for k, a in areas.areas.items()}
    task_areas: dict[str, set[str]] = {}
    if lake.files("tasks"):
        for r in lake.query(
            "SELECT task_id, status, reference_json, verifier_json FROM tasks WHERE sandbox = ?", [sandbox]
        ):
            touched = areas.task_areas(json.loads(r["reference_json"] or "[]"), json.loads(r["verifier_json"] or "{}"))
            task_areas[r["task_id"]] = touched
            if r["status"] == "verified":
                for key in touched:
                    _bump(cov, areas, key, "verified_tasks")
    if lake.files("trajectories"):
        urls: dict[str, set[str]] = {}
        if lake.files("steps"):
            for r in lake.query(
                "SELECT DISTINCT s.trajectory_id, s.url FROM steps s JOIN trajectories t USING (trajectory_id) "
                "WHERE t.sandbox = ? AND s.url IS NOT NULL", [sandbox]
            ):
                urls.setdefault(r["trajectory_id"], set()).add(areas.screen(r["url"]))
        for r in lake.query("SELECT trajectory_id, task_id FROM trajectories WHERE sandbox = ?", [sandbox]):
            for key in task_areas.get(r["task_id"], set()) | urls.get(r["trajectory_id"], set()):
                _bump(cov, areas, key, "trajectories")
    if lake.files("failures"):
        for r in lake.query("SELECT task_id FROM failures WHERE sandbox = ?", [sandbox]):
            for key in task_areas.get(r["task_id"], set()):
                _bump(cov, areas, key, "failures")
    return sorted(cov.values(), key=lambda c: (KINDS.index(c.kind), c.area))


def _bump(cov: dict[str, AreaCoverage], areas: AppAreas, key: str, what: str) -> None:
    if key not in cov:  # a task or trajectory reaching an area no one listed yet
        kind = "action" if key.startswith(("POST ", "form ")) else "entity" if key.startswith("table ") else "screen"
        areas.add_explored(key, kind)
        cov[key] = AreaCoverage(key, kind, "exploration")
    setattr(cov[key], what, getattr(cov[key], what) + 1)


def share_covered(coverage: list[AreaCoverage]) -> float:
    return sum(1 for c in coverage if c.verified_tasks) / len(coverage) if coverage else 0.0


def pick_targets(coverage: list[AreaCoverage], k: int) -> list[str]:
    """The k thinnest explorable areas (fewest verified tasks, then fewest trajectories), plus areas
    whose trajectories fail often when failures were mined."""
    explorable = [c for c in coverage if c.kind in ("action", "screen")]
    thin = sorted(explorable, key=lambda c: (c.verified_tasks, c.trajectories, c.kind != "action", c.area))[:k]
    failing = [c for c in explorable if c.trajectories and c.failure_rate >= FAILURE_RATE_TARGET]
    return list(dict.fromkeys([c.area for c in thin] + [c.area for c in failing]))


def coverage_rows(coverage: list[AreaCoverage], run_id: str, sandbox: str, phase: str, now: Any) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run_id, "sandbox": sandbox, "area": c.area, "area_kind": c.kind, "exists_from": c.exists_from,
            "phase": phase, "verified_tasks": c.verified_tasks, "trajectories": c.trajectories,
            "failures": c.failures, "recorded_at": now,
        }
        for c in coverage
    ]


def render_coverage(sandbox: str, coverage: list[AreaCoverage]) -> str:
    """A readable markdown report: the share covered, then every area with its counts."""
    covered = sum(1 for c in coverage if c.verified_tasks)
    lines = [
        f"## {sandbox}: {covered} of {len(coverage)} areas have a verified task ({share_covered(coverage):.0%})", "",
        "| area | kind | from | verified tasks | trajectories | failures |", "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| `{c.area}` | {c.kind} | {c.exists_from} | {c.verified_tasks} | {c.trajectories} | {c.failures} |" for c in coverage
    ]
    return "\n".join(lines)
