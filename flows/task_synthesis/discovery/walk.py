"""The discovery walk: uses a live web app as a person would and records every transition with what
it changed. From a reset app (signed in first when the manifest gives an account) it visits the home
page and the pages its links reach, and on each one fills every group of fields by type and
constraints and submits it (a button, or Enter in a lone field), continues into a form a press
reveals (multi-step forms, modals), ticks and presses the controls on records (on records it made
itself too), presses the page's own buttons, and drags cards to the other lists. Controls the
manifest declares sensitive are not pressed on the page; every step starts from a reset, so each
recorded path replays unchanged in the validation gate."""

from __future__ import annotations

import json
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from flows.task_synthesis.discovery.fill import fill_action
from flows.task_synthesis.discovery.page_scan import FieldInfo, Group, PageScan, scan_page
from flows.task_synthesis.discovery.state import DiscoveredState, StateDiff
from sandboxes.actions import parse_actions
from sandboxes.app_process import SandboxError
from sandboxes.manifest import SandboxManifest

MAX_STEPS = 60  # steps (each from a reset) a walk takes; what bounds it, so its yield does not depend on the machine
MAX_SECONDS = 900.0  # a generous wall-clock cap: reaching it is the machine's slowness (said in the notes), not the app's
MAX_PAGES = 8  # pages scanned (the step budget bounds the walk)
MAX_DRAG_SOURCES = 6  # lists whose first card is dragged to every other list
MAX_DRAG_TARGETS = 3  # the nearest other lists each is dragged to
MAX_MENU_ENTRIES = 6  # entries of a record's menu pressed, each from a reset
MAX_IN_PAGE_LINKS = 8  # links to places in the page pressed like buttons
MAX_ALIKE_BUTTONS = 2  # page buttons named alike but for a value (a palette's swatches) pressed on a page
MAX_FORM_STEPS = 3  # groups walked in a row when a press reveals another (modals, a form's next page)
MAX_WIZARD_STEPS = 6  # a wizard's steps walked in a row, each recorded as a step continuing the one before
MAX_CHOICE_GROUPS = 2  # a wizard step's radio groups whose other options are tried, each from where the step starts
ENABLE_POLLS, ENABLE_POLL_S = 12, 0.25  # how long a form's disabled submit is watched for turning on once its fields are typed
MAKING_LINKS = re.compile(r"\b(add|new|create|compose|write|register)\b", re.I)
ACCOUNT_LINKS = re.compile(r"log.?out|sign.?out|password|logout", re.I)  # would end or change the walk's session
DELETING = re.compile(r"\b(delete|remove|trash)\b", re.I)
DECLINING = re.compile(r"\b(no|cancel|back|close|keep)\b", re.I)
LEAVING = re.compile(r"\b(exit|skip|later|quit)\b", re.I)  # ends the form without going on ("Save & exit"): pressed after one that goes on
TEXT_LIKE = ("text", "textarea", "email", "url", "tel", "search", "number", "")
SKIPPED_HREFS = ("mailto:", "tel:", "javascript:", "data:", "http://", "https://")


@dataclass
class Slot:
    """A value the walk typed or chose: where (action index), into what field, and what."""

    index: int
    field: FieldInfo
    value: str


@dataclass
class Transition:
    kind: str  # form | enter | item | page_button | drag | login
    path: list[dict[str, Any]]  # actions from a reset app to where the step starts
    actions: list[dict[str, Any]]
    diff: StateDiff
    slots: list[Slot] = field(default_factory=list)
    heading: str = ""
    button: str = ""
    item: str = ""  # the record acted on (item controls, drags)
    to: str = ""  # the list a card was dragged to
    control: dict[str, Any] = field(default_factory=dict)  # {role, name} of the item control pressed
    page: str = "/"
    url_after: str = ""
    made_by: Transition | None = None  # the create step whose record this step acts on
    continues: Transition | None = None  # the wizard's step before this one: this step's path is that step's path and actions
    leads_on: bool = False  # a wizard's step that ended by showing the next step's fields (its own are gone then)
    typed_state: Any = None  # forms: the manifest's state once the fields were filled, before the press (None: not read)
    text_after: str = ""
    text_before: str = ""  # the page's text before the step (forms): a value it showed already says nothing
    arrival: int = 1  # the first actions of `path` that open the page (after an in-page sign-in); the rest lead to the step


@dataclass
class WalkResult:
    transitions: list[Transition]
    pages: list[str]
    scans: dict[str, PageScan]
    initial: Any
    sign_in: list[dict[str, Any]]
    notes: list[str]
    seconds: float
    state: DiscoveredState | None = None
    steps: int = 0
    capped: bool = False  # the wall-clock cap, not the step budget, ended it (an environment limit)

    @property
    def changing(self) -> list[Transition]:
        return [t for t in self.transitions if t.diff or (t.url_after and urlsplit(t.url_after).query)]


