"""`flywheel review serve`: a small Flask app where a person works through a sample of verified pairs and
judged trajectories. Bound to 127.0.0.1 by default and opened with a printed token (then a cookie);
everything from the lake is rendered through Jinja's autoescape."""

from __future__ import annotations

import hmac
import json
import re
import secrets
import signal
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from flask import Flask, abort, jsonify, redirect, render_template, request, url_for
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from flywheel.review.decisions import LABELS, Decision, DecisionError, record
from flywheel.review.sampling import Sample, SampleItem, draw_sample
from lake import Lake

HERE = Path(__file__).resolve().parent
TOKEN_COOKIE = "review_token"
REVIEWER_COOKIE = "reviewer"
_SHA = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,40}$")


class ReviewState:
    """What one running review app holds: the lake, the sample, the token, and this session's decisions."""

    def __init__(self, lake: Lake, sample: Sample, reviewer: str, token: str) -> None:
        if not _NAME.match(reviewer):
            raise ValueError(f"reviewer name {reviewer!r}: use 1-40 letters, digits, '_', '.', '@' or '-'")
        self.lake = lake
        self.sample = sample
        self.reviewer = reviewer
        self.token = token
        self.decided = Counter()  # (reviewer, decision) -> count, this session only
        # Lake reads and writes of this app take turns: Lake's temporary files end in .parquet, so a reader
        # globbing a table while a write is in flight could see half a file.
        self.lock = threading.Lock()


def create_app(state: ReviewState) -> Flask:
    app = Flask(__name__, template_folder=str(HERE / "templates"), static_folder=str(HERE / "static"))
    app.jinja_env.autoescape = True  # every template, whatever its file name

    @app.before_request
    def require_token():
        given = request.args.get("token")
        if given is not None:
            if not hmac.compare_digest(given, state.token):
                abort(403)
            resp = redirect(url_for("first_open"))
            resp.set_cookie(TOKEN_COOKIE, state.token, httponly=True, samesite="Strict")
            name = request.args.get("reviewer")
            if name:
                if not _NAME.match(name):
                    abort(400, "reviewer: 1-40 letters, digits, '_', '.', '@' or '-'")
                resp.set_cookie(REVIEWER_COOKIE, name, httponly=True, samesite="Strict")
            return resp
        if not hmac.compare_digest(request.cookies.get(TOKEN_COOKIE, ""), state.token):
            abort(403)
        if request.method not in ("GET", "HEAD") and not _from_our_own_page():
            abort(403, "a change must come from the review page itself (Origin / Sec-Fetch-Site)")

    @app.after_request
    def harden(resp):
        resp.headers["Content-Security-Policy"] = (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
            "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        return resp

    def reviewer() -> str:
        name = request.cookies.get(REVIEWER_COOKIE, "")
        return name if _NAME.match(name) else state.reviewer

    @app.get("/")
    def first_open():
        if not state.sample.items:
            return render_template("empty.html"), 200
        with state.lock, LakeSnapshot(state.lake) as snap:
            mine = my_decisions(snap, reviewer())
        undecided = [i for i, it in enumerate(state.sample.items) if (it.kind, it.item_id) not in mine]
        return redirect(url_for("show_item", index=undecided[0] if undecided else 0))

    @app.get("/item/<int:index>")
    def show_item(index: int):
        item = _item_at(state, index)
        with state.lock, LakeSnapshot(state.lake) as snap:
            mine = my_decisions(snap, reviewer())
            detail = load_item(snap, item)
        return render_template(
            "item.html", item=item, detail=detail, index=index, total=len(state.sample.items),
            done=sum((it.kind, it.item_id) in mine for it in state.sample.items),
            mine=mine.get((item.kind, item.item_id)), reviewer=reviewer(), labels=LABELS,
            sample_id=state.sample.sample_id,
        )

    @app.post("/decide/<int:index>")
    def decide(index: int):
        item = _item_at(state, index)
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return jsonify(error="send the decision as a JSON object"), 400
        d = Decision(decision=str(body.get("decision", "")), reason=str(body.get("reason") or ""),
                     label=str(body.get("label") or ""), review_id=str(body.get("review_id") or ""))
        with state.lock:
            with LakeSnapshot(state.lake) as snap:
                judged = load_item(snap, item).get("verdict", {}).get("verdict")
            try:
                row = record(state.lake, item, d, reviewer(), state.sample.sample_id, judged)
            except DecisionError as exc:
                return jsonify(error=str(exc)), 400
            state.decided[(row["reviewer"], row["decision"])] += 1
        last = index + 1 >= len(state.sample.items)
        return jsonify(review_id=row["review_id"], next=url_for("finished") if last else url_for("show_item", index=index + 1))

    @app.get("/done")
    def finished():
        with state.lock, LakeSnapshot(state.lake) as snap:
            mine = my_decisions(snap, reviewer())
        return render_template("done.html", decisions=Counter(mine.values()), total=len(state.sample.items),
                               reviewer=reviewer())

    @app.get("/blob/<sha>")
    def blob(sha: str):
        if not _SHA.match(sha):
            abort(404)
        try:
            data = state.lake.read_blob(sha)
        except FileNotFoundError:
            abort(404)
        kind = "image/png" if data[:8] == b"\x89PNG\r\n\x1a\n" else "application/octet-stream"
        return data, 200, {"Content-Type": kind, "Cache-Control": "private, max-age=3600"}

    return app


def _from_our_own_page() -> bool:
    """A state-changing request was sent by a page of this app: the browser's Origin is ours and, where the
    browser says, the request is same-origin. A request with neither header (not from a browser) is refused."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("Origin")
    if origin is None:
        return site == "same-origin"
    return origin == request.host_url.rstrip("/")


class _TokenFreeLog(WSGIRequestHandler):
    """The access log without the token: `/?token=...` is how a reviewer opens the app."""

    def log(self, type: str, message: str, *args: Any) -> None:
        text = _TOKEN_IN_URL.sub(r"\1token=<redacted>", message % args if args else message)
        super().log(type, "%s", text)


_TOKEN_IN_URL = re.compile(r"([?&])token=[^&\s\"]*")


def _item_at(state: ReviewState, index: int) -> SampleItem:
    if not 0 <= index < len(state.sample.items):
        abort(404)
    return state.sample.items[index]


class LakeSnapshot:
    """One DuckDB connection with the lake's views for the queries of one request (a connection per query
    would rebuild every view each time)."""

    def __init__(self, lake: Lake) -> None:
        self.lake = lake
        self.con = lake.connect()

    def files(self, table: str) -> list[Path]:
        return self.lake.files(table)

    def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def __enter__(self) -> LakeSnapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.con.close()


def my_decisions(lake: LakeSnapshot, reviewer: str) -> dict[tuple[str, str], str]:
    """The reviewer's latest decision per item in this lake (from any session)."""
    if not lake.files("reviews"):
        return {}
    rows = lake.query("SELECT item_kind, item_id, decision FROM reviews WHERE reviewer = ?", [reviewer])
    return {(r["item_kind"], r["item_id"]): r["decision"] for r in rows}


