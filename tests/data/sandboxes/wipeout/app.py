"""A test sandbox: notes with a pin toggle, an add form, and a button that deletes every row."""

from __future__ import annotations

import argparse
import logging
import sqlite3

from flask import Flask, g, redirect, render_template_string, request

app = Flask(__name__)
PAGE = """<!doctype html><html><head><title>Notes</title></head><body>
<nav aria-label="Main"><a href="/">Notes</a> <a href="/new">New note</a> <a href="/danger">Danger zone</a></nav>
<main>{% block main %}{% endblock %}</main></body></html>"""
LIST = PAGE.replace("{% block main %}{% endblock %}", """<h1>Notes</h1><ul>
{% for n in notes %}<li><a href="/notes/{{ n.id }}">{{ n.title }}</a></li>{% endfor %}</ul>""")
DETAIL = PAGE.replace("{% block main %}{% endblock %}", """<h1>{{ note.title }}</h1><dl><dt>Pinned</dt>
<dd>{{ 'yes' if note.pinned else 'no' }}</dd></dl>
<form method="post" action="/notes/{{ note.id }}/pin" aria-label="Pin note"><button type="submit">Pin</button></form>""")
NEW = PAGE.replace("{% block main %}{% endblock %}", """<h1>New note</h1>
<form method="post" action="/new" aria-label="Add note"><label for="note-title">Title</label>
<input id="note-title" name="title" required><button type="submit">Add note</button></form>""")
DANGER = PAGE.replace("{% block main %}{% endblock %}", """<h1>Danger zone</h1>
<form method="post" action="/wipe" aria-label="Wipe data"><button type="submit">Delete everything</button></form>""")


def db() -> sqlite3.Connection:
    if "db" not in g:
        g.db = sqlite3.connect(app.config["DB_PATH"], timeout=10)
        g.db.row_factory = sqlite3.Row
    return g.db


@app.teardown_appcontext
def close(_exc: object) -> None:
    conn = g.pop("db", None)
    if conn is not None:
        conn.close()


@app.get("/health")
def health():
    return {"status": "ok"}


@app.get("/")
def notes_list():
    return render_template_string(LIST, notes=db().execute("SELECT id, title FROM notes ORDER BY id").fetchall())


@app.get("/notes/<int:id>")
def note_detail(id: int):
    return render_template_string(DETAIL, note=db().execute("SELECT * FROM notes WHERE id = ?", [id]).fetchone())


@app.post("/notes/<int:id>/pin")
def note_pin(id: int):
    with db() as conn:
        conn.execute("UPDATE notes SET pinned = 1 - pinned WHERE id = ?", [id])
    return redirect(f"/notes/{id}")


@app.route("/new", methods=["GET", "POST"])
def note_new():
    if request.method == "POST":
        with db() as conn:
            conn.execute("INSERT INTO notes (title, pinned) VALUES (?, 0)", [request.form["title"]])
        return redirect("/")
    return render_template_string(NEW)


@app.get("/danger")
def danger():
    return render_template_string(DANGER)


@app.post("/wipe")
def wipe():
    with db() as conn:
        conn.execute("DELETE FROM notes")
    return redirect("/")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True)
    args = parser.parse_args()
    conn = sqlite3.connect(args.db)
    with conn:
        conn.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, pinned INTEGER NOT NULL)")
        if not conn.execute("SELECT count(*) FROM notes").fetchone()[0]:
            conn.executemany("INSERT INTO notes (title, pinned) VALUES (?, 0)", [(f"Note {i}",) for i in range(1, 6)])
    conn.close()
    app.config["DB_PATH"] = args.db
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app.run(host="127.0.0.1", port=args.port, threaded=True)


if __name__ == "__main__":
    main()