class DiscoveryWalk:
    def __init__(self, driver: Any, manifest: SandboxManifest, seed: int = 0, max_seconds: float = MAX_SECONDS,
                 max_steps: int = MAX_STEPS) -> None:
        self.driver, self.manifest, self.seed = driver, manifest, seed
        self.max_seconds, self.max_steps = max_seconds, max_steps
        self.deadline = time.monotonic() + max_seconds
        self.steps = 0  # resets so far: each step of the walk starts from one
        self.capped = False  # the wall-clock cap ended the walk before its step budget
        self.state = DiscoveredState(manifest, driver)
        self.notes: list[str] = []
        self.transitions: list[Transition] = []
        self.sign_in: list[dict[str, Any]] = []
        self.rng = random.Random(seed)
        self._page_groups: set[str] = set()
        self._shown: set[str] = set()  # names of the buttons the page shows before any press
        self._walked: set[str] = set()  # forms and page buttons done on some page

    # ---- the walk ---------------------------------------------------------------------------------
    def run(self) -> WalkResult:
        start = time.monotonic()
        home = self.manifest.start.home_path if self.manifest.start else "/"
        self.sign_in = self._sign_in()
        self.in_page_login: list[dict[str, Any]] = []
        if self.sign_in and self._session_in_page():
            self.in_page_login, self.sign_in = self.sign_in, []  # each step's path signs in, and never reloads after
            self.notes.append("the sign-in lives in the page (a reload signs out): every step's path signs in first")
        self._reset()
        if self.in_page_login:
            self._do(self.in_page_login)
        initial = self.state.read()
        pages, scans = [home], {}
        queue = [home]
        while queue and len(scans) < MAX_PAGES and not self._late():
            page = queue.pop(0)
            self._reset()
            if not self._do(self._path_to(page)):
                continue
            if (getattr(self.driver, "page_status", None) or 0) >= 400:  # an error page ("View site" with no site)
                self.notes.append(f"{page} answered HTTP {self.driver.page_status}: not walked")
                continue
            scan = scan_page(self.driver)
            if any(_same_view(scan, s) for s in scans.values()):  # another address of a page seen (/ and /index.html)
                continue
            scans[page] = scan
            for link in sorted(scan.links, key=_link_priority):
                target = _same_origin(link["href"], page)
                if (target and target not in pages and not self.manifest.sensitive_kind(link["name"]) and len(pages) < MAX_PAGES * 2
                        and not ACCOUNT_LINKS.search(f"{link['name']} {target}")):
                    pages.append(target)
                    queue.append(target)
            self._explore_page(page, scan)
        for t in self.transitions:
            opening = self._path_to(t.page)
            t.arrival = len(opening) if t.path[: len(opening)] == opening else min(1, len(t.path))
        if self.capped:
            self.notes.append(f"the walk reached its wall-clock cap ({self.max_seconds:.0f} s) after {self.steps} of its "
                              f"{self.max_steps} steps: the machine was too slow for it (an environment limit, not what the "
                              "app offers); rerun on a quieter machine")
        return WalkResult(self.transitions, list(scans), scans, initial, self.sign_in, self.notes, time.monotonic() - start, self.state,
                          self.steps, self.capped)

    def _walked_before(self, key: str) -> bool:
        """Whether the walk already did this (a form, a page button) on another page; marks it done."""
        if key in self._walked:
            return True
        self._walked.add(key)
        return False

    def _path_to(self, page: str) -> list[dict[str, Any]]:
        """A step's path to a page: open it, or, when the sign-in lives in the page, sign in (which ends on
        the login's page) and open another page only after that."""
        if not self.in_page_login:
            return [{"action": "goto", "url": page}]
        login = self.in_page_login[0].get("url")
        return self.in_page_login + ([] if page == login else [{"action": "goto", "url": page}])

    def _session_in_page(self) -> bool:
        self._reset()
        self._do(self.sign_in + [{"action": "goto", "url": self.sign_in[0].get("url", "/")}])
        return self._asks_password()

    def _explore_page(self, page: str, scan: PageScan) -> None:
        path = self._path_to(page)
        self._page_groups = {_name_shape(g.signature()) for g in scan.groups}  # a button named by the colour it shows is the same form
        self._shown = {b["name"] for b in scan.page_buttons} | {c["name"] for c in scan.on_items}
        made: list[Transition] = []  # steps that made records: followed once the page's own controls are walked
        for group in scan.groups:
            if self._late():
                break
            if group.item or self._walked_before(group.signature()):  # the same form on every page (a sidebar's filter)
                continue
            t = self._group_step(path, group, "form" if group.kind != "enter" else "enter", page)
            if t and t.diff:
                made.append(t)
        for ctl in _one_per_kind(scan.on_items + _record_links(scan)):
            if not self._late():
                alike = [c for c in scan.on_items if (c["role"], c["name"]) == (ctl["role"], ctl["name"]) and c["item"] != ctl["item"]]
                self._item_step(path, ctl, page, last=alike[-1] if alike else None)
        for editor in _in_place_texts(scan):
            if not self._late():
                self._in_place_step(path, editor, page)
        if scan.cards and len(scan.zones) > 1 and not self._late():  # a board: its cards move before its page buttons are pressed
            self._drags(path, scan, page)
        alike: dict[str, int] = {}
        for button in scan.page_buttons + _in_page_links(scan):
            if self._late():
                break
            if (self.manifest.sensitive_kind(button["name"]) or ACCOUNT_LINKS.search(button["name"])
                    or self._walked_before(f"button|{button['name']}")):  # a header's button on every page: pressed once
                continue
            shape = _name_shape(button["name"])  # a palette of "Color:#F44336", "Color:#E91E63"...: the first few
            alike[shape] = alike.get(shape, 0) + 1
            if alike[shape] > MAX_ALIKE_BUTTONS:
                continue
            made += self._press_step(path, button, page)
        for t in made:  # breadth first: the records steps made are followed after every control of the page had its turn
            if self._late():
                return
            self._reset()
            if self._do(t.path + t.actions):
                self._on_made_records(page, t)
        if scan.records and not any(t.made_by for t in self.transitions) and not self._late():
            self._on_record(path, page, scan.records[0], scan)

    # ---- steps ------------------------------------------------------------------------------------
    def _group_step(self, path: list[dict], group: Group, kind: str, page: str, heading: str = "", button: str = "",
                    lead: list[dict] | None = None, item: str = "", made_by: Transition | None = None) -> Transition | None:
        """Fill a group and submit it, from a reset; `lead` are the step's first actions (the press that opened
        the form), `made_by` the step that made the record the form edits."""
        rng = random.Random(f"{self.seed}-{group.signature()}")
        self._reset()
        if not self._do(path):
            return None
        before = self.state.read()
        actions = list(lead or [])
        if not self._do(actions):
            return None
        text_before = self._text()
        slots = []
        first: Transition | None = None  # a wizard's first step, once recorded
        previous: Transition | None = None  # the wizard's step this one continues
        revealed = panels = 0
        choices: list[tuple[list[dict], Group, Transition | None]] = []  # (path, a wizard step's fields, the step before)
        while True:
            step_actions, step_slots, pressed = self._fill_and_submit(group, rng, len(actions), item, own=made_by is not None)
            if not self._do(step_actions[:-1]):
                return first
            typed_state = self.state.read().manifest if step_slots and self.manifest.state.page_expression() else None
            if any(b.get("disabled") for b in group.buttons):  # a submit that waits for the fields: typed, see which one is on
                step_actions[-1:], pressed = self._enabled_submit(group, step_actions[-1:], pressed)
            actions += step_actions
            slots += step_slots
            if not self._do(step_actions[-1:]):
                return first
            button = button or pressed
            heading = heading or group.heading
            after = self.state.read()
            diff = self.state.diff(before, after)
            obs_url = self._url()
            if diff or (obs_url and urlsplit(obs_url).query and urlsplit(obs_url).query != urlsplit(page).query):
                nxt = _next_panel(group, scan_page(self.driver)) if diff and pressed and panels < MAX_WIZARD_STEPS else None
                if nxt is None:
                    break
                # a wizard: the press kept what was typed and showed the next step's fields in the same box. This step
                # is recorded, and the next one continues where it ended (its path is this step's path and actions)
                previous = Transition(kind, path, actions, diff, slots, heading, button, page=page, url_after=obs_url,
                                      text_after=self._text(), item=item, made_by=made_by, continues=previous, text_before=text_before,
                                      leads_on=True, typed_state=typed_state)
                self.transitions.append(previous)
                choices.append((path + actions[: len(lead or []) if first is None else 0], group, previous.continues))
                first, panels = first or previous, panels + 1
                path, actions, slots, before, button, group = path + actions, [], [], after, "", nxt
                text_before = self._text()
                continue
            revealed += 1
            nxt = _revealed(group, scan_page(self.driver)) if revealed < MAX_FORM_STEPS else None  # a form the press opened
            if nxt is None:
                break
            group = nxt
        if previous is None or (slots and diff):  # not a wizard's last press that typed or changed nothing
            t = Transition(kind, path, actions, diff, slots, heading, button, page=page, url_after=obs_url,
                           text_after=self._text(), item=item, made_by=made_by, continues=previous, text_before=text_before,
                           typed_state=typed_state)
            self.transitions.append(t)
            first = first or t
            if previous is not None:
                choices.append((path, group, previous))
        for at, fields, before_it in choices:  # a wizard's steps: their other choices, each a step of its own
            self._choices(at, fields, page, before_it)
        return first

    def _choices(self, path: list[dict], group: Group, page: str, continues: Transition | None) -> None:
        """A wizard step's choices (a radio group that comes with one picked: a plan, a size): another option
        picked, from where the step starts, as a step of its own (a person choosing), whose variants are the
        group's other options."""
        picked = {f.group for f in group.fields if f.type == "radio" and f.checked and f.group}
        for name in sorted(picked)[:MAX_CHOICE_GROUPS]:
            options = [f for f in group.fields if f.type == "radio" and f.group == name]
            other = next((f for f in options if not f.checked), None)
            if other is None or self._late():
                continue
            field = FieldInfo(**{**other.__dict__, "options": [{"label": f.label, "value": f.label, "target": f.target, "checked": f.checked}
                                                                 for f in options]})
            act = {"action": "check", "target": field.target, "checked": True}
            t = self._simple("choice", path, [act], page, heading=group.heading, continues=continues)
            if t is not None:
                t.slots = [Slot(0, field, field.label)]

    def _fill_and_submit(self, group: Group, rng: random.Random, offset: int, item: str = "",
                         own: bool = False) -> tuple[list[dict], list[Slot], str]:
        """A person's way through a form: every field it sends gets a valid value, except where the form
        shows a record (its editor: the field holding `item`, or a form mostly filled in already): there one
        value is changed and the rest left as they are. A password typed twice is the same password, a radio
        group keeps its default, a search looks for something the page lists, a phrase the page asks for is
        typed as it stands. On a record the walk made itself (`own`), a delete button may be pressed."""
        actions: list[dict] = []
        slots: list[Slot] = []
        radios_done: set[str] = set()
        editing = _edit_target(group, item)
        password = ""
        for f in _sent_fields(group):
            if f.asked:
                actions.append({"action": "type", "target": f.target, "text": f.asked, "clear": True})
                continue
            if editing is not None and f is not editing:
                continue
            if f.type == "radio":
                if f.group in radios_done or any(o.checked for o in group.fields if o.type == "radio" and o.group == f.group):
                    continue
                radios_done.add(f.group)
            if f.type == "checkbox" and not f.required and rng.random() < 0.5:
                continue
            if f.type == "password" and password:
                made: tuple[dict, str] | None = ({"action": "type", "target": f.target, "text": password, "clear": True}, password)
            else:
                made = fill_action(f, rng, self._listed() if _is_search(f, group) else None)
            if made is None:
                continue
            act, value = made
            password = password or (value if f.type == "password" else "")
            slots.append(Slot(offset + len(actions), f, value))
            actions.append(act)
        pressed = ""
        allowed = ("submit", "delete") if own else ("submit",)
        buttons = [b for b in group.buttons if self.manifest.sensitive_kind(b["name"]) in (None, *allowed) and not b.get("disabled")]
        buttons.sort(key=lambda b: (bool(DECLINING.search(b["name"])), bool(LEAVING.search(b["name"]))))  # Cancel / Close last
        if buttons:
            pressed = buttons[0]["name"]
            actions.append({"action": "left_click", "target": buttons[0]["target"]})
        else:
            actions.append({"action": "key", "keys": ["Enter"]})
        return actions, slots, pressed

    def _enabled_submit(self, group: Group, press: list[dict], pressed: str) -> tuple[list[dict], str]:
        """Once the fields are typed, the button of the group that was disabled and is enabled now is its submit
        (a form that enables its submit when its input is valid); else the press chosen before."""
        waiting = [b for b in group.buttons if b.get("disabled") and not DECLINING.search(b["name"])
                   and self.manifest.sensitive_kind(b["name"]) in (None, "submit")]
        ready = None
        for _ in range(ENABLE_POLLS if waiting else 0):  # an app may check the input after a pause (a debounce)
            try:
                now = scan_page(self.driver)
            except Exception:
                break
            on = {json.dumps(b["target"], sort_keys=True) for g in now.groups for b in g.buttons if not b.get("disabled")}
            on |= {json.dumps(b["target"], sort_keys=True) for b in now.page_buttons}
            ready = next((b for b in waiting if json.dumps(b["target"], sort_keys=True) in on), None)
            if ready is not None:
                return [{"action": "left_click", "target": ready["target"]}], ready["name"]
            time.sleep(ENABLE_POLL_S)
        return press, pressed

    def _listed(self) -> list[str]:
        """What the page lists now, what a person would search for: the names its records link by (a row's
        name), else its records' short texts."""
        try:
            scan = scan_page(self.driver)
        except Exception:
            return []
        named = [lk["name"] for lk in scan.links if lk.get("item") and not lk["href"].startswith(("?", "#")) and lk["href"]
                 and 3 <= len(lk["name"]) <= 40]  # a record's own page, not a sort or filter of the list
        return (named or [r["text"] for r in scan.records if 3 <= len(r["text"]) <= 40])[:20]

    def _on_made_records(self, page: str, made: Transition) -> None:
        """Controls on the records a step made: the step's path plus its actions reach them."""
        typed = _made_values(made)
        if not typed:
            return
        scan = scan_page(self.driver)
        mine = [c for c in scan.on_items + _record_links(scan) if any(v.casefold() in c["item"].casefold() for v in typed)]
        for ctl in _one_per_kind(mine):
            if self._late():
                return
            self._item_step(made.path + made.actions, ctl, page, made_by=made)
        card = next((c for c in scan.cards if any(v.casefold() in c.casefold() for v in typed)), None)
        if card is not None:  # a card it made: drag it to the other lists
            home = next((z for z in scan.zones if card in z["cards"]), None)
            for other in scan.zones:
                if other is not home and not self._late():
                    act = {"action": "left_click_drag", "target": {"text": card}, "to": other["drop"]}
                    self._simple("drag", made.path + made.actions, [act], page, item=card, to=other["heading"], made_by=made)
        # its own page: a link named like it (a row of a list), or the form the create ended on, showing it
        link = next((lk for lk in scan.links if any(v.casefold() == lk["name"].casefold() for v in typed)
                     and _same_origin(lk["href"], page)), None)
        if link is not None and not self._late():
            self._record_page(page, made, [{"action": "left_click", "target": {"role": "link", "name": link["name"]}}], link["name"])
        elif any(_holding(g, typed) for g in scan.groups) and not self._late():
            self._record_page(page, made, [], "")
        record = next((r for r in scan.records if any(v.casefold() in r["text"].casefold() for v in typed)), None)
        if record is not None:
            self._on_record(made.path + made.actions, page, record, scan, made_by=made)

    def _record_page(self, page: str, made: Transition, opened: list[dict], name: str) -> None:
        """On the page of a record the walk made: its form with one value changed (an update), and its delete
        control pressed, with the confirmation a delete asks for — each from a reset, the record made first."""
        path = made.path + made.actions
        self._reset()
        if not self._do(path + opened):
            return
        scan = scan_page(self.driver)
        typed = _made_values(made)
        form = next((g for g in scan.groups if not g.item and _holding(g, typed)), None)
        held = name or next((f.value for g in ([form] if form else []) for f in g.fields
                             if any(v.casefold() == f.value.strip().casefold() for v in typed)), typed[0])
        if form is not None and not self._late():
            self._group_step(path, form, "form", page, heading=form.heading, lead=opened, item=held, made_by=made)
        deletes = [b for b in scan.page_buttons if DELETING.search(b["name"]) and not ACCOUNT_LINKS.search(b["name"])]
        deletes += [{"name": lk["name"], "target": {"role": "link", "name": lk["name"]}} for lk in scan.links
                    if DELETING.search(lk["name"]) and not lk.get("item")]
        if deletes and not self._late():
            self._delete_step(path, opened, deletes[0], page, held, made, {b["name"] for b in scan.page_buttons})

    def _delete_step(self, path: list[dict], opened: list[dict], ctl: dict[str, Any], page: str, item: str,
                     made_by: Transition | None, shown: set[str]) -> Transition | None:
        """Press a delete control; when that only asks for a confirmation (a page or dialog with a new button
        that does not decline), confirm."""
        self._reset()
        if not self._do(path):
            return None
        before = self.state.read()
        actions = opened + [{"action": "left_click", "target": ctl["target"]}]
        if not self._do(actions):
            return None
        diff = self.state.diff(before, self.state.read())
        if not (diff.db or diff.storage or diff.manifest):  # only the page changed: it asks to confirm
            now = scan_page(self.driver)
            confirm = next((b for b in now.page_buttons + [b for g in now.groups for b in g.buttons]
                            if b["name"] not in shown and not DECLINING.search(b["name"]) and not ACCOUNT_LINKS.search(b["name"])), None)
            if confirm is not None:
                actions.append({"action": "left_click", "target": confirm["target"]})
                if not self._do(actions[-1:]):
                    return None
                diff = self.state.diff(before, self.state.read())
        t = Transition("item", path, actions, diff, item=item, control={"role": ctl["target"].get("role", "button"), "name": ctl["name"]},
                       page=page, url_after=self._url(), text_after=self._text(), made_by=made_by)
        self.transitions.append(t)
        return t

    def _on_record(self, path: list[dict], page: str, record: dict[str, Any], scan: PageScan, made_by: Transition | None = None) -> None:
        """What a person finds by pointing at a record: controls shown on hover, and an editor opened
        by a double click (rename in place)."""
        hover = {"action": "mouse_move", "x": record["x"], "y": record["y"]}
        self._reset()
        if self._late() or not self._do(path + [hover]):
            return
        shown = {(c["role"], c["name"], c["item"]) for c in scan.on_items + _record_links(scan)}
        now = scan_page(self.driver)
        revealed = [c for c in now.on_items + _record_links(now)
                    if c["item"] == record["text"] and (c["role"], c["name"], c["item"]) not in shown]
        for ctl in _one_per_kind(revealed):
            if not self._late():
                self._item_step(path, ctl, page, made_by=made_by, lead=[hover])
        if made_by is not None and not record.get("link"):  # rename what it made (a double click on a link follows it)
            self._edit(path, page, record, made_by)

    def _edit(self, path: list[dict], page: str, record: dict[str, Any], made_by: Transition | None) -> None:
        opened = {"action": "double_click", "target": {"text": record["text"]}}
        self._reset()
        if self._late() or not self._do(path):
            return
        before = self.state.read()
        if not self._do([opened]):
            return
        now = scan_page(self.driver)
        editor = next((f for f in now.editors + [f for g in now.groups for f in g.fields] if f.value.strip() == record["text"].strip()), None)
        if editor is None:
            return
        made = fill_action(editor, random.Random(f"{self.seed}-edit-{record['text']}"))
        if made is None:
            return
        actions = [opened, made[0], {"action": "key", "keys": ["Enter"]}]
        if not self._do(actions[1:]):
            return
        diff = self.state.diff(before, self.state.read())
        self.transitions.append(Transition("edit", path, actions, diff, [Slot(1, editor, made[1])], item=record["text"], page=page,
                                           url_after=self._url(), text_after=self._text(), made_by=made_by))

    def _in_place_step(self, path: list[dict], editor: FieldInfo, page: str) -> Transition | None:
        """Type over a text edited where it is shown (a tree editor's value, a cell); when typing alone does not
        change the state, leave the field (Tab), which is what commits such an edit in most apps."""
        made = fill_action(editor, random.Random(f"{self.seed}-in-place-{editor.value}-{editor.target}"))
        if made is None:
            return None
        act, value = made
        self._reset()
        if not self._do(path):
            return None
        before = self.state.read()
        actions = [act]
        if not self._do(actions):
            return None
        diff = self.state.diff(before, self.state.read())
        if not diff:
            actions.append({"action": "key", "keys": ["Tab"]})
            if not self._do(actions[-1:]):
                return None
            diff = self.state.diff(before, self.state.read())
        t = Transition("edit", path, actions, diff, [Slot(0, editor, value)], item=editor.value, page=page,
                       url_after=self._url(), text_after=self._text())
        self.transitions.append(t)
        return t

    def _item_step(self, path: list[dict], ctl: dict[str, Any], page: str, made_by: Transition | None = None,
                   last: dict[str, Any] | None = None, lead: list[dict] | None = None) -> Transition | None:
        """Press a control on a record (after `lead`: the hover that shows it); a press that opens the record's
        editor or a confirmation walks into that form; one that opens a menu walks the menu (and, when the first
        record's menu changes nothing, the `last` alike record's)."""
        act = {"action": "left_click", "target": ctl["target"]}
        lead = lead or []
        before = self._shown
        name = ctl["item"]
        if made_by is not None:  # the record by the name it was typed with, not all its card says (nor a choice)
            name = next((v for v in _made_values(made_by, typed_only=True) if v.casefold() in name.casefold()), name)
        if DELETING.search(ctl["name"]) and ctl["role"] == "button":  # a delete that may ask to confirm (a dialog)
            return self._delete_step(path, lead, {"name": ctl["name"], "target": ctl["target"]}, page, name, made_by, set(before))
        t = self._simple("item", path, lead + [act], page, item=name, control={"role": ctl["role"], "name": ctl["name"]},
                         made_by=made_by)
        if t is None or self._late() or (t.diff and not _view_only(t.diff)):
            return t
        fresh = [g for g in scan_page(self.driver).groups if not g.item and _name_shape(g.signature()) not in self._page_groups]
        if fresh:  # the press opened the record's editor (an Edit link, a pencil): fill it in instead
            self.transitions.remove(t)
            g = fresh[0]
            # the record is what the request names, not the editor's title ("Remove “Team trip”")
            return self._group_step(path, g, "form", page, heading=" ", lead=lead + [act], item=name, made_by=made_by)
        if not made_by and not lead:
            if not self._menu(path, act, ctl, page, before) and last is not None:
                self._item_step(path, last, page)  # the first record's menu changed nothing (a root, a header row): the last one's
        return t

    def _menu(self, path: list[dict], opened: dict[str, Any], ctl: dict[str, Any], page: str, shown: set[str]) -> bool:
        """A press on a record that changed nothing but showed new buttons opened a menu: each of its
        entries (remove, duplicate, insert, sort...) is a step on that record. Whether one changed state."""
        scan = scan_page(self.driver)
        entries = [b for b in scan.page_buttons + [c for c in scan.on_items if c["item"] != ctl["item"]]
                   if b["name"] not in shown and b["name"] != ctl["name"] and not self.manifest.sensitive_kind(b["name"])]
        changed = False
        for b in entries[:MAX_MENU_ENTRIES]:
            if self._late():
                break
            t = self._simple("item", path, [opened, {"action": "left_click", "target": b["target"]}], page, item=ctl["item"],
                             control={"role": "button", "name": b["name"]})
            changed = changed or bool(t and t.diff)
        return changed

    def _press_step(self, path: list[dict], button: dict[str, Any], page: str) -> list[Transition]:
        """Press a page button; a press that opens a form walks into it. The steps that made records."""
        t = self._simple("page_button", path, [{"action": "left_click", "target": button["target"]}], page, button=button["name"])
        if t is None:
            return []
        made = []
        fresh = [g for g in scan_page(self.driver).groups if not g.item and _name_shape(g.signature()) not in self._page_groups]
        if fresh:  # a press that opened a form (a modal, a card editor): walk into it instead
            self.transitions.remove(t)
            for g in fresh[:2]:
                step = self._group_step(path + t.actions, g, "form", page, heading=g.heading or button["name"], button="")
                if step and step.diff:
                    made.append(step)
        return made

    def _drags(self, path: list[dict], scan: PageScan, page: str) -> None:
        """Each of the first few lists' first card to every other list, and within a list of three or
        more, its first card onto its last (a reorder)."""
        named = [z["heading"] for z in scan.zones]
        seen: dict[str, int] = {}
        zones = []
        for z in scan.zones:  # lists under one heading are told apart by their place: "Connected lists, list 2"
            if named.count(z["heading"]) > 1:
                seen[z["heading"]] = seen.get(z["heading"], 0) + 1
                z = {**z, "heading": f"{z['heading']}, list {seen[z['heading']]}"}
            zones.append(z)
        whole = [z.get("named", []) for z in zones]  # cards a text target finds (the scan says which)
        sources = [(z, cards) for z, cards in zip(zones, whole) if cards][:MAX_DRAG_SOURCES]
        for z, cards in sources:
            near = sorted((o for o in zones if o is not z), key=lambda o: abs(o.get("y", 0) - z.get("y", 0)) + abs(o.get("x", 0) - z.get("x", 0)))
            for other in near[:MAX_DRAG_TARGETS]:  # the lists beside it (a far one is scrolled to while holding)
                if self._late():
                    continue
                act = {"action": "left_click_drag", "target": {"text": cards[0]}, "to": other["drop"]}
                self._simple("drag", path, [act], page, item=cards[0], to=other["heading"])
        for z, cards in sources:
            if len(z["cards"]) >= 3 and len(cards) >= 2 and cards[0] == z["cards"][0] and not self._late():
                act = {"action": "left_click_drag", "target": {"text": cards[0]}, "to": {"text": cards[-1]}}
                self._simple("drag", path, [act], page, item=cards[0], to=z["heading"])

    def _simple(self, kind: str, path: list[dict], actions: list[dict], page: str, **kw: Any) -> Transition | None:
        self._reset()
        if not self._do(path):
            return None
        before = self.state.read()
        if not self._do(actions):
            return None
        diff = self.state.diff(before, self.state.read())
        t = Transition(kind, path, actions, diff, page=page, url_after=self._url(), text_after=self._text(), **kw)
        self.transitions.append(t)
        return t

    # ---- signing in -------------------------------------------------------------------------------
    def _sign_in(self) -> list[dict[str, Any]]:
        """The actions that sign in with the manifest's account (registering it first when the app
        offers a sign-up page and the login alone does not work); [] without an [auth] table."""
        auth = getattr(self.manifest, "auth", None)
        if auth is None:
            return []
        self.username = auth.username or f"sandbox{self.seed}"
        self.password = auth.password or f"Tr0ub4dor-{self.seed}-sandbox"
        if getattr(auth, "register_first", False):
            path = getattr(auth, "register_path", None) or auth.login_path
            register = self._credential_actions(auth, path)
            login = self._credential_actions(auth, auth.login_path)
            self._reset()
            if register and login and self._do(register + login) and not self._asks_password():
                self.notes.append(f"registered {self.username!r} at {path}, then signed in")
                return register + login
        login = self._credential_actions(auth, getattr(auth, "login_path", "/login"))
        self._reset()
        if login and self._do(login) and not self._asks_password():
            self.notes.append(f"signed in as {self.username!r} at {auth.login_path}")
            return login
        register_path = getattr(auth, "register_path", None)
        if register_path:
            register = self._credential_actions(auth, register_path)
            self._reset()
            if register and self._do(register + login) and not self._asks_password():
                self.notes.append(f"registered {self.username!r} at {register_path}, then signed in")
                return register + login
        self.notes.append(f"could not sign in at {getattr(auth, 'login_path', '?')} with the manifest's [auth] account")
        return []

    def _credential_actions(self, auth: Any, page: str) -> list[dict[str, Any]]:
        self._reset()
        if not self._do([{"action": "goto", "url": page}]):
            return []
        scan = scan_page(self.driver)
        group = next((g for g in scan.groups if any(f.type == "password" for f in g.fields)), None)
        if group is None:  # a login that asks for a name first (or only: an app without passwords) shows no password yet
            group = next((g for g in scan.groups if any(f.type in ("text", "email") for f in g.fields)), None)
        if group is None:
            return []
        self._login_form = group.signature()
        actions: list[dict[str, Any]] = [{"action": "goto", "url": page}]
        user_label = (getattr(auth, "username_label", None) or "").casefold()
        pass_label = (getattr(auth, "password_label", None) or "").casefold()
        username, password = getattr(self, "username", auth.username), getattr(self, "password", auth.password)
        user_done = False
        rng = random.Random(self.seed)
        for f in group.fields:
            if f.type == "password" or (pass_label and f.spoken.casefold() == pass_label):
                actions.append({"action": "type", "target": f.target, "text": password, "clear": True})
            elif not user_done and ((user_label and f.spoken.casefold() == user_label) or (not user_label and f.type in ("text", "email"))):
                actions.append({"action": "type", "target": f.target, "text": username, "clear": True})
                user_done = True
            elif f.required:
                made = fill_action(f, rng)
                if made:
                    actions.append(made[0])
        buttons = group.buttons
        actions.append({"action": "left_click", "target": buttons[0]["target"]} if buttons else {"action": "key", "keys": ["Enter"]})
        return actions

    def _asks_password(self) -> bool:
        """The page still asks for a password, or still shows the login form (the sign-in did not take),
        given the app a few seconds to answer the form post."""
        for _ in range(6):
            try:
                self.driver.observe(screenshot=False)
                scan = scan_page(self.driver)
            except Exception:  # mid-navigation
                scan = None
            if scan is not None and not any(f.type == "password" or g.signature() == getattr(self, "_login_form", None)
                                            for g in scan.groups for f in g.fields):
                return False
            self._do([{"action": "wait", "seconds": 0.5}])
        return True

    # ---- pieces -----------------------------------------------------------------------------------
    def _reset(self) -> None:
        self.steps += 1
        try:
            self.driver.reset(new_context=False)
        except SandboxError:
            raise
        except Exception:  # the page was mid-navigation (a form post): start a fresh context instead
            self.driver.reset(new_context=True)
        if self.sign_in:
            self._do(self.sign_in)

    def _do(self, actions: list[dict[str, Any]]) -> bool:
        try:
            for act in parse_actions(actions):
                if not self.driver.act(act).ok:
                    return False
        except SandboxError as exc:  # the page would not settle: this step is lost, the walk goes on
            self.notes.append(f"a step was given up: {str(exc).splitlines()[0][:160]}")
            self._lost = getattr(self, "_lost", 0) + 1
            if self._lost > 3:
                raise
            return False
        return True

    def _url(self) -> str:
        try:
            return self.driver.observe(screenshot=False).url
        except Exception:
            return ""

    def _text(self) -> str:
        from verifier_templates.base import Probe

        try:
            return str(self.driver.probe(Probe("text", "page_text")))
        except Exception:
            return ""

    def _late(self) -> bool:
        if time.monotonic() > self.deadline:
            self.capped = True
            return True
        return self.steps >= self.max_steps


