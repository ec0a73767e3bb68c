"""The workspace sandbox: a desktop-like folder of files (CSV, Markdown, JSON, images) with a small
file browser and editor on the web, run in a container beside a shell.

`python app.py --socket PATH --root DIR` serves on a unix socket (how the container driver runs it:
the container has no network at all); `python app.py --port PORT --root DIR [--seed DIR]` serves on
127.0.0.1:PORT for a person to click through, copying the seed into DIR first when DIR does not exist.

Every change lands in the files under the root: there is no database. Paths in URLs are relative to
the root; a path that leaves the root is refused.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import mimetypes
import shutil
from pathlib import Path

import flask.cli
from flask import Flask, abort, flash, jsonify, redirect, render_template, request, send_file, url_for

TEXT_SUFFIXES = {".md", ".txt", ".csv", ".tsv", ".json", ".log"}
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg"}

app = Flask(__name__)
app.config["SECRET_KEY"] = "workspace-sandbox-not-a-secret"
app.config["ROOT"] = "/workspace"
app.jinja_env.trim_blocks = True
app.jinja_env.lstrip_blocks = True


# ---------------------------------------------------------------- paths

def root() -> Path:
    return Path(app.config["ROOT"]).resolve()


def resolve(rel: str) -> Path:
    """The file or folder at `rel` under the root; 404 for a path that leaves the root."""
    path = (root() / rel).resolve()
    if path != root() and root() not in path.parents:
        abort(404)
    return path


def relpath(path: Path) -> str:
    return path.relative_to(root()).as_posix()


def existing_file(rel: str) -> Path:
    path = resolve(rel)
    if not path.is_file():
        abort(404)
    return path


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    return (rows[0], rows[1:]) if rows else ([], [])


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    path.write_text(out.getvalue())


def parse_like(old: object, text: str) -> object:
    """A form value typed like the value it replaces (numbers stay numbers, booleans booleans)."""
    text = text.strip()
    if isinstance(old, bool):
        return text.lower() in ("true", "yes", "1", "on")
    if isinstance(old, (int, float)):
        try:
            number = float(text)
        except ValueError:
            return text
        return int(number) if number.is_integer() and isinstance(old, int) else number
    return text


# ---------------------------------------------------------------- pages

@app.get("/health")
def health():
    return jsonify(status="ok")


@app.get("/")
def home():
    return redirect(url_for("folder", rel=""))


@app.get("/files/", defaults={"rel": ""})
@app.get("/files/<path:rel>")
def folder(rel: str):
    path = resolve(rel)
    if not path.is_dir():
        abort(404)
    entries = sorted(path.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
    items = [
        {"name": p.name, "rel": relpath(p), "is_dir": p.is_dir(), "size": p.stat().st_size if p.is_file() else None}
        for p in entries
    ]
    parent = relpath(path.parent) if path != root() else None
    return render_template("folder.html", rel=rel.strip("/"), items=items, parent=parent)


@app.get("/view/<path:rel>")
def view(rel: str):
    path = existing_file(rel)
    suffix = path.suffix.lower()
    context = {"rel": rel, "name": path.name, "folder": relpath(path.parent)}
    if suffix == ".csv":
        header, rows = read_csv(path)
        return render_template("view_csv.html", header=header, rows=rows, **context)
    if suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            return render_template("view_text.html", text=path.read_text(), error=f"Not valid JSON: {exc}", **context)
        fields = data.items() if isinstance(data, dict) else []
        shown = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in fields]
        return render_template("view_json.html", fields=shown, **context)
    if suffix in IMAGE_SUFFIXES:
        return render_template("view_image.html", size=path.stat().st_size, **context)
    return render_template("view_text.html", text=path.read_text(errors="replace"), error=None, **context)


@app.get("/raw/<path:rel>")
def raw(rel: str):
    path = existing_file(rel)
    return send_file(path, mimetype=mimetypes.guess_type(path.name)[0] or "application/octet-stream")


@app.route("/edit/<path:rel>", methods=["GET", "POST"])
def edit_file(rel: str):
    path = existing_file(rel)
    if path.suffix.lower() not in TEXT_SUFFIXES:
        abort(404)
    if request.method == "POST":
        path.write_text(request.form["content"].replace("\r\n", "\n"))
        flash(f"Saved {path.name}")
        return redirect(url_for("view", rel=rel))
    return render_template("edit.html", rel=rel, name=path.name, content=path.read_text())


@app.route("/row/<path:rel>/<int:index>", methods=["GET", "POST"])
def edit_row(rel: str, index: int):
    path = existing_file(rel)
    header, rows = read_csv(path)
    if not 0 <= index < len(rows):
        abort(404)
    if request.method == "POST":
        rows[index] = [request.form.get(f"col{i}", "").strip() for i in range(len(header))]
        write_csv(path, header, rows)
        flash(f"Saved row {index + 1} of {path.name}")
        return redirect(url_for("view", rel=rel))
    row = rows[index] + [""] * (len(header) - len(rows[index]))
    return render_template("row_form.html", rel=rel, name=path.name, index=index, fields=list(zip(header, row)))


@app.route("/field/<path:rel>", methods=["GET", "POST"])
def edit_field(rel: str):
    path = existing_file(rel)
    data = json.loads(path.read_text())
    key = request.values.get("key", "")
    if not isinstance(data, dict) or key not in data:
        abort(404)
    if request.method == "POST":
        data[key] = parse_like(data[key], request.form["value"])
        path.write_text(json.dumps(data, indent=2) + "\n")
        flash(f"Saved {key} in {path.name}")
        return redirect(url_for("view", rel=rel))
    value = data[key] if isinstance(data[key], str) else json.dumps(data[key])
    return render_template("field_form.html", rel=rel, name=path.name, key=key, value=value)


@app.post("/rename/<path:rel>")
def rename(rel: str):
    path = existing_file(rel)
    new_name = request.form["new_name"].strip()
    if not new_name or "/" in new_name or new_name in (".", ".."):
        flash("A new name is a file name, without folders")
        return redirect(url_for("view", rel=rel))
    target = path.with_name(new_name)
    if target.exists():
        flash(f"{new_name} already exists")
        return redirect(url_for("view", rel=rel))
    path.rename(target)
    flash(f"Renamed {path.name} to {new_name}")
    return redirect(url_for("view", rel=relpath(target)))


@app.post("/delete/<path:rel>")
def delete(rel: str):
    path = existing_file(rel)
    parent = relpath(path.parent) if path.parent != root() else ""
    path.unlink()
    flash(f"Deleted {path.name}")
    return redirect(url_for("folder", rel=parent))


@app.route("/new/", defaults={"rel": ""}, methods=["GET", "POST"])
@app.route("/new/<path:rel>", methods=["GET", "POST"])
def new_file(rel: str):
    folder_path = resolve(rel)
    if not folder_path.is_dir():
        abort(404)
    if request.method == "POST":
        name = request.form["name"].strip()
        if not name or "/" in name or (folder_path / name).exists():
            flash("Choose a new file name, without folders")
            return redirect(url_for("new_file", rel=rel))
        (folder_path / name).write_text(request.form.get("content", "").replace("\r\n", "\n"))
        flash(f"Created {name}")
        return redirect(url_for("view", rel=relpath(folder_path / name)))
    return render_template("new_file.html", rel=rel.strip("/"))


@app.errorhandler(404)
def not_found(_exc):
    return render_template("not_found.html"), 404


# ---------------------------------------------------------------- serving

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--socket", help="serve on this unix socket (the container driver's way)")
    where.add_argument("--port", type=int, help="serve on 127.0.0.1:PORT")
    parser.add_argument("--root", required=True, help="the workspace folder")
    parser.add_argument("--seed", help="copied into --root first when --root does not exist")
    args = parser.parse_args()
    if args.seed and not Path(args.root).exists():
        shutil.copytree(args.seed, args.root)
    app.config["ROOT"] = args.root
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    flask.cli.show_server_banner = lambda *a, **k: None
    from werkzeug.serving import make_server

    host = f"unix://{args.socket}" if args.socket else "127.0.0.1"
    make_server(host, args.port or 0, app, threaded=True).serve_forever()


if __name__ == "__main__":
    main()
