"""The offline agent's path for desktop workspaces (sandboxes/workspace): files changed through a web file
browser and through a shell. It reads the workspace's seed files (CSV, JSON, Markdown) and the file
browser's forms from the source, and composes GUI, CLI and mixed GUI + CLI task families whose
verifiers observe the files themselves.

What it relies on in the app (the file browser's conventions, see sandboxes/workspace/README.md):
`/view/<path>` shows a file; a CSV row and a JSON field have an "Edit <first cell | key>" link to a
form labelled by the column or key; the forms' aria-labels and buttons are read from the templates.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from flows.task_synthesis.agents.base import AgentOutput, SynthesisRequest
from flows.task_synthesis.app_model import Form, build_app_model
from flows.task_synthesis.task_spec import SYNTHESISER_VERSION, TaskSpec
from flows.task_synthesis.values import CITIES, WORDS, person
from sandboxes.skills import Skill

FAMILIES = ("edit_cell", "edit_json", "rename", "convert", "delete", "mixed")
OPENERS = ("Please ", "Could you ", "I need you to ", "Go ahead and ", "")
FORMS = {"row": "Save row", "field": "Save field", "delete": "Delete file"}  # aria-labels of the forms the agent uses

Recipe = Callable[[random.Random], "TaskSpec | None"]


@dataclass
class CsvFile:
    path: str
    header: list[str]
    rows: list[list[str]]

    def column_values(self, col: int) -> list[str]:
        return [r[col] for r in self.rows]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


class WorkspaceAgent:
    name = "static"

    def synthesize(self, request: SynthesisRequest) -> AgentOutput:
        out = AgentOutput()
        seed_dir = request.manifest.container.workspace_seed
        if not seed_dir:
            out.notes.append(f"{request.manifest.name}: no container.workspace_seed; the workspace agent needs seed files to read")
            return out
        composer = _Composer(request, seed_dir)
        out.notes.extend(composer.notes)
        recipes = composer.recipes()
        rng = random.Random(request.seed)
        found: dict[str, TaskSpec] = {}
        families = [f for f in FAMILIES if recipes.get(f)]
        for turn in range(request.count * 4):
            if len(found) >= request.count or not families:
                break
            family = families[turn % len(families)]
            spec = rng.choice(recipes[family])(random.Random(rng.randrange(2**31)))
            if spec is not None:
                found.setdefault(spec.task_id, spec)
        out.candidates = list(found.values())
        if any(c.injection for c in out.candidates):
            out.skills = [composer.write_file]
        return out


class _Composer:
    def __init__(self, request: SynthesisRequest, seed_dir: str) -> None:
        self.req = request
        self.notes: list[str] = []
        prefix = seed_dir.rstrip("/") + "/"
        seed = {p[len(prefix):]: t for p, t in request.source.files.items() if p.startswith(prefix)}
        self.csvs = [c for p, t in sorted(seed.items()) if p.endswith(".csv") and (c := self._csv(p, t))]
        self.jsons = {p: json.loads(t) for p, t in sorted(seed.items()) if p.endswith(".json")}
        self.texts = {p: t for p, t in sorted(seed.items()) if p.endswith((".md", ".txt"))}
        forms = build_app_model(request.source).forms
        self.forms: dict[str, Form] = {}
        for key, label in FORMS.items():
            form = next((f for f in forms if f.label == label), None)
            if form is None:
                self.notes.append(f"{request.manifest.name}: no form labelled {label!r} in the templates; tasks that need it are skipped")
            else:
                self.forms[key] = form
        self.write_file = Skill(
            name="write_file", sandbox=request.manifest.name, kind="files",
            description="Puts a file with the given content at a path in the workspace",
            spec={"files": {"$path": "$content"}},
        )

    def _csv(self, path: str, text: str) -> CsvFile | None:
        rows = list(csv.reader(io.StringIO(text)))
        if len(rows) < 3 or '"' in text:  # quoted cells would not survive the shell's simple conversions
            return None
        header, body = rows[0], rows[1:]
        if len({r[0] for r in body}) != len(body):  # rows are named by their first cell
            return None
        return CsvFile(path, header, body)

    def recipes(self) -> dict[str, list[Recipe]]:
        out: dict[str, list[Recipe]] = {f: [] for f in FAMILIES}
        if "row" in self.forms and self.csvs:
            out["edit_cell"].append(self.edit_cell)
            out["mixed"] += [self.copy_then_edit, self.edit_then_export]
        if "field" in self.forms and self.jsons:
            out["edit_json"].append(self.edit_json)
        if self.texts:
            out["rename"].append(self.rename)
        if self.csvs:
            out["convert"].append(self.csv_to_tsv)
        if self.texts:
            out["convert"].append(self.append_line)
        if "delete" in self.forms:
            out["delete"].append(self.delete)
        return out

    # ---- pieces ---------------------------------------------------------------------------------
    def _spec(self, family: str, area: str, instruction: str, params: dict[str, Any], rng: random.Random,
              verifier: dict[str, Any], reference: list[dict[str, Any]], injection: list[dict[str, Any]] | None = None) -> TaskSpec:
        opener = rng.choice(OPENERS)
        return TaskSpec(
            sandbox=self.req.manifest.name, source_commit=self.req.source.commit, family=family, app_area=area,
            instruction=opener + instruction[0].lower() + instruction[1:] if opener else instruction,
            params=params, seed=self.req.seed, injection=injection or [], verifier=verifier, reference=reference,
            provenance={"agent": "static", "path": "file-browser", "synthesiser": SYNTHESISER_VERSION},
        )

    def _cell_change(self, f: CsvFile, rng: random.Random) -> tuple[int, int, str] | None:
        """A row, a column (not the naming one) and a new value a person might type there."""
        row, col = rng.randrange(len(f.rows)), rng.randrange(1, len(f.header))
        old = f.rows[row][col]
        number = _number(old)
        if number is not None:
            step = max(1, round(abs(number) * rng.uniform(0.05, 0.3)))
            new = str(int(number) + rng.choice((-1, 1)) * step if number.is_integer() else round(number + step, 2))
        else:
            others = sorted(set(f.column_values(col)) - {old})
            new = rng.choice(others) if others and rng.random() < 0.5 else rng.choice(CITIES if "city" in f.header[col] else WORDS).title()
        return (row, col, new) if new != old else None

    def _gui_cell_edit(self, path: str, key: str, column: str, value: str) -> list[dict[str, Any]]:
        within = self.forms["row"].label
        return [
            {"action": "goto", "url": f"/view/{path}"},
            {"action": "left_click", "target": {"role": "link", "name": f"Edit {key}"}},
            {"action": "type", "target": {"label": column, "within": within}, "text": value},
            {"action": "left_click", "target": {"role": "button", "name": self.forms["row"].buttons[0], "within": within}},
        ]

    def _cell_check(self, path: str, f: CsvFile, row: int, col: int, value: str) -> dict[str, Any]:
        return {"template": "csv_cell_equals", "params": {
            "path": path, "key_column": f.header[0], "key": f.rows[row][0], "column": f.header[col], "value": value}}

    def _inbox_file(self, rng: random.Random) -> tuple[str, str, str]:
        """A made-up note dropped into the workspace by injection: (path, first line, content)."""
        word = rng.choice(WORDS)
        n = rng.randint(100, 999)
        title = f"{word.title()} notes {n}"
        return f"inbox/{word}-{n}.md", f"# {title}", f"# {title}\n\nDrafted for the {word} review.\n"

    # ---- families -------------------------------------------------------------------------------
    def edit_cell(self, rng: random.Random) -> TaskSpec | None:
        f = rng.choice(self.csvs)
        change = self._cell_change(f, rng)
        if change is None:
            return None
        row, col, value = change
        key, column = f.rows[row][0], f.header[col]
        return self._spec(
            "edit_cell", PurePosixPath(f.path).parent.name or "files",
            f"Change the {column} of {key} in {f.path} to {value}, using the file browser.",
            {"path": f.path, "row": key, "column": column, "value": value}, rng,
            self._cell_check(f.path, f, row, col, value), self._gui_cell_edit(f.path, key, column, value),
        )

    def edit_json(self, rng: random.Random) -> TaskSpec | None:
        path = rng.choice(sorted(self.jsons))
        data = self.jsons[path]
        keys = [k for k, v in data.items() if isinstance(v, (str, int, float, bool))] if isinstance(data, dict) else []
        if not keys:
            return None
        key = rng.choice(keys)
        old = data[key]
        if isinstance(old, bool):
            value: Any = not old
        elif isinstance(old, (int, float)):
            value = old + rng.randint(1, 20)
        elif re.fullmatch(r"\d+\.\d+\.\d+", old):  # a version: the next minor release
            major, minor, _ = old.split(".")
            value = f"{major}.{int(minor) + 1}.0"
        elif re.fullmatch(r"[A-Z]\w+ [A-Z]\w+", old):  # a person's name
            value = " ".join(person(rng))
        elif "/" in old:
            return None
        else:
            value = rng.choice(WORDS)
        if value == old:
            return None
        typed = str(value).lower() if isinstance(value, bool) else str(value)
        within = self.forms["field"].label
        return self._spec(
            "edit_json", PurePosixPath(path).parent.name or "files",
            f"Set {key} in {path} to {typed} in the file browser.",
            {"path": path, "field": key, "value": value}, rng,
            {"template": "json_field_equals", "params": {"path": path, "field": key, "value": value}},
            [
                {"action": "goto", "url": f"/view/{path}"},
                {"action": "left_click", "target": {"role": "link", "name": f"Edit {key}"}},
                {"action": "type", "target": {"label": key, "within": within}, "text": typed},
                {"action": "left_click", "target": {"role": "button", "name": self.forms["field"].buttons[0], "within": within}},
            ],
        )

    def rename(self, rng: random.Random) -> TaskSpec | None:
        path, first_line, content = self._inbox_file(rng)
        folder = rng.choice(("notes", "archive"))
        new = f"{folder}/{PurePosixPath(path).stem}-{rng.choice(('final', 'done', 'v2'))}.md"
        mkdir = f"mkdir -p {folder} && " if folder == "archive" else ""
        return self._spec(
            "rename", "inbox", f"Move {path} to {new} from the terminal.",
            {"path": path, "new": new}, rng,
            {"template": "all_of", "params": {"checks": [
                {"template": "file_absent", "params": {"path": path}},
                {"template": "file_contains", "params": {"path": new, "text": first_line}},
            ]}},
            [{"action": "shell", "command": f"{mkdir}mv {shlex.quote(path)} {shlex.quote(new)}"}],
            [{"skill": "write_file", "args": {"path": path, "content": content}}],
        )

    def csv_to_tsv(self, rng: random.Random) -> TaskSpec | None:
        f = rng.choice(self.csvs)
        target = f.path[:-4] + ".tsv"
        row = rng.choice(f.rows)
        return self._spec(
            "convert", PurePosixPath(f.path).parent.name or "files",
            f"Save a tab-separated copy of {f.path} as {target}, using the shell.",
            {"path": f.path, "target": target, "probe_row": row[0]}, rng,
            {"template": "file_contains", "params": {"path": target, "texts": ["\t".join(f.header), "\t".join(row)]}},
            [{"action": "shell", "command": f"tr ',' '\\t' < {shlex.quote(f.path)} > {shlex.quote(target)}"}],
        )

    def append_line(self, rng: random.Random) -> TaskSpec | None:
        path = rng.choice(sorted(self.texts))
        line = f"- {rng.choice(WORDS).title()} follow-up with {rng.choice(CITIES)} team"
        if line in self.texts[path]:
            return None
        return self._spec(
            "convert", PurePosixPath(path).parent.name or "files",
            f"Add the line {line!r} at the end of {path} from the command line.",
            {"path": path, "line": line}, rng,
            {"template": "file_contains", "params": {"path": path, "texts": [self.texts[path].rstrip("\n"), line]}},
            [{"action": "shell", "command": f"printf '%s\\n' {shlex.quote(line)} >> {shlex.quote(path)}"}],
        )

    def delete(self, rng: random.Random) -> TaskSpec | None:
        path, _, content = self._inbox_file(rng)
        button = self.forms["delete"].buttons[0]
        kind = self.req.manifest.sensitive_kind(button)
        confirm = [{"action": "call_user", "reason": f"This will {kind} {path}. Shall I go ahead?"}] if kind else []
        return self._spec(
            "delete", "inbox", f"Delete {path} in the file browser; it is no longer needed.",
            {"path": path}, rng,
            {"template": "file_absent", "params": {"path": path}},
            [{"action": "goto", "url": f"/view/{path}"}, *confirm,
             {"action": "left_click", "target": {"role": "button", "name": button, "within": self.forms["delete"].label}}],
            [{"skill": "write_file", "args": {"path": path, "content": content}}],
        )

    def copy_then_edit(self, rng: random.Random) -> TaskSpec | None:
        """CLI then GUI: copy a CSV in the shell, then edit a cell of the copy in the file browser."""
        f = rng.choice(self.csvs)
        change = self._cell_change(f, rng)
        if change is None:
            return None
        row, col, value = change
        copy = f"{f.path[:-4]}-{rng.choice(('draft', 'copy', 'next'))}.csv"
        key, column = f.rows[row][0], f.header[col]
        return self._spec(
            "mixed", PurePosixPath(f.path).parent.name or "files",
            f"Copy {f.path} to {copy} in the terminal, then open the copy in the file browser and set the "
            f"{column} of {key} to {value}. Leave the original as it is.",
            {"path": f.path, "copy": copy, "row": key, "column": column, "value": value}, rng,
            {"template": "all_of", "params": {"checks": [
                self._cell_check(copy, f, row, col, value),
                self._cell_check(f.path, f, row, col, f.rows[row][col]),
            ]}},
            [{"action": "shell", "command": f"cp {shlex.quote(f.path)} {shlex.quote(copy)}"},
             *self._gui_cell_edit(copy, key, column, value)],
        )

    def edit_then_export(self, rng: random.Random) -> TaskSpec | None:
        """GUI then CLI: edit a cell in the file browser, then export the file as TSV in the shell."""
        f = rng.choice(self.csvs)
        change = self._cell_change(f, rng)
        if change is None:
            return None
        row, col, value = change
        key, column = f.rows[row][0], f.header[col]
        target = f.path[:-4] + ".tsv"
        edited = list(f.rows[row])
        edited[col] = value
        return self._spec(
            "mixed", PurePosixPath(f.path).parent.name or "files",
            f"Change the {column} of {key} in {f.path} to {value} in the file browser; then save a "
            f"tab-separated copy of the updated file as {target} from the shell.",
            {"path": f.path, "target": target, "row": key, "column": column, "value": value}, rng,
            {"template": "file_contains", "params": {"path": target, "texts": ["\t".join(f.header), "\t".join(edited)]}},
            [*self._gui_cell_edit(f.path, key, column, value),
             {"action": "shell", "command": f"tr ',' '\\t' < {shlex.quote(f.path)} > {shlex.quote(target)}"}],
        )