def _sent_fields(group: Group) -> list[FieldInfo]:
    """The fields a submit sends: in a form whose fields have names, the nameless ones are widgets (a
    list's filter box, a picker's search) that send nothing; a list of several choices is left as it is
    unless it is required (choosing from it is a step of its own)."""
    named = group.kind == "form" and any(f.named for f in group.fields)
    return [f for f in group.fields if (f.named or not named) and (not f.multiple or f.required)]


SEARCHING = re.compile(r"^(search|find|filter|go|look ?up)$|^(q|query|search|keywords?)$", re.I)


def _is_search(f: FieldInfo, group: Group) -> bool:
    """A search box: by its type or role, its name (q, query), or the one button it is sent with (Search)."""
    return (_searches(f) or (len(group.buttons) == 1 and bool(SEARCHING.match(group.buttons[0]["name"].strip()))))


def _edit_target(group: Group, item: str = "") -> FieldInfo | None:
    """The one field to change when a form shows a record: the field holding the record's name (`item`),
    else, in a form most of whose text fields are filled and none of the required ones empty, the first
    filled one. None for a form to fill in."""
    texty = [f for f in _sent_fields(group) if f.type in TEXT_LIKE and not f.asked and not _is_search(f, group)]
    filled = [f for f in texty if f.value.strip()]
    holding = [f for f in filled if item and f.value.strip().casefold() == item.strip().casefold()]
    if holding:
        return holding[0]
    if group.kind != "form" or 2 * len(filled) < len(texty) or not filled or any(f.required and not f.value.strip() for f in texty):
        return None
    return filled[0]


