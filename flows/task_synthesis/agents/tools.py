"""The LLM coding agent's tools: read the sandbox's source at its pinned commit, query the app's DB
read-only, write skills and verifiers, propose task-verifier pairs, try skills and verifiers in a
scratch copy of the app's state, retire pairs that a new commit broke, submit.

Every tool answers with text for the model; bad arguments are an error text, never an exception.
Results carry no paths, times or random ids, so the same conversation replays from the LLM cache.
Code the model writes is only parsed here (ast); it runs through flywheel.isolation.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from flows.task_synthesis.agents.base import SynthesisRequest
from flows.task_synthesis.task_spec import TaskSpec
from sandboxes.actions import parse_actions
from sandboxes.skills import InjectionError, Skill, run_skill
from verifier_templates import TEMPLATES, get_template
from verifier_templates.base import Evidence

SYNTHESISER_VERSION = "llm-1"
FAMILIES = ("create", "update", "delete", "retrieve", "search", "multi_step")
MAX_TEXT = 12_000  # characters of one tool result
MAX_ROWS = 50


class ToolError(Exception):
    """Bad arguments or a refused request: the text goes back to the model as the tool's result."""


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


_S, _I, _O, _A = {"type": "string"}, {"type": "integer"}, {"type": "object"}, {"type": "array"}
SPECS: list[dict[str, Any]] = [
    _fn("list_files", "List the sandbox app's source files (at the pinned commit) with their line counts.",
        {"prefix": _S}, []),
    _fn("read_file", "Read a source file, with line numbers. At most 400 lines per call.",
        {"path": _S, "start": _I, "end": _I}, ["path"]),
    _fn("grep", "Search the source with a Python regular expression; up to 100 matching lines.",
        {"pattern": _S, "prefix": _S}, ["pattern"]),
    _fn("git_log", "Commits that touched the sandbox's folder, newest first.", {"max_count": _I}, []),
    _fn("git_diff", "The diff of the sandbox's folder between two commits (default: to the pinned commit).",
        {"from_commit": _S, "to_commit": _S}, ["from_commit"]),
    _fn("query_app_db", "Run one read-only SQL query on the app's initial database; up to 50 rows as JSON.",
        {"sql": _S}, ["sql"]),
    _fn("write_skill", "Write a data-injection skill. kind 'sql': statements with :named parameters; kind "
        "'python': code defining inject(db_path, args) that edits the SQLite file at db_path (runs isolated).",
        {"name": _S, "description": _S, "kind": {"type": "string", "enum": ["sql", "python"]},
         "statements": {"type": "array", "items": _S}, "code": _S}, ["name", "kind"]),
    _fn("write_verifier", "Write a verifier: a template instance ({template, params}; templates: "
        + ", ".join(sorted(t for t in TEMPLATES if t != "code")) + ") or code: probes (what to observe: "
        "[{name, kind: sql|url|page_text|js|answer, query, args}]) plus code defining judge(evidence, params) "
        "-> {passed, reason}, where evidence is {initial: {probe: value}, final: {probe: value}}.",
        {"name": _S, "template": _S, "params": _O, "probes": _A, "code": _S}, ["name"]),
    _fn("propose_task", "Propose a task-verifier pair: the request a person would make, the injection "
        "(skills + args), a verifier by name, and a reference solution as actions through the real UI "
        "(goto {url}; left_click {target: {role, name} | {label} | {text}}; type {target: {label}, text}; ...).",
        {"family": {"type": "string", "enum": list(FAMILIES)}, "app_area": _S, "instruction": _S, "params": _O,
         "injection": _A, "verifier": _S, "reference": _A}, ["family", "instruction", "verifier", "reference"]),
    _fn("run_in_sandbox", "Apply a skill to a scratch copy of the app's state and/or judge a verifier on it "
        "(SQL probes; the state after injection is both initial and final, so a sound verifier fails here).",
        {"skill": _S, "args": _O, "verifier": _S}, []),
    _fn("validate_task", "Run the validation gate on a proposed task now, in a live sandbox (reset, inject, "
        "replay the reference through the browser, judge, repeat, truncate): the outcome and every check with "
        "its evidence, so you can fix the pair before you submit.", {"task_id": _S}, ["task_id"]),
    _fn("retire_task", "Retire a stored pair that the new commit broke or made meaningless.",
        {"task_id": _S, "reason": _S}, ["task_id", "reason"]),
    _fn("submit", "Finish: everything proposed goes to the validation gate.", {"summary": _S}, []),
]
TOOL_NAMES = [s["function"]["name"] for s in SPECS]


