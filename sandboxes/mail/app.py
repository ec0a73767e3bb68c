"""Mail: a single-user webmail client (Flask + SQLite + Jinja), a sandbox app for flywheel.

    python app.py --port 5000 --db mail.db

creates mail.db from schema.sql + seed.py when it does not exist, then serves on 127.0.0.1:PORT.
The signed-in user is the single row of `settings` (id 1); there is no login.
System folders have fixed ids: 1 Inbox, 2 Sent, 3 Drafts, 4 Archive, 5 Trash.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import sqlite3
from datetime import datetime
from pathlib import Path

from flask import Flask, abort, flash, g, jsonify, redirect, render_template, request, url_for

HERE = Path(__file__).resolve().parent
INBOX, SENT, DRAFTS, ARCHIVE, TRASH = 1, 2, 3, 4, 5
COLOURS = ["red", "orange", "yellow", "green", "teal", "blue", "purple", "pink", "grey"]
PAGE_SIZES = [10, 25, 50, 100]
CONTACTS_PER_PAGE = 50
EMAIL_RE = re.compile(r"^[^@\s,<>]+@[^@\s,<>]+\.[^@\s,<>]+$")

app = Flask(__name__)
app.secret_key = "mail-sandbox-not-a-secret"
app.config["DATABASE"] = str(HERE / "mail.db")


# ---- database -----------------------------------------------------------------------------------
def create_db(path: str) -> None:
    """Create the DB file from schema.sql and seed.py (atomically: build aside, then rename)."""
    import sys

    sys.path.insert(0, str(HERE))
    from seed import seed

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".creating")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    conn.executescript((HERE / "schema.sql").read_text())
    seed(conn)
    conn.commit()
    conn.close()
    os.replace(tmp, target)


def get_db() -> sqlite3.Connection:
    """A new connection per request, closed on teardown (default rollback journal, no WAL)."""
    if "db" not in g:
        g.db = sqlite3.connect(app.config["DATABASE"], timeout=10)
        g.db.row_factory = sqlite3.Row
        g.db.execute("PRAGMA foreign_keys = ON")
    return g.db


@app.teardown_appcontext
def close_db(exc: BaseException | None) -> None:
    db = g.pop("db", None)
    if db is not None:
        db.close()


def now() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M")


def get_settings() -> sqlite3.Row:
    return get_db().execute("SELECT * FROM settings WHERE id = 1").fetchone()


def get_message(message_id: int) -> sqlite3.Row:
    row = get_db().execute(
        "SELECT messages.*, folders.name AS folder_name FROM messages JOIN folders ON folders.id = messages.folder_id "
        "WHERE messages.id = ?",
        (message_id,),
    ).fetchone()
    if row is None:
        abort(404)
    return row


def get_folder(folder_id: int) -> sqlite3.Row:
    row = get_db().execute("SELECT * FROM folders WHERE id = ?", (folder_id,)).fetchone()
    if row is None:
        abort(404)
    return row


def textarea(name: str) -> str:
    """A textarea's value with the browser's CRLF line ends turned into plain newlines."""
    return request.form.get(name, "").replace("\r\n", "\n").replace("\r", "\n")


def split_addresses(value: str) -> list[str]:
    return [a.strip() for a in re.split(r"[,;]", value or "") if a.strip()]


def bad_addresses(value: str) -> list[str]:
    return [a for a in split_addresses(value) if not EMAIL_RE.match(a)]


def clean_addresses(value: str) -> str:
    return ", ".join(split_addresses(value))


# ---- paging and message lists -------------------------------------------------------------------
def paging(total: int, per_page: int) -> dict:
    pages = max(1, math.ceil(total / per_page))
    page = min(max(1, request.args.get("page", 1, type=int)), pages)
    first = (page - 1) * per_page
    return dict(page=page, pages=pages, total=total, per_page=per_page, offset=first,
                first=first + 1 if total else 0, last=min(first + per_page, total))


def attach_labels(rows: list[sqlite3.Row]) -> list[dict]:
    """Message rows as dicts, each with its labels (name, colour)."""
    msgs = [dict(r) for r in rows]
    if not msgs:
        return msgs
    ids = [m["id"] for m in msgs]
    marks = ",".join("?" * len(ids))
    found: dict[int, list] = {}
    for r in get_db().execute(
        f"SELECT message_labels.message_id, labels.id, labels.name, labels.colour FROM message_labels "
        f"JOIN labels ON labels.id = message_labels.label_id WHERE message_labels.message_id IN ({marks}) "
        f"ORDER BY labels.name",
        ids,
    ):
        found.setdefault(r["message_id"], []).append(dict(id=r["id"], name=r["name"], colour=r["colour"]))
    for m in msgs:
        m["labels"] = found.get(m["id"], [])
    return msgs


LIST_COLUMNS = ("messages.id, messages.folder_id, messages.from_name, messages.from_email, messages.to_email, "
                "messages.subject, substr(messages.body, 1, 160) AS snippet, messages.sent_at, messages.is_read, "
                "messages.is_starred")


@app.template_global()
def page_url(page: int) -> str:
    args = request.args.to_dict()
    args["page"] = page
    return url_for(request.endpoint, **(request.view_args or {}), **args)


@app.template_filter("listdate")
def listdate(value: str) -> str:
    try:
        return datetime.strptime(value, "%Y-%m-%d %H:%M").strftime("%b %-d, %Y")
    except (TypeError, ValueError):
        return value or ""


@app.template_filter("longdate")
def longdate(value: str) -> str:
    try:
        return datetime.strptime(value, "%Y-%m-%d %H:%M").strftime("%a, %b %-d, %Y at %H:%M")
    except (TypeError, ValueError):
        return value or ""


@app.context_processor
def layout_data() -> dict:
    """What base.html needs on every page: folders with unread counts, labels, the account."""
    if request.endpoint in ("health", "static"):
        return {}
    db = get_db()
    folders = db.execute(
        "SELECT folders.id, folders.name, folders.is_system, "
        "(SELECT COUNT(*) FROM messages WHERE messages.folder_id = folders.id AND messages.is_read = 0) AS unread, "
        "(SELECT COUNT(*) FROM messages WHERE messages.folder_id = folders.id) AS total "
        "FROM folders ORDER BY folders.position, folders.name"
    ).fetchall()
    return dict(
        nav_folders=folders,
        nav_labels=db.execute("SELECT id, name, colour FROM labels ORDER BY name").fetchall(),
        account=get_settings(),
        vacation=db.execute("SELECT * FROM vacation_reply WHERE id = 1").fetchone(),
        colours=COLOURS,
    )


# ---- health and home ----------------------------------------------------------------------------
@app.get("/health")
def health():
    return jsonify(status="ok")


@app.get("/")
def home():
    return redirect(url_for("show_folder", folder_id=INBOX))


# ---- folders ------------------------------------------------------------------------------------
@app.get("/folders")
def list_folders():
    return render_template("folders.html")


@app.route("/folders/new", methods=["GET", "POST"])
def new_folder():
    error = None
    name = ""
    if request.method == "POST":
        name = request.form.get("name", "").strip()
        if not name:
            error = "Enter a folder name."
        else:
            db = get_db()
            try:
                cur = db.execute("INSERT INTO folders (name) VALUES (?)", (name,))
                db.commit()
            except sqlite3.IntegrityError:
                error = f'A folder named "{name}" already exists.'
            else:
                flash(f'Folder "{name}" created.')
                return redirect(url_for("show_folder", folder_id=cur.lastrowid))
    return render_template("folder_form.html", folder=None, name=name, error=error), (422 if error else 200)


@app.get("/folders/<int:folder_id>")
def show_folder(folder_id: int):
    folder = get_folder(folder_id)
    db = get_db()
    unread_only = request.args.get("unread") == "1"
    total = db.execute(
        "SELECT COUNT(*) FROM messages WHERE folder_id = ? AND (? = 0 OR is_read = 0)", (folder_id, unread_only)
    ).fetchone()[0]
    pg = paging(total, get_settings()["messages_per_page"])
    rows = db.execute(
        f"SELECT {LIST_COLUMNS} FROM messages WHERE folder_id = ? AND (? = 0 OR is_read = 0) "
        f"ORDER BY sent_at DESC, id DESC LIMIT ? OFFSET ?",
        (folder_id, unread_only, pg["per_page"], pg["offset"]),
    ).fetchall()
    unread = db.execute("SELECT COUNT(*) FROM messages WHERE folder_id = ? AND is_read = 0", (folder_id,)).fetchone()[0]
    return render_template("folder.html", folder=folder, messages=attach_labels(rows), pg=pg, unread=unread,
                           unread_only=unread_only)


@app.route("/folders/<int:folder_id>/edit", methods=["GET", "POST"])
def edit_folder(folder_id: int):
    folder = get_folder(folder_id)
    if folder["is_system"]:
        flash(f'The {folder["name"]} folder is a system folder and cannot be renamed.')
        return redirect(url_for("show_folder", folder_id=folder_id))
    error = None
    name = folder["name"]
    if request.method == "POST":
        name = request.form.get("name", "").strip()
        if not name:
            error = "Enter a folder name."
        else:
            db = get_db()
            try:
                db.execute("UPDATE folders SET name = ? WHERE id = ?", (name, folder_id))
                db.commit()
            except sqlite3.IntegrityError:
                error = f'A folder named "{name}" already exists.'
            else:
                flash(f'Folder renamed to "{name}".')
                return redirect(url_for("show_folder", folder_id=folder_id))
    return render_template("folder_form.html", folder=folder, name=name, error=error), (422 if error else 200)


@app.post("/folders/<int:folder_id>/delete")
def delete_folder(folder_id: int):
    folder = get_folder(folder_id)
    if folder["is_system"]:
        flash(f'The {folder["name"]} folder is a system folder and cannot be deleted.')
        return redirect(url_for("show_folder", folder_id=folder_id))
    db = get_db()
    # Messages in a deleted folder go back to the Inbox.
    db.execute("UPDATE messages SET folder_id = 1 WHERE folder_id = ?", (folder_id,))
    db.execute("DELETE FROM folders WHERE id = ?", (folder_id,))
    db.commit()
    flash(f'Folder "{folder["name"]}" deleted. Its messages were moved to the Inbox.')
    return redirect(url_for("list_folders"))


@app.post("/folders/<int:folder_id>/mark-read")
def mark_folder_read(folder_id: int):
    folder = get_folder(folder_id)
    db = get_db()
    db.execute("UPDATE messages SET is_read = 1 WHERE folder_id = ?", (folder_id,))
    db.commit()
    flash(f"All messages in {folder['name']} marked as read.")
    return redirect(url_for("show_folder", folder_id=folder_id))


@app.post("/trash/empty")
def empty_trash():
    db = get_db()
    cur = db.execute("DELETE FROM messages WHERE folder_id = 5")
    db.commit()
    flash(f"Trash emptied: {cur.rowcount} messages deleted forever.")
    return redirect(url_for("show_folder", folder_id=TRASH))


# ---- message lists ------------------------------------------------------------------------------
@app.get("/messages")
def list_messages():
    """All mail: every message except those in the Trash."""
    db = get_db()
    total = db.execute("SELECT COUNT(*) FROM messages WHERE folder_id != 5").fetchone()[0]
    pg = paging(total, get_settings()["messages_per_page"])
    rows = db.execute(
        f"SELECT {LIST_COLUMNS}, folders.name AS folder_name FROM messages JOIN folders ON folders.id = messages.folder_id "
        f"WHERE messages.folder_id != 5 ORDER BY messages.sent_at DESC, messages.id DESC LIMIT ? OFFSET ?",
        (pg["per_page"], pg["offset"]),
    ).fetchall()
    return render_template("messages.html", title="All mail", messages=attach_labels(rows), pg=pg, show_folder=True)


@app.get("/starred")
def starred_messages():
    db = get_db()
    total = db.execute("SELECT COUNT(*) FROM messages WHERE is_starred = 1").fetchone()[0]
    pg = paging(total, get_settings()["messages_per_page"])
    rows = db.execute(
        f"SELECT {LIST_COLUMNS}, folders.name AS folder_name FROM messages JOIN folders ON folders.id = messages.folder_id "
        f"WHERE messages.is_starred = 1 ORDER BY messages.sent_at DESC, messages.id DESC LIMIT ? OFFSET ?",
        (pg["per_page"], pg["offset"]),
    ).fetchall()
    return render_template("messages.html", title="Starred", messages=attach_labels(rows), pg=pg, show_folder=True)


@app.get("/search")
def search():
    q = request.args.get("q", "").strip()
    folder_id = request.args.get("folder_id", type=int)
    db = get_db()
    like = f"%{q}%"
    total = db.execute(
        "SELECT COUNT(*) FROM messages WHERE (subject LIKE ? OR body LIKE ? OR from_name LIKE ? OR from_email LIKE ? "
        "OR to_email LIKE ? OR cc_email LIKE ?) AND (? IS NULL OR folder_id = ?)",
        (like, like, like, like, like, like, folder_id, folder_id),
    ).fetchone()[0]
    pg = paging(total, get_settings()["messages_per_page"])
    rows = db.execute(
        f"SELECT {LIST_COLUMNS}, folders.name AS folder_name FROM messages JOIN folders ON folders.id = messages.folder_id "
        f"WHERE (messages.subject LIKE ? OR messages.body LIKE ? OR messages.from_name LIKE ? OR messages.from_email LIKE ? "
        f"OR messages.to_email LIKE ? OR messages.cc_email LIKE ?) AND (? IS NULL OR messages.folder_id = ?) "
        f"ORDER BY messages.sent_at DESC, messages.id DESC LIMIT ? OFFSET ?",
        (like, like, like, like, like, like, folder_id, folder_id, pg["per_page"], pg["offset"]),
    ).fetchall()
    contacts = []
    if q:
        contacts = db.execute(
            "SELECT id, name, email, company FROM contacts WHERE name LIKE ? OR email LIKE ? OR company LIKE ? "
            "ORDER BY name LIMIT 10",
            (like, like, like),
        ).fetchall()
    folder = db.execute("SELECT * FROM folders WHERE id = ?", (folder_id,)).fetchone() if folder_id else None
    return render_template("search.html", q=q, folder=folder, messages=attach_labels(rows), pg=pg, contacts=contacts,
                           show_folder=True)


# ---- one message --------------------------------------------------------------------------------
@app.get("/messages/<int:message_id>")
def show_message(message_id: int):
    message = get_message(message_id)
    db = get_db()
    if not message["is_read"]:
        db.execute("UPDATE messages SET is_read = 1 WHERE id = ?", (message_id,))
        db.commit()
    labels = db.execute(
        "SELECT labels.id, labels.name, labels.colour FROM labels JOIN message_labels ON message_labels.label_id = labels.id "
        "WHERE message_labels.message_id = ? ORDER BY labels.name",
        (message_id,),
    ).fetchall()
    other_labels = db.execute(
        "SELECT id, name FROM labels WHERE id NOT IN (SELECT label_id FROM message_labels WHERE message_id = ?) "
        "ORDER BY name",
        (message_id,),
    ).fetchall()
    folders = db.execute("SELECT id, name FROM folders WHERE id != ? ORDER BY position, name",
                         (message["folder_id"],)).fetchall()
    parent = None
    if message["in_reply_to"]:
        parent = db.execute("SELECT id, subject, from_name FROM messages WHERE id = ?",
                            (message["in_reply_to"],)).fetchone()
    replies = db.execute("SELECT id, subject, from_name, sent_at FROM messages WHERE in_reply_to = ? ORDER BY sent_at",
                         (message_id,)).fetchall()
    return render_template("message.html", message=message, labels=labels, other_labels=other_labels,
                           folders=folders, parent=parent, replies=replies)


@app.post("/messages/<int:message_id>/unread")
def mark_unread(message_id: int):
    message = get_message(message_id)
    db = get_db()
    db.execute("UPDATE messages SET is_read = 0 WHERE id = ?", (message_id,))
    db.commit()
    flash("Message marked as unread.")
    return redirect(url_for("show_folder", folder_id=message["folder_id"]))


@app.post("/messages/<int:message_id>/star")
def star_message(message_id: int):
    get_message(message_id)
    db = get_db()
    db.execute("UPDATE messages SET is_starred = 1 WHERE id = ?", (message_id,))
    db.commit()
    flash("Message starred.")
    return redirect(url_for("show_message", message_id=message_id))


@app.post("/messages/<int:message_id>/unstar")
def unstar_message(message_id: int):
    get_message(message_id)
    db = get_db()
    db.execute("UPDATE messages SET is_starred = 0 WHERE id = ?", (message_id,))
    db.commit()
    flash("Star removed.")
    return redirect(url_for("show_message", message_id=message_id))


@app.post("/messages/<int:message_id>/archive")
def archive_message(message_id: int):
    message = get_message(message_id)
    db = get_db()
    db.execute("UPDATE messages SET folder_id = 4 WHERE id = ?", (message_id,))
    db.commit()
    flash("Message archived.")
    return redirect(url_for("show_folder", folder_id=message["folder_id"]))


@app.post("/messages/<int:message_id>/move")
def move_message(message_id: int):
    message = get_message(message_id)
    folder_id = request.form.get("folder_id", type=int)
    target = get_db().execute("SELECT id, name FROM folders WHERE id = ?", (folder_id,)).fetchone()
    if target is None:
        flash("Choose a folder to move the message to.")
        return redirect(url_for("show_message", message_id=message_id))
    db = get_db()
    db.execute("UPDATE messages SET folder_id = ? WHERE id = ?", (folder_id, message_id))
    db.commit()
    flash(f"Message moved to {target['name']}.")
    return redirect(url_for("show_folder", folder_id=message["folder_id"]))


@app.post("/messages/<int:message_id>/trash")
def trash_message(message_id: int):
    """The "Delete" button: moves the message to the Trash (folder 5)."""
    message = get_message(message_id)
    db = get_db()
    db.execute("UPDATE messages SET folder_id = 5 WHERE id = ?", (message_id,))
    db.commit()
    flash("Message moved to Trash.")
    return redirect(url_for("show_folder", folder_id=message["folder_id"]))


@app.post("/messages/<int:message_id>/delete")
def delete_message(message_id: int):
    """The "Delete forever" button: removes the message row for good."""
    message = get_message(message_id)
    db = get_db()
    db.execute("DELETE FROM messages WHERE id = ?", (message_id,))
    db.commit()
    flash("Message deleted forever.")
    return redirect(url_for("show_folder", folder_id=message["folder_id"]))


@app.post("/messages/<int:message_id>/labels")
def apply_label(message_id: int):
    get_message(message_id)
    label_id = request.form.get("label_id", type=int)
    label = get_db().execute("SELECT id, name FROM labels WHERE id = ?", (label_id,)).fetchone()
    if label is None:
        flash("Choose a label to apply.")
        return redirect(url_for("show_message", message_id=message_id))
    db = get_db()
    db.execute("INSERT OR IGNORE INTO message_labels (message_id, label_id) VALUES (?, ?)", (message_id, label_id))
    db.commit()
    flash(f'Label "{label["name"]}" applied.')
    return redirect(url_for("show_message", message_id=message_id))


@app.post("/messages/<int:message_id>/labels/<int:label_id>/delete")
def remove_label(message_id: int, label_id: int):
    get_message(message_id)
    label = get_db().execute("SELECT id, name FROM labels WHERE id = ?", (label_id,)).fetchone()
    if label is None:
        abort(404)
    db = get_db()
    db.execute("DELETE FROM message_labels WHERE message_id = ? AND label_id = ?", (message_id, label_id))
    db.commit()
    flash(f'Label "{label["name"]}" removed.')
    return redirect(url_for("show_message", message_id=message_id))


# ---- compose, reply, forward, drafts --------------------------------------------------------------
def signature_block() -> str:
    sig = get_settings()["signature"].strip()
    return f"\n\n-- \n{sig}" if sig else ""


def quote(message: sqlite3.Row) -> str:
    lines = "\n".join("> " + line for line in message["body"].splitlines())
    return (f"\n\nOn {longdate(message['sent_at'])}, {message['from_name']} <{message['from_email']}> wrote:\n"
            f"{lines}")


def compose_page(values: dict, heading: str, error: str | None = None, status: int = 200, draft=None):
    contacts = get_db().execute("SELECT name, email FROM contacts ORDER BY name").fetchall()
    return render_template("compose.html", values=values, heading=heading, error=error, draft=draft,
                           contacts=contacts), status


@app.route("/messages/new", methods=["GET", "POST"])
def compose():
    if request.method == "GET":
        values = dict(to_email=request.args.get("to", ""), cc_email="", subject=request.args.get("subject", ""),
                      body=signature_block(), in_reply_to="")
        return compose_page(values, "New message")
    form = request.form
    values = dict(to_email=form.get("to_email", ""), cc_email=form.get("cc_email", ""),
                  subject=form.get("subject", "").strip(), body=textarea("body"),
                  in_reply_to=form.get("in_reply_to", ""))
    in_reply_to = form.get("in_reply_to", type=int)
    if in_reply_to and get_db().execute("SELECT 1 FROM messages WHERE id = ?", (in_reply_to,)).fetchone() is None:
        in_reply_to = None
    me = get_settings()
    db = get_db()
    if form.get("action") == "draft":
        db.execute(
            "INSERT INTO messages (folder_id, from_name, from_email, to_email, cc_email, subject, body, sent_at, "
            "is_read, in_reply_to) VALUES (3, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
            (me["display_name"], me["email"], clean_addresses(values["to_email"]), clean_addresses(values["cc_email"]),
             values["subject"], values["body"], now(), in_reply_to),
        )
        db.commit()
        flash("Draft saved.")
        return redirect(url_for("show_folder", folder_id=DRAFTS))
    error = None
    if not split_addresses(values["to_email"]):
        error = "Add at least one recipient in To."
    elif bad_addresses(values["to_email"] + "," + values["cc_email"]):
        error = "Not a valid email address: " + ", ".join(bad_addresses(values["to_email"] + "," + values["cc_email"]))
    if error:
        return compose_page(values, "New message", error, 422)
    db.execute(
        "INSERT INTO messages (folder_id, from_name, from_email, to_email, cc_email, subject, body, sent_at, "
        "is_read, in_reply_to) VALUES (2, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
        (me["display_name"], me["email"], clean_addresses(values["to_email"]), clean_addresses(values["cc_email"]),
         values["subject"], values["body"], now(), in_reply_to),
    )
    db.commit()
    flash("Message sent.")
    if in_reply_to:
        return redirect(url_for("show_message", message_id=in_reply_to))
    return redirect(url_for("show_folder", folder_id=SENT))


def reply_recipient(message: sqlite3.Row) -> str:
    me = get_settings()["email"]
    return message["to_email"] if message["from_email"].lower() == me.lower() else message["from_email"]


@app.get("/messages/<int:message_id>/reply")
def reply(message_id: int):
    message = get_message(message_id)
    subject = message["subject"] if message["subject"].lower().startswith("re:") else f"Re: {message['subject']}"
    values = dict(to_email=reply_recipient(message), cc_email="", subject=subject,
                  body=signature_block() + quote(message), in_reply_to=message_id)
    return compose_page(values, "Reply")


@app.get("/messages/<int:message_id>/reply-all")
def reply_all(message_id: int):
    message = get_message(message_id)
    me = get_settings()["email"].lower()
    to = reply_recipient(message)
    others = [a for a in split_addresses(message["to_email"] + "," + message["cc_email"])
              if a.lower() != me and a.lower() not in to.lower()]
    subject = message["subject"] if message["subject"].lower().startswith("re:") else f"Re: {message['subject']}"
    values = dict(to_email=to, cc_email=", ".join(others), subject=subject,
                  body=signature_block() + quote(message), in_reply_to=message_id)
    return compose_page(values, "Reply all")


@app.get("/messages/<int:message_id>/forward")
def forward(message_id: int):
    message = get_message(message_id)
    subject = message["subject"] if message["subject"].lower().startswith("fwd:") else f"Fwd: {message['subject']}"
    body = (f"{signature_block()}\n\n---------- Forwarded message ----------\n"
            f"From: {message['from_name']} <{message['from_email']}>\nDate: {longdate(message['sent_at'])}\n"
            f"Subject: {message['subject']}\nTo: {message['to_email']}\n\n{message['body']}")
    values = dict(to_email="", cc_email="", subject=subject, body=body, in_reply_to="")
    return compose_page(values, "Forward")


@app.route("/messages/<int:message_id>/edit", methods=["GET", "POST"])
def edit_draft(message_id: int):
    draft = get_message(message_id)
    if draft["folder_id"] != DRAFTS:
        flash("Only drafts can be edited.")
        return redirect(url_for("show_message", message_id=message_id))
    if request.method == "GET":
        values = dict(to_email=draft["to_email"], cc_email=draft["cc_email"], subject=draft["subject"],
                      body=draft["body"], in_reply_to=draft["in_reply_to"] or "")
        return compose_page(values, "Edit draft", draft=draft)
    form = request.form
    values = dict(to_email=form.get("to_email", ""), cc_email=form.get("cc_email", ""),
                  subject=form.get("subject", "").strip(), body=textarea("body"),
                  in_reply_to=draft["in_reply_to"] or "")
    db = get_db()
    if form.get("action") == "draft":
        db.execute(
            "UPDATE messages SET to_email = ?, cc_email = ?, subject = ?, body = ?, sent_at = ? WHERE id = ?",
            (clean_addresses(values["to_email"]), clean_addresses(values["cc_email"]), values["subject"],
             values["body"], now(), message_id),
        )
        db.commit()
        flash("Draft saved.")
        return redirect(url_for("show_folder", folder_id=DRAFTS))
    error = None
    if not split_addresses(values["to_email"]):
        error = "Add at least one recipient in To."
    elif bad_addresses(values["to_email"] + "," + values["cc_email"]):
        error = "Not a valid email address: " + ", ".join(bad_addresses(values["to_email"] + "," + values["cc_email"]))
    if error:
        return compose_page(values, "Edit draft", error, 422, draft=draft)
    me = get_settings()
    db.execute(
        "UPDATE messages SET folder_id = 2, from_name = ?, from_email = ?, to_email = ?, cc_email = ?, subject = ?, "
        "body = ?, sent_at = ?, is_read = 1 WHERE id = ?",
        (me["display_name"], me["email"], clean_addresses(values["to_email"]), clean_addresses(values["cc_email"]),
         values["subject"], values["body"], now(), message_id),
    )
    db.commit()
    flash("Message sent.")
    return redirect(url_for("show_folder", folder_id=SENT))


# ---- labels -------------------------------------------------------------------------------------
@app.get("/labels")
def list_labels():
    labels = get_db().execute(
        "SELECT labels.id, labels.name, labels.colour, "
        "(SELECT COUNT(*) FROM message_labels WHERE message_labels.label_id = labels.id) AS messages "
        "FROM labels ORDER BY labels.name"
    ).fetchall()
    return render_template("labels.html", labels=labels)


def label_form_values() -> tuple[dict, str | None]:
    values = dict(name=request.form.get("name", "").strip(), colour=request.form.get("colour", ""))
    if not values["name"]:
        return values, "Enter a label name."
    if values["colour"] not in COLOURS:
        return values, "Choose a colour."
    return values, None


@app.route("/labels/new", methods=["GET", "POST"])
def new_label():
    values, error = dict(name="", colour="blue"), None
    if request.method == "POST":
        values, error = label_form_values()
        if not error:
            db = get_db()
            try:
                cur = db.execute("INSERT INTO labels (name, colour) VALUES (?, ?)", (values["name"], values["colour"]))
                db.commit()
            except sqlite3.IntegrityError:
                error = f'A label named "{values["name"]}" already exists.'
            else:
                flash(f'Label "{values["name"]}" created.')
                return redirect(url_for("show_label", label_id=cur.lastrowid))
    return render_template("label_form.html", label=None, values=values, error=error), (422 if error else 200)


@app.get("/labels/<int:label_id>")
def show_label(label_id: int):
    db = get_db()
    label = db.execute("SELECT * FROM labels WHERE id = ?", (label_id,)).fetchone()
    if label is None:
        abort(404)
    total = db.execute("SELECT COUNT(*) FROM message_labels WHERE label_id = ?", (label_id,)).fetchone()[0]
    pg = paging(total, get_settings()["messages_per_page"])
    rows = db.execute(
        f"SELECT {LIST_COLUMNS}, folders.name AS folder_name FROM messages "
        f"JOIN message_labels ON message_labels.message_id = messages.id JOIN folders ON folders.id = messages.folder_id "
        f"WHERE message_labels.label_id = ? ORDER BY messages.sent_at DESC, messages.id DESC LIMIT ? OFFSET ?",
        (label_id, pg["per_page"], pg["offset"]),
    ).fetchall()
    return render_template("label.html", label=label, messages=attach_labels(rows), pg=pg, show_folder=True)


@app.route("/labels/<int:label_id>/edit", methods=["GET", "POST"])
def edit_label(label_id: int):
    db = get_db()
    label = db.execute("SELECT * FROM labels WHERE id = ?", (label_id,)).fetchone()
    if label is None:
        abort(404)
    values, error = dict(name=label["name"], colour=label["colour"]), None
    if request.method == "POST":
        values, error = label_form_values()
        if not error:
            try:
                db.execute("UPDATE labels SET name = ?, colour = ? WHERE id = ?",
                           (values["name"], values["colour"], label_id))
                db.commit()
            except sqlite3.IntegrityError:
                error = f'A label named "{values["name"]}" already exists.'
            else:
                flash(f'Label "{values["name"]}" saved.')
                return redirect(url_for("show_label", label_id=label_id))
    return render_template("label_form.html", label=label, values=values, error=error), (422 if error else 200)


@app.post("/labels/<int:label_id>/delete")
def delete_label(label_id: int):
    db = get_db()
    label = db.execute("SELECT * FROM labels WHERE id = ?", (label_id,)).fetchone()
    if label is None:
        abort(404)
    db.execute("DELETE FROM labels WHERE id = ?", (label_id,))
    db.commit()
    flash(f'Label "{label["name"]}" deleted.')
    return redirect(url_for("list_labels"))


# ---- contacts -----------------------------------------------------------------------------------
CONTACT_FIELDS = ("name", "email", "phone", "company", "notes")


def contact_form_values() -> tuple[dict, str | None]:
    values = {f: request.form.get(f, "").strip() for f in CONTACT_FIELDS}
    values["notes"] = textarea("notes").strip()
    if not values["name"]:
        return values, "Enter a name."
    if not EMAIL_RE.match(values["email"]):
        return values, "Enter a valid email address."
    return values, None


def get_contact(contact_id: int) -> sqlite3.Row:
    row = get_db().execute("SELECT * FROM contacts WHERE id = ?", (contact_id,)).fetchone()
    if row is None:
        abort(404)
    return row


@app.get("/contacts")
def list_contacts():
    db = get_db()
    total = db.execute("SELECT COUNT(*) FROM contacts").fetchone()[0]
    pg = paging(total, CONTACTS_PER_PAGE)
    contacts = db.execute("SELECT * FROM contacts ORDER BY name, id LIMIT ? OFFSET ?",
                          (pg["per_page"], pg["offset"])).fetchall()
    return render_template("contacts.html", contacts=contacts, pg=pg)


@app.route("/contacts/new", methods=["GET", "POST"])
def new_contact():
    values, error = {f: "" for f in CONTACT_FIELDS}, None
    if request.method == "POST":
        values, error = contact_form_values()
        if not error:
            db = get_db()
            cur = db.execute(
                "INSERT INTO contacts (name, email, phone, company, notes) VALUES (?, ?, ?, ?, ?)",
                (values["name"], values["email"], values["phone"], values["company"], values["notes"]),
            )
            db.commit()
            flash(f'Contact "{values["name"]}" added.')
            return redirect(url_for("show_contact", contact_id=cur.lastrowid))
    return render_template("contact_form.html", contact=None, values=values, error=error), (422 if error else 200)


@app.get("/contacts/<int:contact_id>")
def show_contact(contact_id: int):
    contact = get_contact(contact_id)
    recent = get_db().execute(
        "SELECT id, subject, from_name, sent_at FROM messages WHERE from_email = ? OR to_email LIKE ? "
        "ORDER BY sent_at DESC LIMIT 10",
        (contact["email"], f"%{contact['email']}%"),
    ).fetchall()
    return render_template("contact.html", contact=contact, recent=recent)


@app.route("/contacts/<int:contact_id>/edit", methods=["GET", "POST"])
def edit_contact(contact_id: int):
    contact = get_contact(contact_id)
    values, error = {f: contact[f] for f in CONTACT_FIELDS}, None
    if request.method == "POST":
        values, error = contact_form_values()
        if not error:
            db = get_db()
            db.execute(
                "UPDATE contacts SET name = ?, email = ?, phone = ?, company = ?, notes = ? WHERE id = ?",
                (values["name"], values["email"], values["phone"], values["company"], values["notes"], contact_id),
            )
            db.commit()
            flash(f'Contact "{values["name"]}" saved.')
            return redirect(url_for("show_contact", contact_id=contact_id))
    return render_template("contact_form.html", contact=contact, values=values, error=error), (422 if error else 200)


@app.post("/contacts/<int:contact_id>/delete")
def delete_contact(contact_id: int):
    contact = get_contact(contact_id)
    db = get_db()
    db.execute("DELETE FROM contacts WHERE id = ?", (contact_id,))
    db.commit()
    flash(f'Contact "{contact["name"]}" deleted.')
    return redirect(url_for("list_contacts"))


# ---- settings (single-row tables, id 1) ---------------------------------------------------------
@app.get("/settings")
def show_settings():
    return render_template("settings.html")


@app.route("/settings/account", methods=["GET", "POST"])
def account_settings():
    error = None
    values = dict(get_settings())
    if request.method == "POST":
        values = dict(display_name=request.form.get("display_name", "").strip(),
                      messages_per_page=request.form.get("messages_per_page", type=int))
        if not values["display_name"]:
            error = "Enter a display name."
        elif values["messages_per_page"] not in PAGE_SIZES:
            error = "Choose how many messages to show per page."
        else:
            db = get_db()
            db.execute("UPDATE settings SET display_name = ?, messages_per_page = ? WHERE id = 1",
                       (values["display_name"], values["messages_per_page"]))
            db.commit()
            flash("Account settings saved.")
            return redirect(url_for("show_settings"))
    return render_template("settings_account.html", values=values, page_sizes=PAGE_SIZES, error=error), (
        422 if error else 200)


@app.route("/settings/signature", methods=["GET", "POST"])
def signature_settings():
    if request.method == "POST":
        db = get_db()
        db.execute("UPDATE settings SET signature = ? WHERE id = 1", (textarea("signature").strip(),))
        db.commit()
        flash("Signature saved.")
        return redirect(url_for("show_settings"))
    return render_template("settings_signature.html")


@app.route("/settings/vacation", methods=["GET", "POST"])
def vacation_settings():
    error = None
    values = dict(get_db().execute("SELECT * FROM vacation_reply WHERE id = 1").fetchone())
    if request.method == "POST":
        values = dict(enabled=1 if request.form.get("enabled") == "1" else 0,
                      subject=request.form.get("subject", "").strip(),
                      message=textarea("message").strip(),
                      start_date=request.form.get("start_date", "").strip() or None,
                      end_date=request.form.get("end_date", "").strip() or None)
        for key in ("start_date", "end_date"):
            if values[key]:
                try:
                    datetime.strptime(values[key], "%Y-%m-%d")
                except ValueError:
                    error = "Dates must look like 2026-12-24."
        if not error and values["start_date"] and values["end_date"] and values["end_date"] < values["start_date"]:
            error = "The end date must not be before the start date."
        if not error and values["enabled"] and not values["message"]:
            error = "Write the vacation message before turning the vacation reply on."
        if not error:
            db = get_db()
            db.execute(
                "UPDATE vacation_reply SET enabled = ?, subject = ?, message = ?, start_date = ?, end_date = ? WHERE id = 1",
                (values["enabled"], values["subject"], values["message"], values["start_date"], values["end_date"]),
            )
            db.commit()
            flash("Vacation reply " + ("turned on." if values["enabled"] else "saved (off)."))
            return redirect(url_for("show_settings"))
    return render_template("settings_vacation.html", values=values, error=error), (422 if error else 200)


@app.errorhandler(404)
def not_found(exc):
    return render_template("not_found.html"), 404


def main() -> None:
    parser = argparse.ArgumentParser(description="Mail sandbox app")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--db", default=str(HERE / "mail.db"))
    args = parser.parse_args()
    db_path = str(Path(args.db).resolve())
    if not os.path.exists(db_path):
        create_db(db_path)
    app.config["DATABASE"] = db_path
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    app.run(host="127.0.0.1", port=args.port, threaded=True, debug=False, use_reloader=False)


if __name__ == "__main__":
    main()