def _made_values(made: Transition, typed_only: bool = False) -> list[str]:
    """The values a step typed that name what it made: not a search's (the page had those already), not a tick;
    with `typed_only`, not an option chosen either."""
    return [s.value for s in made.slots if len(s.value) >= 3 and s.value != "yes" and not _searches(s.field)
            and not (typed_only and s.field.type in ("select", "radio", "checkbox"))]


def _searches(f: FieldInfo) -> bool:
    return f.type == "search" or f.role == "searchbox" or bool(SEARCHING.match(f.name or ""))


def _holding(group: Group, typed: list[str]) -> bool:
    """The group shows one of the typed values in a field: the record's own form."""
    return any(f.value.strip() and any(v.casefold() == f.value.strip().casefold() for v in typed) for f in group.fields)


def _record_links(scan: PageScan) -> list[dict[str, Any]]:
    """Links on a record that scripts answer (an icon "Edit" or "Delete" in a card, href "" or "#"): controls
    on that record, like its buttons (the scan sees those shown only on hover after one)."""
    return [{"target": {"role": "link", "name": lk["name"]}, "role": "link", "name": lk["name"], "item": lk["item"]}
            for lk in scan.links if lk.get("item") and lk["href"] in ("", "#")]


MAX_IN_PLACE = 8  # texts edited in place, each from a reset