@dataclass
class Workbench:
    """What the agent has written so far, and the sandbox it reads."""

    request: SynthesisRequest
    model: str
    prompt_hash: str
    stored_skills: dict[str, Skill] = field(default_factory=dict)
    stale: dict[str, dict[str, Any]] = field(default_factory=dict)  # task_id -> stored row, older commit
    skills: dict[str, Skill] = field(default_factory=dict)
    verifiers: dict[str, dict[str, Any]] = field(default_factory=dict)
    candidates: dict[str, TaskSpec] = field(default_factory=dict)
    retired: list[dict[str, Any]] = field(default_factory=list)
    submitted: str | None = None
    session: Any = None  # a live driver session, opened by the first validate_task
    # the live sandbox lives on a thread of its own: Playwright's sync API allows one instance per thread,
    # and the caller's thread may hold one already
    worker: Any = None

    def close(self) -> None:
        if self.worker is not None:
            if self.session is not None:
                self.worker.submit(self.session.close).result()
                self.session = None
            self.worker.shutdown()
            self.worker = None

    @property
    def sandbox(self) -> str:
        return self.request.manifest.name

    @property
    def source(self):
        return self.request.source

    def call(self, name: str, arguments: str | dict[str, Any] | None) -> str:
        """The tool's answer for the model; raises ToolError for anything the model must fix."""
        if name not in TOOL_NAMES:
            raise ToolError(f"unknown tool {name!r}; tools: {', '.join(TOOL_NAMES)}")
        if isinstance(arguments, dict):
            args = arguments
        else:
            try:
                args = json.loads(arguments or "{}")
            except json.JSONDecodeError as exc:
                raise ToolError(f"arguments of {name} are not valid JSON ({exc.msg} at char {exc.pos}); "
                                "send one JSON object") from None
        if not isinstance(args, dict):
            raise ToolError(f"arguments of {name} must be a JSON object, not {type(args).__name__}")
        try:
            return getattr(self, f"_{name}")(**args)
        except ToolError:
            raise
        except TypeError as exc:  # missing or unexpected arguments
            raise ToolError(f"{name}: {exc}".replace(f"Workbench._{name}()", name)) from None
        except Exception as exc:  # arguments of the wrong type, and anything else: the model hears about it
            raise ToolError(f"{name} failed: {type(exc).__name__}: {exc}"[:1000]) from None

    # ---- reading --------------------------------------------------------------------------------
    def _list_files(self, prefix: str = "") -> str:
        files = sorted(p for p in self.source.files if p.startswith(prefix))
        return "\n".join(f"{p} ({self.source.files[p].count(chr(10)) + 1} lines)" for p in files) or "no files"

    def _read_file(self, path: str, start: int = 1, end: int | None = None) -> str:
        if path not in self.source.files:
            close = [p for p in self.source.files if Path(p).name == Path(path).name]
            raise ToolError(f"no file {path!r} at this commit" + (f"; did you mean {close[0]!r}?" if close else ""))
        lines = self.source.files[path].splitlines()
        start = max(1, int(start))
        end = min(len(lines), int(end) if end else start + 199, start + 399)
        return "\n".join(f"{i}: {lines[i - 1]}" for i in range(start, end + 1)) + (
            f"\n... ({len(lines)} lines in all)" if end < len(lines) else "")

    def _grep(self, pattern: str, prefix: str = "") -> str:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"bad regular expression: {exc}") from None
        hits = [f"{p}:{i}: {line.strip()[:200]}" for p, text in sorted(self.source.files.items()) if p.startswith(prefix)
                for i, line in enumerate(text.splitlines(), 1) if rx.search(line)]
        return "\n".join(hits[:100]) + (f"\n... {len(hits) - 100} more" if len(hits) > 100 else "") if hits else "no match"

    def _repo(self):
        import git

        try:
            repo = git.Repo(self.request.manifest.source_dir, search_parent_directories=True)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise ToolError("the sandbox's source is not in a git repository: no history") from None
        rel = Path(self.request.manifest.source_dir).resolve().relative_to(Path(repo.working_tree_dir).resolve())
        return repo, rel.as_posix() if rel.as_posix() != "." else None

    def _git_log(self, max_count: int = 10) -> str:
        repo, rel = self._repo()
        head = self.source.commit.split("+")[0]
        try:
            commits = list(repo.iter_commits(head, paths=rel, max_count=min(int(max_count), 50)))
        except Exception as exc:
            raise ToolError(f"git log failed: {exc}") from None
        return "\n".join(f"{c.hexsha[:12]} {c.committed_datetime.date()} {c.summary}" for c in commits)

    def _git_diff(self, from_commit: str, to_commit: str | None = None) -> str:
        repo, rel = self._repo()
        # a commit read from a dirty tree (`<sha>+dirty-<hash>`): its base commit, and the tree on disk
        pinned, dirty = self.source.commit.split("+")[0], "+dirty" in self.source.commit
        revs = [from_commit.split("+")[0]] + ([to_commit.split("+")[0]] if to_commit else [] if dirty else [pinned])
        shas = [_commit_sha(repo, rev) for rev in revs]  # the model's text never reaches git as an option
        try:
            text = repo.git.diff("--end-of-options", *shas, "--", rel or ".")
        except Exception as exc:
            raise ToolError(f"git diff failed: {str(exc).splitlines()[-1][:300]}") from None
        return text[:MAX_TEXT] + ("\n... (diff truncated)" if len(text) > MAX_TEXT else "") if text else "no changes"

    def _query_app_db(self, sql: str) -> str:
        if self.request.app_db is None:
            raise ToolError("this sandbox has no SQLite state to query")
        con = read_only_sqlite(Path(self.request.app_db))
        steps = [0]

        def guard() -> int:  # abort runaway queries
            steps[0] += 1
            return 1 if steps[0] > 2000 else 0

        con.set_progress_handler(guard, 1000)
        try:
            cur = con.execute(sql)
            cols = [d[0] for d in cur.description or []]
            rows = [dict(zip(cols, r)) for r in cur.fetchmany(MAX_ROWS)]
        except sqlite3.Error as exc:
            raise ToolError(f"SQL error: {exc}") from None
        finally:
            con.close()
        return json.dumps(rows, default=str)[:MAX_TEXT]

    # ---- writing --------------------------------------------------------------------------------
    def _write_skill(self, name: str, kind: str, description: str = "", statements: list[str] | None = None,
                     code: str | None = None) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_]{0,63}", name or ""):
            raise ToolError("a skill name is lower_snake_case, e.g. insert_address")
        if kind == "sql":
            if not statements or not all(isinstance(s, str) for s in statements):
                raise ToolError("an sql skill needs statements: a list of SQL strings with :named parameters")
            self._check_sql(statements)
            spec: dict[str, Any] = {"statements": statements}
        elif kind == "python":
            _check_code(code, "inject")
            spec = {"code": code}
        else:
            raise ToolError(f"skill kind {kind!r}; kinds: sql, python")
        skill = Skill(name, self.sandbox, kind, description or name.replace("_", " "), spec)
        self.skills[name] = skill
        return f"skill {name} written ({skill.skill_id})"

    def _check_sql(self, statements: list[str]) -> None:
        if self.request.app_db is None:
            return
        con = sqlite3.connect(f"file:{self.request.app_db}?mode=ro", uri=True)
        try:
            for stmt in statements:
                con.execute(f"EXPLAIN {stmt}", {k: None for k in re.findall(r":(\w+)", stmt)})
        except sqlite3.Error as exc:
            raise ToolError(f"statement does not compile against the app's schema: {exc}") from None
        finally:
            con.close()

    def _write_verifier(self, name: str, template: str | None = None, params: dict | None = None,
                        probes: list | None = None, code: str | None = None) -> str:
        if code is not None:
            _check_code(code, "judge")
            verifier = {"template": "code", "params": {"probes": probes or [], "code": code, "params": params or {}}}
        elif template:
            verifier = {"template": template, "params": params or {}}
        else:
            raise ToolError("give a template and params, or probes and code")
        try:
            get_template(verifier["template"]).probes(verifier["params"])
        except (KeyError, ValueError, TypeError) as exc:
            raise ToolError(f"verifier cannot be built: {exc}") from None
        self.verifiers[name] = verifier
        return f"verifier {name} written ({verifier['template']})"

    def _propose_task(self, family: str, instruction: str, verifier: str, reference: list,
                      app_area: str = "", params: dict | None = None, injection: list | None = None) -> str:
        if len(self.candidates) >= self.request.count:
            raise ToolError(f"the budget of {self.request.count} candidates is used up; call submit")
        if family not in FAMILIES:
            raise ToolError(f"family {family!r}; families: {', '.join(FAMILIES)}")
        if verifier not in self.verifiers:
            raise ToolError(f"no verifier {verifier!r}; write it first (written: {sorted(self.verifiers) or 'none'})")
        injection = injection or []
        for inj in injection:
            if not isinstance(inj, dict) or inj.get("skill") not in self.stored_skills | self.skills:
                raise ToolError(f"injection {inj!r}: each item is {{skill, args}} naming a written skill")
        try:
            if not parse_actions(reference):
                raise ToolError("the reference solution is empty")
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ToolError(f"reference solution does not parse: {first['msg']} at {list(first['loc'])}") from None
        spec = TaskSpec(
            self.sandbox, self.source.commit, family, app_area or family, instruction,
            params or {"instruction": instruction}, self.request.seed, injection, self.verifiers[verifier],
            reference, provenance={"agent": "llm", "model": self.model, "prompt_hash": self.prompt_hash,
                                   "synthesiser_version": SYNTHESISER_VERSION},
        )
        if spec.task_id in self.candidates:
            raise ToolError(f"a {family} task with these params exists ({spec.task_id}); vary params")
        self.candidates[spec.task_id] = spec
        return f"proposed {spec.task_id} ({len(self.candidates)}/{self.request.count})"

    def _run_in_sandbox(self, skill: str | None = None, args: dict | None = None, verifier: str | None = None) -> str:
        if self.request.app_db is None:
            raise ToolError("this sandbox has no SQLite state to try things on")
        if not skill and not verifier:
            raise ToolError("name a skill, a verifier, or both")
        out: dict[str, Any] = {}
        with tempfile.TemporaryDirectory(prefix="flywheel-try-") as tmp:
            db = Path(tmp) / "app.sqlite"
            shutil.copy(self.request.app_db, db)
            before = _row_counts(db)
            if skill:
                found = (self.stored_skills | self.skills).get(skill)
                if found is None:
                    raise ToolError(f"no skill {skill!r}")
                try:
                    run_skill(db, found, args or {})
                    out["skill"] = "applied"
                except InjectionError as exc:
                    out["skill"] = f"failed ({exc.reason}): {exc}"
                after = _row_counts(db)
                out["rows_changed"] = {t: after[t] - before.get(t, 0) for t in after if after[t] != before.get(t, 0)}
            if verifier:
                out["verifier"] = self._try_verifier(verifier, db)
        return json.dumps(out, default=str)[:MAX_TEXT]

    def _try_verifier(self, name: str, db: Path) -> dict[str, Any]:
        verifier = self.verifiers.get(name)
        if verifier is None:
            raise ToolError(f"no verifier {name!r}")
        template = get_template(verifier["template"])
        probes = template.probes(verifier["params"])
        if any(p.kind != "sql" for p in probes):
            return {"note": "it observes the page (url, page text, js or answer): only the gate can try it"}
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        values = {}
        try:
            for p in probes:
                rows = con.execute(p.query, p.args).fetchall()
                values[p.name] = [list(r) for r in rows] if p.shape == "rows" else (rows[0][0] if rows else None)
        except sqlite3.Error as exc:
            return {"probe_error": str(exc)}
        finally:
            con.close()
        from flywheel.isolation.generated import GeneratedCodeFailed

        try:
            verdict = template.judge(Evidence(values, values), verifier["params"])
        except GeneratedCodeFailed as exc:
            return {"probes": values, "code_failed": exc.gate_reason("bad_verifier"), "detail": str(exc)[:500]}
        return {"probes": values, "passed": verdict.passed, "reason": verdict.reason}

    def _validate_task(self, task_id: str) -> str:
        from flows.task_synthesis.gate import ValidationGate
        from sandboxes.app_process import SandboxError
        from sandboxes.drivers import open_driver

        spec = self.candidates.get(task_id)
        if spec is None:
            raise ToolError(f"no proposed task {task_id!r}; proposed: {', '.join(self.candidates) or 'none'}")
        def validate():
            if self.session is None:
                self.session = open_driver(self.request.manifest)
            return ValidationGate(self.session.driver, self.stored_skills | self.skills).validate(spec)

        if self.worker is None:
            from concurrent.futures import ThreadPoolExecutor

            self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-sandbox")
        try:
            result = self.worker.submit(validate).result()
        except SandboxError as exc:
            raise ToolError(f"the live sandbox failed: {exc}") from None
        checks = [{"check": c.check, "passed": c.passed, "expected": c.expected, "reason": c.verdict_reason,
                   "error": c.error, "evidence": c.evidence} for c in result.checks]
        out = {"status": result.status, "reason": result.reason, "detail": result.detail, "checks": checks}
        return json.dumps(out, default=str)[:MAX_TEXT]

    def _retire_task(self, task_id: str, reason: str) -> str:
        if task_id not in self.stale:
            raise ToolError(f"{task_id!r} is not a stored pair from an older commit; those are: "
                            f"{', '.join(sorted(self.stale)) or 'none'}")
        self.retired.append({"task_id": task_id, "reason": "retired_by_agent", "detail": str(reason)[:500]})
        return f"{task_id} will be retired"

    def _submit(self, summary: str = "") -> str:
        self.submitted = summary or "submitted"
        return f"submitted {len(self.candidates)} candidates and {len(self.skills)} skills for validation"