def load_item(lake: LakeSnapshot, item: SampleItem) -> dict[str, Any]:
    return _load_task(lake, item.item_id) if item.kind == "task" else _load_trajectory(lake, item.item_id)


def _load_task(lake: LakeSnapshot, task_id: str) -> dict[str, Any]:
    rows = lake.query("SELECT * FROM tasks WHERE task_id = ?", [task_id])
    if not rows:
        abort(404)
    task = rows[0]
    film: list[dict[str, Any]] = []
    replay = None
    if lake.files("trajectories") and lake.files("steps"):
        found = lake.query(
            "SELECT trajectory_id FROM trajectories WHERE task_id = ? AND policy = 'replay' "
            "ORDER BY (ended = 'terminated') DESC, finished_at DESC LIMIT 1", [task_id])
        if found:
            replay = found[0]["trajectory_id"]
            film = _steps(lake, replay)
    return {
        "task": task,
        "injection": [{"skill": i.get("skill") or i.get("skill_id"), "args": _pretty(i.get("args"))}
                      for i in _json(task["injection_json"], [])],
        "verifier": _verifier(task["verifier_json"]),
        "reference": [_pretty(a, indent=None) for a in _json(task["reference_json"], [])],
        "replay": replay, "film": film,
    }


def _load_trajectory(lake: LakeSnapshot, trajectory_id: str) -> dict[str, Any]:
    rows = lake.query("SELECT * FROM trajectories WHERE trajectory_id = ? ORDER BY recorded_at DESC LIMIT 1", [trajectory_id])
    if not rows:
        abort(404)
    traj = rows[0]
    task = lake.query("SELECT * FROM tasks_history WHERE task_id = ? ORDER BY recorded_at DESC LIMIT 1", [traj["task_id"]])
    verdicts = lake.query("SELECT * FROM verdicts WHERE trajectory_id = ? ORDER BY recorded_at DESC LIMIT 1", [trajectory_id])
    verdict = verdicts[0] if verdicts else {}
    failures = lake.query("SELECT * FROM failures WHERE trajectory_id = ? ORDER BY first_step, kind",
                          [trajectory_id]) if lake.files("failures") else []
    return {
        "trajectory": traj, "task": task[0] if task else None,
        "verifier": _verifier(task[0]["verifier_json"]) if task else None,
        "verdict": verdict, "votes": _json(verdict.get("votes_json"), []), "failures": failures,
        "faults": [_pretty(f, indent=None) for f in _json(traj.get("injected_faults_json"), [])],
        "film": _steps(lake, trajectory_id),
    }