def _in_place_texts(scan: PageScan) -> list[FieldInfo]:
    """Texts edited in place worth a step: the last one of each record first (a row reads "name: value",
    and the value is what a person changes), then the rest, at most MAX_IN_PLACE."""
    texts = [f for f in scan.editors if f.in_place]
    last: dict[str, FieldInfo] = {}
    for f in texts:
        last[f.record or f"#{id(f)}"] = f
    first = list(last.values())
    return (first + [f for f in texts if f not in first])[:MAX_IN_PLACE]


def _view_only(diff: StateDiff) -> bool:
    """Only the page's lists changed, not what the app keeps (its database, storage, the manifest's state): a
    press that opened a dialog or an editor."""
    return not (diff.db or diff.storage or diff.manifest)


def _name_shape(name: str) -> str:
    """A control's name with its values (numbers, colour codes) blanked: alike controls share it."""
    return re.sub(r"#[0-9A-Fa-f]{3,8}\b|#?[0-9A-Fa-f]*\d[0-9A-Fa-f]*", "0", name)


def _in_page_links(scan: PageScan) -> list[dict[str, Any]]:
    """Links to a place in the page ("#next", "#finish") that scripts answer: a wizard's Next and Finish,
    a tab, a menu entry. A person presses them like buttons."""
    names = [link["name"] for link in scan.links]
    return [{"name": link["name"], "target": {"role": link.get("role") or "link", "name": link["name"]}} for link in scan.links
            if (link["href"] == "" or link["href"].startswith("#") and not link["href"].startswith("#/")) and not link.get("item")
            and not ACCOUNT_LINKS.search(link["name"]) and names.count(link["name"]) == 1 and len(link["name"]) < 40][:MAX_IN_PAGE_LINKS]


