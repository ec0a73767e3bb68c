"""The explorer: breadth-first over a live app's abstract states (URL pattern + the structure of its UI
tree), through any Driver. It follows links to unseen URL patterns, submits each form once with
plausible values (and target areas' forms a few more times, on other pages of the same kind and with
other values), records every transition with what it changed, and never performs a control the
manifest declares sensitive unless the action is marked with a `call_user` confirmation first.

Every submission starts from a reset sandbox and replays the path that reached its page, so each
recorded transition (path + actions) replays the same way in the validation gate.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from flows.exploration.coverage import AppAreas
from flows.exploration.state_diff import StateReader, state_reader
from flows.exploration.ui_tree import (
    Affordances,
    FormAffordance,
    FormField,
    abstract_state,
    affordances,
    parse_ui_tree,
    url_pattern,
)
from flows.task_synthesis.values import value_for
from sandboxes.actions import parse_actions
from sandboxes.driver import Driver
from sandboxes.manifest import SandboxManifest

LOOKUP_WORDS = ("code", "coupon", "sku")  # fields whose value must match data the app already has
NAME_COLUMNS = ("name", "title", "subject", "label")
SKIPPED_SCHEMES = ("mailto:", "tel:", "javascript:", "data:")


@dataclass
class ExploreConfig:
    max_steps: int = 200
    max_seconds: float = 120.0
    max_depth: int = 3  # submissions chained from a link-reached page
    variants: int = 3  # tries of each form in a target area (other pages of its kind, other values)
    sensitive: Literal["skip", "confirm"] = "skip"  # confirm: press after a call_user confirmation
    seed: int = 0
    links: Literal["pattern", "url"] = "pattern"  # follow one link per URL pattern, or every distinct URL (naive)


@dataclass
class StateInfo:
    state_id: str
    url: str
    path: list[dict[str, Any]]  # actions from a reset sandbox to this state
    depth: int
    screen: str
    affordances: Affordances


@dataclass
class Transition:
    from_state: str
    from_url: str
    path: list[dict[str, Any]]
    actions: list[dict[str, Any]]
    to_state: str | None
    to_url: str | None
    diff: dict[str, Any]
    area: str
    sensitive: str | None = None
    outcome: str = "performed"  # performed | skipped_sensitive | error
    revisit: bool = False
    error: str | None = None
    fills: dict[str, str] = field(default_factory=dict)  # field label -> value typed or chosen
    form_label: str = ""
    button: str = ""
    buttons: int = 1  # how many buttons the form has (the request names the one pressed when several)
    submit: str = "button"  # how the form was submitted: button | enter | check
    net: dict[str, Any] = field(default_factory=dict)  # the change from a reset sandbox, path included

    @property
    def changed_state(self) -> bool:
        return bool(self.diff)

    def to_row(self, run_id: str, sandbox: str, now: Any) -> dict[str, Any]:
        diff = self.diff | ({"error": self.error} if self.error else {})
        return {
            "run_id": run_id, "sandbox": sandbox, "from_state": self.from_state, "from_url": self.from_url,
            "path_json": json.dumps(self.path), "action_json": json.dumps(self.actions), "to_state": self.to_state,
            "to_url": self.to_url, "diff_json": json.dumps(diff, default=str, sort_keys=True),
            "changed_state": self.changed_state, "area": self.area, "sensitive": self.sensitive,
            "outcome": self.outcome, "revisit": self.revisit, "recorded_at": now,
        }


@dataclass
class ExploreResult:
    transitions: list[Transition]
    states: dict[str, StateInfo]
    steps: int
    seconds: float

    @property
    def performed(self) -> list[Transition]:
        return [t for t in self.transitions if t.outcome == "performed"]

    @property
    def revisit_share(self) -> float:
        done = self.performed
        return sum(t.revisit for t in done) / len(done) if done else 0.0

    @property
    def states_per_minute(self) -> float:
        return len(self.states) / (self.seconds / 60) if self.seconds else 0.0


@dataclass(order=True)
class _Item:
    priority: int
    seq: int
    kind: str = field(compare=False)  # goto | submit
    url: str = field(compare=False, default="")
    state_id: str = field(compare=False, default="")
    form: FormAffordance | None = field(compare=False, default=None)
    button: str = field(compare=False, default="")
    variant: int = field(compare=False, default=0)


class Explorer:
    def __init__(
        self, driver: Driver, manifest: SandboxManifest, areas: AppAreas, targets: set[str] | None = None,
        config: ExploreConfig | None = None, covered: set[str] | None = None,
    ) -> None:
        """targets: areas explored first and tried `variants` times; covered: areas that already have
        verified tasks (any other area's forms are tried `variants` times too, when covered is given)."""
        self.driver = driver
        self.manifest = manifest
        self.areas = areas
        self.targets = set(targets or ())
        self.covered = covered
        self.config = config or ExploreConfig()
        self.rng = random.Random(self.config.seed)
        self._seq = itertools.count()
        self._queue: list[_Item] = []
        self.states: dict[str, StateInfo] = {}
        self.transitions: list[Transition] = []
        self._queued_patterns: set[str] = set()
        self._tried_forms: set[str] = set()
        self._instances: dict[str, list[str]] = {}  # URL pattern -> concrete URLs seen in links
        self._here: str | None = None  # the abstract state the browser shows now
        self._dirty = False  # the app's state changed since the last reset
        self.reader: StateReader | None = None
        self.app_values: dict[str, list[str]] = {}
        self.initial: Any = None  # the app's state at reset

    # ---- the loop -------------------------------------------------------------------------------
    def run(self) -> ExploreResult:
        start = time.monotonic()
        deadline = start + self.config.max_seconds
        self.driver.reset()
        self.reader = state_reader(self.manifest, self.driver)
        self.initial = self.reader.read()
        self.app_values = _app_values(self.initial) if self.reader.kind == "sqlite" else {}
        self._push("goto", url=self.manifest.start.home_path if self.manifest.start else "/")
        for key, area in self.areas.areas.items():  # target screens reachable without parameters
            if key in self.targets and area.kind == "screen" and "<>" not in key:
                self._push("goto", url=key)
        steps = 0
        while self._queue and steps < self.config.max_steps and time.monotonic() < deadline:
            item = heapq.heappop(self._queue)
            if item.kind == "goto":
                steps += self._visit(item)
            else:
                steps += self._submit(item)
        return ExploreResult(self.transitions, self.states, steps, time.monotonic() - start)

    def _push(self, kind: str, priority: int = 1, **kw: Any) -> None:
        if kind == "goto":
            pattern = url_pattern(kw["url"]) if self.config.links == "pattern" else kw["url"]
            if pattern in self._queued_patterns:
                return
            self._queued_patterns.add(pattern)
            priority = 0 if self.areas.screen(kw["url"]) in self.targets else priority
        heapq.heappush(self._queue, _Item(priority, next(self._seq), kind, **kw))

    # ---- steps ------------------------------------------------------------------------------------
    def _visit(self, item: _Item) -> int:
        if self._dirty:
            self._reset()
        before = self.reader.read()
        action = {"action": "goto", "url": item.url}
        result = self.driver.act(parse_actions([action])[0])
        origin, origin_url = self._here or "start", self._current_url()
        if not result.ok:
            self._record(Transition(origin, origin_url, [], [action], None, None, {}, self.areas.screen(item.url), outcome="error", error=result.error))
            return 1
        state, url, tree = self._observe()
        diff = self.reader.diff(before, self.reader.read())
        self._dirty |= bool(diff)
        revisit = state in self.states
        self._record(Transition(origin, origin_url, [], [action], state, url, diff, self.areas.screen(url), revisit=revisit))
        if not revisit:
            self._register(state, url, [action], 1, tree)
        return 1

    def _submit(self, item: _Item) -> int:
        node, form, button = self.states[item.state_id], item.form, item.button
        rng = random.Random(f"{self.config.seed}-{item.state_id}-{form.signature(button)}-{item.variant}")
        path = node.path
        if item.variant and len(node.path) == 1:  # another page of the same kind, when links showed one
            others = [u for u in self._instances.get(url_pattern(node.url), []) if u != node.url]
            if others:
                path = [{"action": "goto", "url": others[(item.variant - 1) % len(others)]}]
        area = self.areas.action(form.label, button, node.screen)
        kind = self._sensitive(form, button)
        if kind and self.config.sensitive == "skip":
            fills, actions = self._fill(form, rng, node)
            click = self._press(node.affordances, form, button)
            self._record(Transition(node.state_id, node.url, path, [*actions, click], None, None, {}, area, kind,
                                    "skipped_sensitive", fills=fills, form_label=form.label, button=button))
            return 0
        if not self._go(path):
            return 1
        here, url = self._here, self._current_url()
        page = self.states[here]
        same = [f for f in page.affordances.forms if button in f.buttons and self.areas.action(f.label, button, page.screen) == area]
        if not same:  # this page of the kind does not offer the form (e.g. Unstar instead of Star)
            return 1
        live = same[item.variant % len(same)]  # variants on a list page act on other rows
        fills, actions = self._fill(live, rng, page)
        if kind:
            actions.append({"action": "call_user", "reason": f"This will {kind} ({button}). Shall I go ahead?"})
        actions.append(self._press(page.affordances, live, button))
        before = self.reader.read()
        for i, act in enumerate(parse_actions(actions)):
            result = self.driver.act(act)
            if not result.ok:
                self._dirty = True
                self._record(Transition(here, url, path, actions[: i + 1], None, None, {}, area, kind, "error",
                                        error=result.error, fills=fills, form_label=live.label, button=button))
                return 1
        state, to_url, tree = self._observe()
        after = self.reader.read()
        diff = self.reader.diff(before, after)
        self._dirty |= bool(diff)
        revisit = state in self.states
        self._record(Transition(here, url, path, actions, state, to_url, diff, area, kind, revisit=revisit,
                                fills=fills, form_label=live.label, button=button, buttons=len(live.buttons), submit=live.submit,
                                net=self.reader.diff(self.initial, after)))
        if not revisit and node.depth < self.config.max_depth:
            self._register(state, to_url, path + actions, node.depth + 1, tree)
        if item.variant == 0 and (area in self.targets or (self.covered is not None and area not in self.covered)):
            for v in range(1, self.config.variants):
                self._push("submit", 0, state_id=node.state_id, form=form, button=button, variant=v)
        return 1

    # ---- pieces -----------------------------------------------------------------------------------
    def _register(self, state: str, url: str, path: list[dict], depth: int, tree) -> None:
        found = affordances(tree)
        screen = self.areas.screen(url)
        self.areas.add_explored(screen, "screen")
        self.states[state] = StateInfo(state, url, path, depth, screen, found)
        for name, href in found.links:
            target = _same_origin(href, url)
            if target is None or self.manifest.sensitive_kind(name):
                continue
            pattern = url_pattern(target)
            seen = self._instances.setdefault(pattern, [])
            if target not in seen and len(seen) < 20:
                seen.append(target)
            self._push("goto", url=target)
        for form in found.forms:
            for button in form.buttons:
                area = self.areas.action(form.label, button, screen)
                sig = f"{area}|{button}"
                if sig in self._tried_forms:
                    continue
                self._tried_forms.add(sig)
                self.areas.add_explored(area, "action")
                self._push("submit", 0 if area in self.targets else 1, state_id=state, form=form, button=button)

    def _go(self, path: list[dict]) -> bool:
        """Bring the app to the start of a submission: reset when state changed, replay the path."""
        if self._dirty or len(path) > 1:
            self._reset()
        for act in parse_actions(path):
            if not self.driver.act(act).ok:
                self._dirty = True
                return False
        state, url, tree = self._observe()
        if state not in self.states:  # a page of a known kind with a different structure
            self.states[state] = StateInfo(state, url, path, 1, self.areas.screen(url), affordances(tree))
        self._dirty |= len(path) > 1
        return True

    def _reset(self) -> None:
        self.driver.reset(new_context=False)
        self._dirty = False
        self._here = None

    def _observe(self):
        obs = self.driver.observe(screenshot=False)
        tree = parse_ui_tree(obs.ui_tree)
        self._here = abstract_state(obs.url, tree)
        self._url = obs.url
        return self._here, obs.url, tree

    def _current_url(self) -> str:
        return getattr(self, "_url", "") if self._here else ""

    def _record(self, t: Transition) -> None:
        self.transitions.append(t)

    def _sensitive(self, form: FormAffordance, button: str) -> str | None:
        kind = self.manifest.sensitive_kind(button)
        if kind:
            return kind
        for f in form.fields:
            if self.manifest.sensitive_kind(f.label) == "password":
                return "password"
        return None

    def _fill(self, form: FormAffordance, rng: random.Random, node: StateInfo) -> tuple[dict[str, str], list[dict]]:
        """Empty text fields get plausible values; when nothing was empty, one field changes (an edit)."""
        fills: dict[str, str] = {}
        actions: list[dict] = []
        changeable = [f for f in form.fields if f.role != "radio" and (f.role != "combobox" or len(f.options) > 1)]
        empty = [f for f in changeable if f.role in ("textbox", "searchbox", "spinbutton") and not f.value]
        chosen = empty or ([rng.choice(changeable)] if changeable else [])
        for f in chosen:
            act = self._value(f, form, node, rng)
            if act is not None:
                actions.append(act)
                fills[f.label or "text"] = str(act.get("text", act.get("option", act.get("checked"))))
        return fills, actions

    def _value(self, f: FormField, form: FormAffordance, node: StateInfo, rng: random.Random) -> dict | None:
        target = self._field_target(node.affordances, form, f.label) if form.submit == "button" else {"role": f.role, "name": f.label}
        if not f.label:  # a field without a label: by its role and its place on the page
            target = {"role": f.role, "nth": f.nth} if f.nth else {"role": f.role}
        if f.role == "combobox":
            options = [o for o in f.options if o != f.selected and o.strip() and not o.strip().startswith(("—", "-", "Choose", "Select"))]
            return {"action": "select", "target": target, "option": rng.choice(options)} if options else None
        if f.role == "checkbox":
            return {"action": "check", "target": target, "checked": not f.checked}
        column = re.sub(r"\W+", "_", f.label.strip().casefold()).strip("_")
        data = self._app_value(column, f.role, rng)
        if data is not None:
            return {"action": "type", "target": target, "text": data}
        input_type = "number" if f.role == "spinbutton" else "date" if "date" in column else "text"
        return {"action": "type", "target": target, "text": str(value_for(column, "", input_type, rng))}

    def _app_value(self, column: str, role: str, rng: random.Random) -> str | None:
        """Values the app already holds, for fields that look something up (a coupon code, a search)."""
        words = column.split("_")
        if role == "searchbox" or column in ("search", "q", "query"):
            names = [v for c in NAME_COLUMNS for v in self.app_values.get(c, [])]
            return " ".join(rng.choice(names).split()[:2]) if names else None
        for w in LOOKUP_WORDS:
            if w in words and self.app_values.get(w):
                return rng.choice(self.app_values[w])
        return None

    def _press(self, found: Affordances, form: FormAffordance, button: str) -> dict[str, Any]:
        """The action that submits: a click on the button, Enter in a lone field, a checkbox toggle."""
        if form.submit == "enter":
            return {"action": "key", "keys": ["Enter"]}
        if form.submit == "check":
            return {"action": "left_click", "target": {"role": "checkbox", "name": button}}
        return {"action": "left_click", "target": self._button_target(found, form, button)}

    def _field_target(self, found: Affordances, form: FormAffordance, label: str) -> dict[str, Any]:
        if form.label_unique:
            return {"label": label, "within": form.label}
        nth = 0
        for f in found.forms:
            if f is form:
                break
            nth += sum(1 for x in f.fields if x.label == label)
        return {"label": label, "nth": nth} if nth else {"label": label}

    def _button_target(self, found: Affordances, form: FormAffordance, button: str) -> dict[str, Any]:
        if form.label_unique:
            return {"role": "button", "name": button, "within": form.label}
        nth = 0
        for f in found.forms:
            if f is form:
                break
            nth += f.buttons.count(button)
        return {"role": "button", "name": button, "nth": nth} if nth else {"role": "button", "name": button}


def _same_origin(href: str, page_url: str) -> str | None:
    """A link's path (and query) when it stays on the app, else None."""
    parts, page = urlsplit(href), urlsplit(page_url)
    if href.startswith("#/"):  # a script-routed view of the same page
        return (page.path or "/") + href
    if not href or href.startswith("#") or href.startswith(SKIPPED_SCHEMES):
        return None
    if parts.netloc and parts.netloc != page.netloc:
        return None
    if parts.path.startswith("/static/"):
        return None
    path = parts.path or page.path
    if not path.startswith("/"):
        path = page.path.rsplit("/", 1)[0] + "/" + path
    return path + (f"?{parts.query}" if parts.query else "") + (f"#{parts.fragment}" if parts.fragment.startswith("/") else "")


def _app_values(snapshot: dict[str, Any]) -> dict[str, list[str]]:
    """Short text values per column name from the app's DB (for lookup fields)."""
    out: dict[str, list[str]] = {}
    for table in snapshot.values():
        cols = table["columns"]
        for row in itertools.islice(table["rows"].values(), 300):
            for c, v in zip(cols, row):
                if isinstance(v, str) and 0 < len(v) <= 40 and (c in LOOKUP_WORDS or c in NAME_COLUMNS):
                    vals = out.setdefault(c, [])
                    if v not in vals:
                        vals.append(v)
    return out