def _steps(lake: LakeSnapshot, trajectory_id: str) -> list[dict[str, Any]]:
    if not lake.files("steps"):
        return []
    rows = lake.query("SELECT step_index, screenshot_sha, url, actions_json, format_error, ok, error, sensitive "
                      "FROM steps WHERE trajectory_id = ? ORDER BY step_index", [trajectory_id])
    for r in rows:
        r["actions"] = [_pretty(a, indent=None) for a in _json(r["actions_json"], [])]
        r["has_image"] = bool(r["screenshot_sha"]) and bool(_SHA.match(r["screenshot_sha"]))
    return rows


def _verifier(raw: str | None) -> dict[str, Any]:
    v = _json(raw, {}) or {}
    if "template" in v:
        return {"kind": "template", "template": v["template"], "params": _pretty(v.get("params"))}
    return {"kind": "code", "template": v.get("kind", "code"), "params": _pretty(v)}


def _json(raw: str | None, default: Any) -> Any:
    if not raw:
        return default
    try:
        return json.loads(raw)
    except ValueError:
        return default


def _pretty(value: Any, indent: int | None = 1) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=True, default=str)


# ---- running it ---------------------------------------------------------------------------------------
def start_server(state: ReviewState, host: str = "127.0.0.1", port: int = 0) -> tuple[BaseWSGIServer, threading.Thread]:
    """The app on a threaded WSGI server in a background thread (port 0: any free port)."""
    server = make_server(host, port, create_app(state), threaded=True, request_handler=_TokenFreeLog)
    thread = threading.Thread(target=server.serve_forever, name="review-app", daemon=True)
    thread.start()
    return server, thread


def serve_review(lake: Lake, host: str = "127.0.0.1", port: int = 8765, reviewer: str = "reviewer",
                 sample: int = 30, seed: int = 0) -> int:
    try:
        drawn = draw_sample(lake, sample, seed)
        state = ReviewState(lake, drawn, reviewer, secrets.token_urlsafe(24))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not drawn.items:
        print(f"nothing to review in {lake.root}: run `flywheel run synthesize-tasks` (pairs) or "
              "`flywheel run cycle` (judged trajectories) first", file=sys.stderr)
        return 1
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {host}: anyone who can reach it and holds the token can review (no TLS)")
    try:
        server = make_server(host, port, create_app(state), threaded=True, request_handler=_TokenFreeLog)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port} ({exc.strerror}); pick another --port", file=sys.stderr)
        return 2
    lows = sum(i.why == "low_agreement" for i in drawn.items)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    print(f"review queue: {len(drawn.items)} items ({lows} low-agreement judge cases), sample {drawn.sample_id}")
    print(f"open  http://{shown}:{server.server_port}/?token={state.token}")
    print("keys: a accept · r reject · l relabel · f flag verifier · j/k next/prev; Ctrl-C ends", flush=True)
    def stop(signum, frame):
        raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: a shell starting us in the background ignores it
        signal.signal(sig, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    lake.refresh_catalog()
    made = sum(state.decided.values())
    print(f"\n{made} decision(s) this session" + (":" if made else ""))
    for (who, decision), n in sorted(state.decided.items()):
        print(f"  {who:16} {decision:14} {n}")
    print("agreement and flagged verifiers: flywheel review stats")
    return 0