def _same_view(a: PageScan, b: PageScan) -> bool:
    return (a.title, [g.signature() for g in a.groups], a.cards, [x["name"] for x in a.page_buttons]) == (
        b.title, [g.signature() for g in b.groups], b.cards, [x["name"] for x in b.page_buttons])


def _link_priority(link: dict[str, str]) -> int:
    """Pages that make records first (a person adding data looks for Add / New), then the rest."""
    return 0 if MAKING_LINKS.search(link["name"]) else 1


def _one_per_kind(controls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first record's control of each (role, name): pressing the same kind on every row adds nothing."""
    seen, out = set(), []
    for c in controls:
        key = (c["role"], c["name"])
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _revealed(done: Group, scan: PageScan) -> Group | None:
    """A group the press revealed (not the one just submitted), with empty fields to fill."""
    for g in scan.groups:
        if g.item or g.signature() == done.signature():
            continue
        if any(not f.value and f.type not in ("checkbox", "radio") for f in g.fields):
            return g
    return None


def _next_panel(done: Group, scan: PageScan) -> Group | None:
    """A wizard's next step: after a press that kept what was typed, the same box (its heading, a button it had)
    shows other fields to fill, none of those just filled."""
    names = {b["name"] for b in done.buttons}
    filled = {f.spoken for f in done.fields}
    for g in scan.groups:
        if g.item or g.heading != done.heading or not names & {b["name"] for b in g.buttons}:
            continue
        if not filled & {f.spoken for f in g.fields} and any(not f.value and f.type not in ("checkbox", "radio") for f in g.fields):
            return g
    return None


def _same_origin(href: str, page: str) -> str | None:
    if not href or href.startswith("#") and not href.startswith("#/") or href.startswith(SKIPPED_HREFS):
        return None
    if href.startswith("#/"):
        return urlsplit(page).path + href
    url = urljoin("http://app" + page, href)
    parts = urlsplit(url)
    if parts.netloc != "app":
        return None
    if parts.path.endswith((".css", ".js", ".png", ".jpg", ".svg", ".ico", ".pdf", ".zip", ".json", ".md")):
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "") + (f"#{parts.fragment}" if parts.fragment.startswith("/") else "")
