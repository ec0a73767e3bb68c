"""End-to-end smoke test of the mail sandbox: starts the app on a free port with a fresh DB, clicks
through it with Playwright (real Chromium) and checks the DB after every write.

    python sandboxes/mail/smoke_test.py [--screenshot inbox.png]

Exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

HERE = Path(__file__).resolve().parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"app exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200 and b'"ok"' in r.read():
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"app not ready at {url} after {timeout}s")


def step(name: str) -> None:
    print(f"- {name}", flush=True)


def check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def run(base: str, db_path: Path, screenshot: str | None) -> None:
    def q(sql: str, *args):
        conn = sqlite3.connect(db_path)
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    check(q("PRAGMA journal_mode")[0][0] != "wal", "DB must not use WAL")
    counts = {t: q(f"SELECT COUNT(*) FROM {t}")[0][0]
              for t in ("messages", "contacts", "labels", "message_labels", "folders", "settings", "vacation_reply")}
    print("row counts:", counts)
    check(2000 <= counts["messages"] <= 3000 and counts["contacts"] >= 100 and counts["labels"] >= 8, "seed volume")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.set_default_timeout(10_000)
        status = page.get_by_role("status")

        step("inbox loads")
        page.goto(base + "/")
        expect(page.get_by_role("heading", level=1)).to_have_text("Inbox")
        if screenshot:
            page.screenshot(path=screenshot)
            print(f"  screenshot: {screenshot}")

        step("search for a message (q + folder filter) and open it")
        search = page.get_by_role("search")
        search.get_by_label("Search", exact=True).fill("Invoice question")
        search.get_by_label("Search in").select_option(label="Inbox")
        search.get_by_role("button", name="Search").click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("Search results")
        first = page.locator("table.messages tbody a").first
        subject = first.inner_text()
        check("Invoice question" in subject, f"search hit {subject!r}")
        first.click()
        expect(page.get_by_role("heading", level=1)).to_have_text(subject)
        msg_id = int(re.search(r"/messages/(\d+)$", page.url).group(1))
        original = q("SELECT from_email, is_read, folder_id FROM messages WHERE id = ?", msg_id)[0]
        check(original[1] == 1 and original[2] == 1, "opened message is read and in the Inbox")
        expect(page.locator("dl dt", has_text="From")).to_be_visible()

        step("star/unstar it, apply a label, remove it")
        if q("SELECT is_starred FROM messages WHERE id = ?", msg_id)[0][0]:
            page.get_by_role("button", name="Unstar", exact=True).click()
            expect(status).to_contain_text("Star removed.")
            check(q("SELECT is_starred FROM messages WHERE id = ?", msg_id)[0][0] == 0, "unstarred in DB")
        page.get_by_role("button", name="Star", exact=True).click()
        expect(status).to_contain_text("Message starred.")
        check(q("SELECT is_starred FROM messages WHERE id = ?", msg_id)[0][0] == 1, "starred in DB")
        page.get_by_label("Label", exact=True).select_option(label="Urgent")
        page.get_by_role("button", name="Apply label").click()
        expect(status).to_contain_text('"Urgent" applied')
        urgent = q("SELECT id FROM labels WHERE name = 'Urgent'")[0][0]
        check(bool(q("SELECT 1 FROM message_labels WHERE message_id = ? AND label_id = ?", msg_id, urgent)), "label row")
        page.get_by_role("button", name="Remove label Urgent").click()
        expect(status).to_contain_text('"Urgent" removed')
        check(not q("SELECT 1 FROM message_labels WHERE message_id = ? AND label_id = ?", msg_id, urgent), "label gone")

        step("reply and Send")
        page.get_by_role("link", name="Reply", exact=True).click()
        expect(page.get_by_label("To", exact=True)).to_have_value(original[0])
        expect(page.get_by_label("Subject", exact=True)).to_have_value(f"Re: {subject}")
        body = page.get_by_label("Body", exact=True)
        body.fill("Thanks, I'll look into it today.\n\n" + body.input_value())
        page.get_by_role("button", name="Send", exact=True).click()
        expect(status).to_contain_text("Message sent.")
        sent = q("SELECT to_email, subject, body, from_email FROM messages WHERE folder_id = 2 AND in_reply_to = ?", msg_id)
        check(len(sent) == 1, f"one sent reply row, got {sent}")
        check(sent[0][0] == original[0] and sent[0][1] == f"Re: {subject}", f"sent row {sent[0][:2]}")
        check(sent[0][2].startswith("Thanks, I'll look into it today.") and "wrote:" in sent[0][2], "reply body quoted")

        step("compose a new message and save it as a draft, then edit and send the draft")
        page.get_by_role("link", name="Compose").click()
        page.get_by_label("To", exact=True).fill("dana.kim@brightwave.io")
        page.get_by_label("Subject", exact=True).fill("Smoke test draft")
        page.get_by_role("button", name="Save draft").click()
        expect(status).to_contain_text("Draft saved.")
        draft_id = q("SELECT id FROM messages WHERE folder_id = 3 AND subject = 'Smoke test draft'")[0][0]
        page.get_by_role("link", name="Smoke test draft").click()
        page.get_by_role("link", name="Edit draft").click()
        page.get_by_label("Cc", exact=True).fill("not-an-address")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(status).to_contain_text("Not a valid email address")
        check(q("SELECT folder_id FROM messages WHERE id = ?", draft_id)[0][0] == 3, "invalid draft not sent")
        page.get_by_label("Cc", exact=True).fill("")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(status).to_contain_text("Message sent.")
        check(q("SELECT folder_id FROM messages WHERE id = ?", draft_id)[0][0] == 2, "draft moved to Sent")

        step("create a contact via its form")
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Contacts").click()
        page.get_by_role("link", name="New contact").click()
        page.get_by_label("Name", exact=True).fill("Zed Smoketest")
        page.get_by_label("Email", exact=True).fill("zed@smoketest.example")
        page.get_by_label("Phone", exact=True).fill("+1 415 555 0100")
        page.get_by_label("Company", exact=True).fill("Acme Testing")
        page.get_by_label("Notes", exact=True).fill("Created by the smoke test.")
        page.get_by_role("button", name="Save contact").click()
        expect(status).to_contain_text('"Zed Smoketest" added')
        rows = q("SELECT id, email, phone, company, notes FROM contacts WHERE name = 'Zed Smoketest'")
        check(rows and rows[0][1:] == ("zed@smoketest.example", "+1 415 555 0100", "Acme Testing",
                                       "Created by the smoke test."), f"contact row {rows}")
        contact_id = rows[0][0]
        expect(page.locator("dl dd", has_text="Acme Testing")).to_be_visible()

        step("edit the contact")
        page.get_by_role("link", name="Edit contact").click()
        page.get_by_label("Phone", exact=True).fill("+1 415 555 0199")
        page.get_by_label("Company", exact=True).fill("Acme Labs")
        page.get_by_role("button", name="Save contact").click()
        expect(status).to_contain_text("saved")
        check(q("SELECT phone, company FROM contacts WHERE id = ?", contact_id) == [("+1 415 555 0199", "Acme Labs")],
              "contact updated")

        step("delete the contact")
        page.get_by_role("button", name="Delete contact").click()
        expect(status).to_contain_text("deleted")
        check(not q("SELECT 1 FROM contacts WHERE id = ?", contact_id), "contact row deleted")

        step("change the signature")
        page.get_by_role("link", name="Settings").click()
        page.get_by_role("link", name="Edit signature").click()
        page.get_by_label("Signature", exact=True).fill("Alex M.\nSent from the smoke test")
        page.get_by_role("button", name="Save signature").click()
        expect(status).to_contain_text("Signature saved.")
        check(q("SELECT signature FROM settings WHERE id = 1")[0][0] == "Alex M.\nSent from the smoke test",
              "signature in DB")
        page.get_by_role("link", name="Compose").click()
        check("Sent from the smoke test" in page.get_by_label("Body", exact=True).input_value(), "signature in compose")

        step("vacation reply on")
        page.goto(base + "/settings/vacation")
        page.get_by_label("Vacation reply on").check()
        page.get_by_label("Start date").fill("2026-12-20")
        page.get_by_label("End date").fill("2027-01-04")
        page.get_by_role("button", name="Save vacation reply").click()
        expect(status).to_contain_text("turned on")
        check(q("SELECT enabled, start_date, end_date FROM vacation_reply WHERE id = 1") == [(1, "2026-12-20", "2027-01-04")],
              "vacation reply in DB")

        step("move a message to Archive")
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Inbox").click()
        link = page.locator("table.messages tbody a").first
        link.click()
        move_id = int(re.search(r"/messages/(\d+)$", page.url).group(1))
        page.get_by_label("Move to folder").select_option(label="Archive")
        page.get_by_role("button", name="Move", exact=True).click()
        expect(status).to_contain_text("Message moved to Archive.")
        check(q("SELECT folder_id FROM messages WHERE id = ?", move_id)[0][0] == 4, "moved to Archive in DB")

        step("archive button, delete to trash, delete forever, empty trash")
        page.locator("table.messages tbody a").first.click()
        arch_id = int(re.search(r"/messages/(\d+)$", page.url).group(1))
        page.get_by_role("button", name="Archive", exact=True).click()
        expect(status).to_contain_text("Message archived.")
        check(q("SELECT folder_id FROM messages WHERE id = ?", arch_id)[0][0] == 4, "archived in DB")
        page.locator("table.messages tbody a").first.click()
        del_id = int(re.search(r"/messages/(\d+)$", page.url).group(1))
        page.get_by_role("button", name="Delete", exact=True).click()
        expect(status).to_contain_text("Message moved to Trash.")
        check(q("SELECT folder_id FROM messages WHERE id = ?", del_id)[0][0] == 5, "in Trash")
        page.goto(f"{base}/messages/{del_id}")
        page.get_by_role("button", name="Delete forever").click()
        expect(status).to_contain_text("deleted forever")
        check(not q("SELECT 1 FROM messages WHERE id = ?", del_id), "row deleted forever")
        page.get_by_role("button", name="Empty trash").click()
        expect(status).to_contain_text("Trash emptied")
        check(q("SELECT COUNT(*) FROM messages WHERE folder_id = 5")[0][0] == 0, "trash empty")

        step("create a label and a folder")
        page.goto(base + "/labels/new")
        page.get_by_label("Name", exact=True).fill("Smoke")
        page.get_by_label("Colour").select_option(label="Purple")
        page.get_by_role("button", name="Create label").click()
        expect(status).to_contain_text('"Smoke" created')
        check(q("SELECT colour FROM labels WHERE name = 'Smoke'") == [("purple",)], "label row")
        page.goto(base + "/folders/new")
        page.get_by_label("Name", exact=True).fill("Smoke folder")
        page.get_by_role("button", name="Create folder").click()
        expect(status).to_contain_text('"Smoke folder" created')
        expect(page.get_by_role("heading", level=1)).to_have_text("Smoke folder")
        check(q("SELECT is_system FROM folders WHERE name = 'Smoke folder'") == [(0,)], "folder row")

        step("pagination: Next and Previous")
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Inbox").click()
        page.get_by_role("link", name="Next", exact=True).click()
        expect(page.get_by_role("navigation", name="Pagination")).to_contain_text("Page 2 of")
        page.get_by_role("link", name="Previous", exact=True).click()
        expect(page.get_by_role("navigation", name="Pagination")).to_contain_text("Page 1 of")

        browser.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--screenshot", help="save a screenshot of the inbox here")
    args = ap.parse_args()

    # The manifest must load with the project's own loader, when the repo is importable.
    sys.path.insert(0, str(HERE.parents[1]))
    try:
        from sandboxes.manifest import load_manifest
    except ImportError as exc:
        print(f"(skipping manifest check: {exc})")
    else:
        m = load_manifest(HERE)
        for name, kind in [("Send", "send"), ("Delete", "delete"), ("Delete forever", "delete"),
                           ("Empty trash", "delete"), ("Delete contact", "delete"), ("Save draft", None)]:
            check(m.sensitive_kind(name) == kind, f"sensitive_kind({name!r}) should be {kind!r}")
        print("manifest ok:", m.name)

    with tempfile.TemporaryDirectory(prefix="mail-smoke-") as tmp:
        db_path = Path(tmp) / "mail.db"
        port = free_port()
        log = open(Path(tmp) / "app.log", "wb")
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port), "--db", str(db_path)], cwd=HERE,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_ready(f"http://127.0.0.1:{port}/health", proc)
            print(f"app ready on port {port} in {time.monotonic() - t0:.2f}s (including seeding)")
            run(f"http://127.0.0.1:{port}", db_path, args.screenshot)
        except Exception as exc:  # report and fail
            print(f"FAIL: {type(exc).__name__}: {exc}")
            log.flush()
            print((Path(tmp) / "app.log").read_text()[-3000:])
            return 1
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
    print("OK: all smoke checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
