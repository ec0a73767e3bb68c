"""What a person sees on a page, read from the live DOM by one JS expression (so any driver that runs
JS probes can use it): fields with their type and constraints, the groups they are submitted in,
controls on records of a list, and what can be dragged where. Every control comes with a semantic
target (label, role + name, role + place, or text) that the driver resolves the same way on replay."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verifier_templates.base import Probe

# Roles the way Playwright's get_by_role sees them; fields without a role (date, time) need a label.
SCAN_JS = r"""(() => {
  const vis = el => { if (!el || !el.isConnected) return false; const s = getComputedStyle(el);
    if (s.display === 'none' || s.visibility === 'hidden') return false;
    const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && !el.closest('[aria-hidden="true"],[hidden]')
      && r.bottom + scrollY > 0 && r.right + scrollX > 0; };  // not parked off the page until focused (a "Skip to content" link)
  const squash = t => (t || '').replace(/\s+/g, ' ').trim();
  // innerText leaves hidden parts out but applies CSS text-transform, which accessible names do not: the
  // DOM's own case when the two differ only in case (a label styled uppercase is still named "hex")
  const text = el => { const shown = squash(el.innerText), raw = squash(el.textContent);
    return shown.toLowerCase() === raw.toLowerCase() ? raw : (shown || raw); };
  // a label as Playwright's get_by_label reads it: its text content, where the page only lays it out over
  // lines ("Starter<br>$0/mo" shows as "Starter $0/mo" but is labelled "Starter$0/mo")
  const laidOut = el => { const shown = text(el), raw = squash(el.textContent);
    return shown.replace(/\s+/g, '') === raw.replace(/\s+/g, '') ? raw : shown; };
  const realLabel = (el, read = text) => {
    if (el.getAttribute('aria-label')) return squash(el.getAttribute('aria-label'));
    const by = el.getAttribute('aria-labelledby');
    if (by) { const t = by.split(/\s+/).map(i => document.getElementById(i)).filter(Boolean).map(read).join(' '); if (t) return t; }
    if (el.id) { const l = document.querySelector('label[for="' + CSS.escape(el.id) + '"]'); if (l && read(l)) return read(l); }
    const wrap = el.closest('label'); if (wrap && read(wrap)) return read(wrap);
    return '';
  };
  // the words a person reads just before a field when no label is tied to it (a <label> whose `for` names
  // no id, a "Type:" text): how a request names the field, never how a target finds it
  const shownLabel = el => {
    for (let n = el.previousSibling, k = 0; n && k < 4; n = n.previousSibling, k++) {
      if (n.nodeType === 3) { const t = squash(n.textContent); if (t) return t.length < 40 ? t.replace(/:$/, '') : ''; continue; }
      if (n.nodeType !== 1) continue;
      if (n.tagName === 'LABEL') { const t = text(n); return t.length < 40 ? t.replace(/:$/, '') : ''; }
      if (n.tagName !== 'BR') return '';
    }
    return '';
  };
  // a phrase the page asks to be typed into the field ("please enter the phrase DELETE in the box below")
  const askedPhrase = el => {
    for (let n = el.previousElementSibling, k = 0; n && k < 3; n = n.previousElementSibling, k++) {
      const em = n.querySelector && n.querySelector('strong, b, code, kbd');
      if (em && /\b(type|enter)\b/i.test(text(n)) && squash(em.textContent) && squash(em.textContent).length < 40) return squash(em.textContent);
    }
    return '';
  };
  const linkName = a => text(a) || squash(a.getAttribute('aria-label'))
    || [...a.querySelectorAll('img[alt]')].map(i => squash(i.alt)).join(' ').trim() || squash(a.getAttribute('title'));
  const roleOf = el => {
    const r = el.getAttribute('role'); if (r) return r;
    const t = el.tagName.toLowerCase(), ty = (el.getAttribute('type') || '').toLowerCase();
    if (t === 'textarea') return 'textbox';
    if (t === 'select') return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    if (t === 'button' || (t === 'input' && ['submit', 'button', 'reset', 'image'].includes(ty))) return 'button';
    if (t === 'input') {
      if (ty === 'checkbox') return 'checkbox'; if (ty === 'radio') return 'radio';
      if (ty === 'number') return 'spinbutton'; if (ty === 'range') return 'slider';
      if (ty === 'search') return el.getAttribute('list') ? 'combobox' : 'searchbox';
      if (['', 'text', 'email', 'tel', 'url', 'password'].includes(ty)) return ty === 'password' ? '' : (el.getAttribute('list') ? 'combobox' : 'textbox');
      return '';
    }
    if (t === 'a' && el.hasAttribute('href')) return 'link';
    return '';
  };
  const nameOf = el => realLabel(el) || squash(el.getAttribute('placeholder')) || (['button', 'option'].includes(roleOf(el)) ? (text(el) || squash(el.value) || squash(el.title)) : '') || squash(el.title);
  const roleIndex = {};
  const all = [...document.querySelectorAll('input, textarea, select, button, [role=button], [role=checkbox], [role=textbox], [role=combobox], [role=radio], [role=switch], [role=option]')].filter(vis);
  const seen = new Map();
  all.forEach(el => { const r = roleOf(el), n = nameOf(el);
    roleIndex[r] = (roleIndex[r] || 0); el.__fwNthRole = roleIndex[r]++;
    const key = r + '|' + n; seen.set(key, (seen.get(key) || 0)); el.__fwNthName = seen.get(key); seen.set(key, el.__fwNthName + 1); });
  const labelCount = {}; all.forEach(el => { const l = realLabel(el); if (l) labelCount[l] = (labelCount[l] || 0) + 1; });
  const target = el => {
    const r = roleOf(el), l = realLabel(el), n = nameOf(el);
    if (l && labelCount[l] === 1 && r !== 'button' && r !== 'option') return {label: realLabel(el, laidOut)};
    if (r && n) return el.__fwNthName ? {role: r, name: n, nth: el.__fwNthName} : {role: r, name: n};
    if (r) return el.__fwNthRole ? {role: r, nth: el.__fwNthRole} : {role: r};
    return l ? {label: realLabel(el, laidOut)} : null;
  };
  const heading = el => {  // the title a person reads above a group or a list
    if (el.id && /^[A-Za-z][\w-]*$/.test(el.id) && el.id.length < 40 && /^(UL|OL|DIV|SECTION|MAIN|TBODY)$/.test(el.tagName)) return el.id.replace(/[-_]+/g, ' ').trim();
    for (let up = el, k = 0; up && k < 4; up = up.parentElement, k++) {
      const lab = up.getAttribute && (up.getAttribute('aria-label') || '');
      if (lab && up !== el) return squash(lab);
      let sib = up.previousElementSibling;
      for (let j = 0; sib && j < 3; sib = sib.previousElementSibling, j++) {
        if (/^H[1-6]$/.test(sib.tagName) || sib.tagName === 'LEGEND' || sib.tagName === 'HEADER' || /title|header|heading/i.test(sib.className)) { const t = text(sib); if (t && t.length < 60) return t; }
        const inner = sib.querySelector && sib.querySelector('h1, h2, h3, h4, h5, h6, legend');  // a column beside it that starts with a heading
        if (inner && text(inner) && text(inner).length < 60) return text(inner);
      }
      const h = up.querySelector && up.querySelector(':scope > h1, :scope > h2, :scope > h3, :scope > h4, :scope > legend, :scope > header');
      if (h && h !== el && text(h).length < 60) return text(h);
    }
    return el.id ? el.id.replace(/[-_]+/g, ' ').trim() : '';
  };
  const fieldOf = el => {
    const t = el.tagName.toLowerCase(); const ty = t === 'input' ? (el.getAttribute('type') || 'text').toLowerCase() : t;
    const tg = target(el); if (!tg) return null;
    const f = {target: tg, role: roleOf(el), type: ty, label: realLabel(el) || squash(el.getAttribute('placeholder')) || shownLabel(el) || squash(el.name) || squash(el.title),
      named: !!el.getAttribute('name'), multiple: !!el.multiple, asked: askedPhrase(el),
      name: el.name || el.id || '', required: !!el.required, pattern: el.getAttribute('pattern') || '', min: el.getAttribute('min') || '',
      max: el.getAttribute('max') || '', step: el.getAttribute('step') || '', minlength: el.minLength > 0 ? el.minLength : 0, maxlength: el.maxLength > 0 ? el.maxLength : 0,
      value: ty === 'checkbox' || ty === 'radio' ? '' : (el.value || ''), checked: !!el.checked, options: []};
    if (t === 'select') f.options = [...el.options].filter(o => !o.disabled).map(o => ({label: squash(o.label || o.text), value: o.value}));
    const dl = el.getAttribute('list') && document.getElementById(el.getAttribute('list'));
    if (dl) f.options = [...dl.querySelectorAll('option')].map(o => ({label: squash(o.label || o.value), value: o.value}));
    if (ty === 'radio') f.group = el.name || '';
    return f;
  };
  const skipType = ty => ['hidden', 'submit', 'button', 'reset', 'image', 'file', 'range', 'color'].includes(ty);
  const isItem = el => !!el.closest('li, tr, [role=listitem], [role=row]') || !!el.closest('[draggable=true]');
  const fieldEls = all.filter(el => ['input', 'textarea', 'select'].includes(el.tagName.toLowerCase()) && !skipType((el.getAttribute('type') || 'text').toLowerCase()) && !el.disabled && !el.readOnly);
  // a form's buttons are kept when disabled too: a submit that waits for valid input is enabled once the
  // fields are filled (the walk checks which one then is); loose and record buttons are only the enabled ones
  const off = b => !!b.disabled || b.getAttribute('aria-disabled') === 'true';
  const buttons = all.filter(el => roleOf(el) === 'button');
  const press = b => ({name: nameOf(b), target: target(b), ...(off(b) ? {disabled: true} : {})});
  const groups = [], claimed = new Set();
  [...document.querySelectorAll('form')].filter(vis).forEach(form => {
    const fs = fieldEls.filter(el => el.form === form || form.contains(el));
    const bs = buttons.filter(el => form.contains(el) || el.form === form);
    const submits = bs.filter(b => b.tagName !== 'BUTTON' || (b.getAttribute('type') || 'submit').toLowerCase() === 'submit');
    if (!fs.length) return;  // a form that is only buttons (Log out, "Yes, I'm sure"): its buttons are the page's
    fs.forEach(x => claimed.add(x)); bs.forEach(x => claimed.add(x));
    groups.push({kind: 'form', heading: heading(form) || realLabel(form) || squash(form.getAttribute('name')), fields: fs.map(fieldOf).filter(Boolean),
      buttons: (submits.length ? submits : bs).map(press).filter(b => b.target && b.name),
      item: isItem(form)});
  });
  const loose = fieldEls.filter(el => !claimed.has(el) && !isItem(el) && !['checkbox', 'radio'].includes((el.getAttribute('type') || '').toLowerCase()));
  const done = new Set();
  loose.forEach(el => {
    if (done.has(el)) return;
    let box = el.parentElement, bs = [];
    for (let k = 0; box && k < 4; box = box.parentElement, k++) { bs = buttons.filter(b => !claimed.has(b) && box.contains(b) && !isItem(b)); if (bs.length) break; }
    if (!bs.length || !box) { done.add(el); const f = fieldOf(el); if (f && ['textbox', 'searchbox', 'combobox'].includes(f.role)) groups.push({kind: 'enter', heading: heading(el), fields: [f], buttons: [], item: false}); return; }
    // a toolbar (a search box, Reload, Create; no <form>): a search filters as it is typed, and the buttons beside
    // it act on the page, so each stays a page button too; the buttons of any other box are its fields'.
    // Its fields: the loose ones in the box, and the choices beside them (a plan's radios, a terms box)
    const fs = fieldEls.filter(x => !claimed.has(x) && !done.has(x) && !isItem(x) && box.contains(x)); fs.forEach(x => { done.add(x); claimed.add(x); });
    const searching = fs.length === 1 && (fs[0].type === 'search' || /search|filter|find/i.test(realLabel(fs[0]) + ' ' + (fs[0].placeholder || '') + ' ' + (fs[0].name || '')));
    if (!searching || bs.length === 1) bs.forEach(b => claimed.add(b));
    groups.push({kind: 'group', heading: heading(box), fields: fs.map(fieldOf).filter(Boolean), buttons: bs.map(press).filter(b => b.target && b.name), item: false});
  });
  const like = el => el.tagName + '.' + [...el.classList].sort().join('.');
  const cls = el => typeof el.className === 'string' ? el.className : '';
  // controls on records: checkboxes and buttons inside list items / rows / cards. A card is a box classed so
  // (a component library's Card) that repeats beside its like siblings: one of a list of records, not a panel
  const cardOf = el => { for (let up = el.parentElement; up && up !== document.body; up = up.parentElement)
    if (/card/i.test(cls(up)) && up.parentElement && [...up.parentElement.children].filter(s => s !== up && like(s) === like(up)).length) return up;
    return null; };
  const itemOf = el => el.closest('li, tr, [role=listitem], [role=row], [draggable=true]') || cardOf(el);
  const itemText = it => { const c = it.cloneNode(true); c.querySelectorAll('button, input, select, textarea, [role=button]').forEach(x => x.remove()); return text(c).slice(0, 80); };
  // a card is named by its heading when it has one (its other lines are details: "Direction: MINIMIZE")
  const itemName = it => { const h = !it.matches('li, tr, [role=listitem], [role=row], [draggable=true]') && it.querySelector('h1, h2, h3, h4, h5, h6, [role=heading]');
    return h && text(h) ? text(h).slice(0, 80) : itemText(it); };
  const onItems = all.filter(el => itemOf(el) && !claimed.has(el) && (roleOf(el) === 'checkbox' || roleOf(el) === 'switch' || roleOf(el) === 'button') && !off(el))
    .map(el => ({target: target(el), role: roleOf(el), name: nameOf(el), item: itemName(itemOf(el))})).filter(c => c.target && c.item);
  // loose buttons (not in a form or a record): actions on the page itself
  // and choices of a listbox a script answers (swatches, role=option): pressed like buttons
  const choices = all.filter(el => roleOf(el) === 'option' && el.closest('[role=listbox]') && el.getAttribute('aria-disabled') !== 'true' && !el.closest('[draggable], [aria-dropeffect]') && !el.querySelector('[draggable]'));  // a sortable's items are options too: they are dragged, not pressed
  const pageButtons = buttons.filter(b => !off(b)).concat(choices).filter(b => !claimed.has(b) && !itemOf(b)).map(b => ({name: nameOf(b), target: target(b)})).filter(b => b.target && b.name);
  // drag: HTML5 draggables, and cards of lists that drag libraries move (siblings alike inside like containers)
  let cards = [...document.querySelectorAll('[draggable=true]')].filter(vis);
  cards = cards.filter(c => !cards.some(o => o !== c && o.contains(c)));  // a draggable inside a draggable card is part of it
  // a draggable part (a handle, a label) alone in a list item: the item is the card
  cards = [...new Set(cards.map(c => { const it = c.parentElement && c.parentElement.closest('li, [role=option], [role=listitem]');
    return it && it !== c && it.querySelectorAll('[draggable=true]').length === 1 ? it : c; }))];
  if (!cards.length) {  // mouse-driven drag libraries: cards of like containers, named like cards
    const card = /item|card|task|ticket|note/i, notCard = /board|header|title|column|list|container|lane|drag-?zone|wrapper|footer|btn|button/i;
    cards = [...document.querySelectorAll('body *')].filter(el => vis(el) && card.test(cls(el)) && !notCard.test(cls(el)) && el.parentElement
      && !el.parentElement.closest('form') && text(el).length > 0 && text(el).length < 120 && !el.querySelector('input, textarea'));
    cards = cards.filter(c => !cards.some(o => o !== c && o.contains(c)));
  }
  if (!cards.length) {  // lists side by side (like containers under one parent) whose plain children move
    const lists = [...document.querySelectorAll('body *')].filter(el => vis(el) && (el.id || el.classList.length) && el.parentElement
      && [...el.parentElement.children].filter(s => like(s) === like(el)).length >= 2 && el.children.length >= 1
      && [...el.children].every(c => c.tagName === el.children[0].tagName && !c.querySelector('input, textarea, select, a[href]')));
    cards = lists.flatMap(l => [...l.children]).filter(c => vis(c) && text(c).length > 0 && text(c).length < 120);
  }
  const implicit = {MAIN: 'main', UL: 'list', OL: 'list', SECTION: 'region', ARTICLE: 'article', ASIDE: 'complementary', TBODY: 'rowgroup'};
  const zoneRole = z => z.getAttribute('role') || implicit[z.tagName] || '';
  const zoneSet = new Set(cards.map(c => c.parentElement));
  const shapes = new Set([...zoneSet].map(like));
  if (cards.length) [...document.querySelectorAll('body *')].filter(el => shapes.has(like(el)) && vis(el)).forEach(z => zoneSet.add(z));
  const zones = [...zoneSet].map(z => {
    const mine = cards.filter(c => c.parentElement === z), role = zoneRole(z);
    const peers = role ? [...document.querySelectorAll(role === implicit[z.tagName] ? z.tagName : '[role="' + role + '"]')].filter(vis) : [];
    // cards a text target finds: a whole text (scans cut at 80) whose first card in the page is this one
    const named = mine.filter(c => { const t = itemText(c); return t && t.length < 80 && cards.find(o => itemText(o) === t) === c; });
    const whole = it => { const c = it.cloneNode(true); c.querySelectorAll('button, input, select, textarea, [role=button]').forEach(x => x.remove()); return text(c); };
    const long = mine.filter(c => whole(c).length <= 240 && cards.find(o => whole(o) === whole(c)) === c);  // a long card is still a drop target
    const drop = named.length ? {text: itemText(named[named.length - 1])} : long.length ? {text: whole(long[long.length - 1])}
      : (role ? (peers.indexOf(z) ? {role, nth: peers.indexOf(z)} : {role}) : null);
    const box = z.getBoundingClientRect();
    return {heading: heading(z), cards: mine.map(itemText).filter(Boolean), named: named.map(itemText), drop,
      x: Math.round(box.left + scrollX), y: Math.round(box.top + scrollY)};
  }).filter(z => z.heading && z.drop);
  // the record a link acts on (an icon link "Edit" in a card's toolbar): the nearest enclosing record whose
  // own text is more than the link's
  const REC = 'li, tr, article, [role=listitem], [role=row], [role=article]';
  const recordText = a => { for (let it = a.closest(REC); it; it = it.parentElement && it.parentElement.closest(REC)) {
    const t = itemText(it); if (t && t !== linkName(a)) return t; } return ''; };
  const links = [...document.querySelectorAll('a[href]')].filter(vis).map(a => ({name: linkName(a), href: a.getAttribute('href'),
    role: a.getAttribute('role') || 'link', item: a.closest('nav, header, footer') ? '' : recordText(a)})).filter(l => l.name);
  const records = [...document.querySelectorAll('li, tr, article, [role=listitem], [role=row], [role=article], [draggable=true]')].filter(it => vis(it) && !it.closest('nav')).map(it => {
    const r = it.getBoundingClientRect();
    return {text: itemText(it), link: !!it.querySelector('a[href]'), x: Math.round((r.left + Math.min(r.width / 2, 80)) * 999 / innerWidth), y: Math.round((r.top + r.height / 2) * 999 / innerHeight)};
  }).filter(r => r.text && r.x >= 0 && r.x <= 999 && r.y >= 0 && r.y <= 999);
  const editors = fieldEls.filter(el => isItem(el) && el.value).map(fieldOf).filter(Boolean);
  // text edited in place (contenteditable: a tree editor's keys and values, a cell): found by the text it
  // shows (the nth element showing exactly that, as a text target counts them), typed over like a field
  const editable = [...document.querySelectorAll('[contenteditable]')].filter(el => el.isContentEditable && vis(el)
    && !(el.parentElement && el.parentElement.isContentEditable) && squash(el.textContent) && squash(el.textContent).length <= 80).slice(0, 60);
  const wanted = new Set(editable.map(el => squash(el.textContent))), showing = {};
  [...document.querySelectorAll('body *')].forEach(e => { const t = squash(e.textContent);
    if (wanted.has(t) && ![...e.children].some(c => squash(c.textContent) === t)) (showing[t] = showing[t] || []).push(e); });
  editable.forEach(el => { const v = squash(el.textContent), nth = (showing[v] || []).indexOf(el); if (nth < 0) return;
    const it = itemOf(el) || el.closest('article, [role=article]');
    editors.push({target: nth ? {text: v, nth} : {text: v}, role: 'textbox', type: /^-?\d+(\.\d+)?$/.test(v) ? 'number' : 'text',
      label: realLabel(el) || shownLabel(el) || squash(el.title), named: false, multiple: false, asked: '', name: '', required: false,
      pattern: '', min: '', max: '', step: '', minlength: 0, maxlength: 0, value: v, checked: false, options: [],
      in_place: true, record: it ? itemText(it) : ''}); });
  return {url: location.href, title: document.title, groups, records, editors, on_items: onItems, page_buttons: pageButtons,
    drag: {cards: cards.map(itemText).filter(Boolean), zones}, links};
})()"""


@dataclass
class FieldInfo:
    target: dict[str, Any]
    role: str
    type: str
    label: str
    name: str = ""
    required: bool = False
    pattern: str = ""
    min: str = ""
    max: str = ""
    step: str = ""
    minlength: int = 0
    maxlength: int = 0
    value: str = ""
    checked: bool = False
    options: list[dict[str, str]] = field(default_factory=list)
    group: str = ""
    named: bool = True  # has a name attribute: a form post sends its value
    multiple: bool = False  # a select that takes several options
    asked: str = ""  # a phrase the page asks to be typed here (a confirmation): typed as it is, never a parameter
    in_place: bool = False  # text edited where it is shown (contenteditable), not an input
    record: str = ""  # the record an in-place text sits on

    @property
    def spoken(self) -> str:
        """How a person names the field."""
        return (self.label or self.name or self.type).strip().rstrip(":*").strip()


@dataclass
class Group:
    kind: str  # form | group (fields + buttons in one box) | enter (a lone field submitted with Enter)
    heading: str
    fields: list[FieldInfo]
    buttons: list[dict[str, Any]]
    item: bool = False

    def signature(self) -> str:
        return "|".join([self.kind, self.heading] + [f.spoken for f in self.fields] + [b["name"] for b in self.buttons])


@dataclass
class PageScan:
    url: str
    title: str
    groups: list[Group]
    on_items: list[dict[str, Any]]  # {target, role, name, item}
    page_buttons: list[dict[str, Any]]
    cards: list[str]
    zones: list[dict[str, Any]]  # {heading, cards}
    links: list[dict[str, str]]  # {name, href, item: the record it sits on, or ""}
    records: list[dict[str, Any]] = field(default_factory=list)  # {text, x, y}: rows a person can point at
    editors: list[FieldInfo] = field(default_factory=list)  # filled fields inside records (an edit in place)

    @property
    def empty(self) -> bool:
        return not (self.groups or self.on_items or self.cards)


def scan_page(driver: Any) -> PageScan:
    raw = driver.probe(Probe("scan", "js", SCAN_JS))
    return parse_scan(raw)


def parse_scan(raw: dict[str, Any]) -> PageScan:
    fields_known = set(FieldInfo.__dataclass_fields__)
    groups = [
        Group(g["kind"], g.get("heading", ""), [FieldInfo(**{k: v for k, v in f.items() if k in fields_known}) for f in g["fields"]],
              g.get("buttons", []), bool(g.get("item")))
        for g in raw.get("groups", [])
    ]
    drag = raw.get("drag", {})
    return PageScan(raw.get("url", ""), raw.get("title", ""), [g for g in groups if g.fields], raw.get("on_items", []),
                    raw.get("page_buttons", []), drag.get("cards", []), drag.get("zones", []), raw.get("links", []),
                    raw.get("records", []),
                    [FieldInfo(**{k: v for k, v in f.items() if k in fields_known}) for f in raw.get("editors", [])])