def _commit_sha(repo, rev: Any) -> str:
    """The full sha of a commit the model named, or a ToolError: only a verified commit reaches `git diff`."""
    if not isinstance(rev, str) or not re.fullmatch(r"[\w./~^@{}-]{1,200}", rev) or rev.startswith("-"):
        raise ToolError(f"{str(rev)[:80]!r} is not a commit; give a sha from git_log")
    try:
        return repo.git.rev_parse("--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}").strip()
    except Exception:
        raise ToolError(f"no commit {rev!r} in this repository; give a sha from git_log") from None


# what a read-only query may do: read rows, call functions, recurse, and look at a table's shape
_READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
_READ_PRAGMAS = {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}


def read_only_sqlite(db: Path) -> sqlite3.Connection:
    """A connection that can only read `db`: opened read-only, `query_only`, and an authorizer that refuses
    everything but reads (ATTACH and VACUUM INTO would create files even on a read-only connection)."""
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    con.execute("PRAGMA query_only = ON")

    def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
        if action in _READ_ACTIONS or (action == sqlite3.SQLITE_PRAGMA and arg1 in _READ_PRAGMAS):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    con.set_authorizer(authorize)
    return con


def _check_code(code: Any, entry: str) -> None:
    if not isinstance(code, str) or not code.strip():
        raise ToolError(f"code is required and must define {entry}(...)")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ToolError(f"code does not parse: {exc.msg} at line {exc.lineno}") from None
    if not any(isinstance(n, ast.FunctionDef) and n.name == entry for n in tree.body):
        raise ToolError(f"code must define a top-level function {entry}(...)")


def _row_counts(db: Path) -> dict[str, int]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    finally:
        con.close()
