"""Smoke test of the shop sandbox: starts the app on a free port with a fresh DB, clicks through the
main flows with Playwright (by role and label, like the agents do) and checks the rows in SQLite.

    python sandboxes/shop/smoke_test.py [--screenshot PATH] [--headed]

Exits non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import json
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
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base: str, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=1) as r:
                body = json.loads(r.read())
                if r.status == 200 and body == {"status": "ok"}:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("app did not become healthy")


def step(msg: str) -> None:
    print(f"ok   {msg}", flush=True)


def run(base: str, db_path: Path, screenshot: Path | None, headed: bool) -> None:
    def q(sql: str, *params):
        conn = sqlite3.connect(db_path)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    orders_before = q("SELECT COUNT(*) FROM orders")[0][0]
    # A product whose name contains "Merino" with an in-stock variant: what a user would pick.
    pid, pname, vid, size, colour, price, stock = q(
        "SELECT p.id, p.name, v.id, v.size, v.colour, v.price_cents, v.stock FROM products p "
        "JOIN variants v ON v.product_id = p.id WHERE p.name LIKE 'Merino%' AND v.stock >= 3 "
        "ORDER BY p.id, v.id LIMIT 1"
    )[0]
    option = f"{size} / {colour} — ${price / 100:,.2f}"

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=not headed
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(10_000)

        # --- search -> product -> add a variant to the cart
        page.goto(base + "/")
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        page.get_by_role("search").get_by_label("Search", exact=True).fill("Merino")
        page.get_by_role("button", name="Search", exact=True).click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Results for “Merino”")
        step("search for 'Merino'")
        page.get_by_role("link", name=pname, exact=True).first.click()
        expect(page.get_by_role("heading", level=1)).to_have_text(pname)
        assert page.url.endswith(f"/products/{pid}"), page.url
        step(f"open product page {pname!r}")
        if screenshot:
            page.screenshot(path=str(screenshot), full_page=False)
            step(f"screenshot of the product page -> {screenshot}")
        page.get_by_label("Variant").select_option(label=option)
        page.get_by_label("Quantity").fill("2")
        page.get_by_role("button", name="Add to cart").click()
        expect(page.get_by_role("status")).to_contain_text(f"Added 2 × {pname} ({size} / {colour})")
        assert q("SELECT quantity FROM cart_items WHERE variant_id = ?", vid) == [(2,)]
        step(f"add 2 × {option!r} to the cart")

        # --- cart: coupon, quantity update, remove the pre-seeded line
        page.get_by_label("Coupon code").fill("WELCOME10")
        page.get_by_role("button", name="Apply coupon").click()
        expect(page.get_by_role("status")).to_contain_text("Coupon WELCOME10 applied")
        assert q("SELECT coupon_code FROM carts WHERE id = 1") == [("WELCOME10",)]
        step("apply coupon WELCOME10")
        other = q(
            "SELECT ci.id, p.name, v.size, v.colour FROM cart_items ci JOIN variants v ON v.id = ci.variant_id "
            "JOIN products p ON p.id = v.product_id WHERE ci.variant_id != ?",
            vid,
        )
        for _cid, name, osize, ocolour in other:
            page.get_by_role("form", name=f"Remove {name} ({osize} / {ocolour})").get_by_role(
                "button", name="Remove"
            ).click()
            expect(page.get_by_role("status")).to_contain_text(f"Removed {name}")
        assert q("SELECT COUNT(*) FROM cart_items") == [(1,)]
        step(f"remove {len(other)} other cart line(s)")
        item = f"{pname} ({size} / {colour})"
        page.get_by_label(f"Quantity of {item}").fill("3")
        page.get_by_role("form", name=f"Update {item}").get_by_role("button", name="Update").click()
        expect(page.get_by_role("status")).to_contain_text(f"Updated {item} to 3")
        page.get_by_label(f"Quantity of {item}").fill("2")
        page.get_by_role("form", name=f"Update {item}").get_by_role("button", name="Update").click()
        assert q("SELECT quantity FROM cart_items WHERE variant_id = ?", vid) == [(2,)]
        step("update the quantity (3, then back to 2)")

        # --- checkout: address, then the payment confirmation step
        page.get_by_role("link", name="Proceed to checkout").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Checkout: shipping")
        page.get_by_label("Ship to").select_option(
            label="Work — Jamie Rivera, 1200 Harbor Boulevard, Floor 9, Seattle"
        )
        page.get_by_role("button", name="Continue to payment").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Checkout: payment")
        step("choose the Work address")
        page.get_by_label("Payment card").select_option(label="Mastercard ending in 5454 (expires 02/2027)")
        page.get_by_role("button", name="Place order").click()
        expect(page.get_by_role("status")).to_contain_text("placed. Thank you!")
        rows = q(
            "SELECT id, status, address_id, payment_card_id, ship_city, coupon_code, subtotal_cents, "
            "discount_cents, total_cents FROM orders ORDER BY id DESC LIMIT 1"
        )
        oid, status, address_id, card_id, city, coupon, subtotal, discount, total = rows[0]
        assert q("SELECT COUNT(*) FROM orders")[0][0] == orders_before + 1
        assert (status, address_id, card_id, city, coupon) == ("processing", 2, 2, "Seattle", "WELCOME10"), (
            rows
        )
        assert subtotal == 2 * price and discount == subtotal // 10, rows
        assert q(
            "SELECT variant_id, quantity, unit_price_cents FROM order_items WHERE order_id = ?", oid
        ) == [(vid, 2, price)]
        assert q("SELECT stock FROM variants WHERE id = ?", vid) == [(stock - 2,)]
        assert q("SELECT COUNT(*) FROM cart_items") == [(0,)]
        expect(page.get_by_role("heading", level=1)).to_have_text(f"Order #{oid}")
        step(
            f"Place order -> order #{oid} ({status}, total ${total / 100:.2f}), stock {stock} -> {stock - 2}, "
            "cart emptied"
        )
        page.get_by_role("link", name="Orders", exact=True).click()
        expect(page.get_by_role("link", name=f"Order #{oid}", exact=True)).to_be_visible()
        step("new order is in the orders list")

        # --- addresses: add, edit, delete
        page.get_by_role("link", name="Addresses", exact=True).click()
        page.get_by_role("link", name="Add a new address").click()
        page.get_by_label("Label").fill("Cabin")
        page.get_by_label("Full name").fill("Jamie Rivera")
        page.get_by_label("Street").fill("7 Lakeshore Drive")
        page.get_by_label("City").fill("Bend")
        page.get_by_label("State / region").fill("OR")
        page.get_by_label("Postcode").fill("97701")
        page.get_by_label("Country").fill("United States")
        page.get_by_label("Phone").fill("+1 541 555 0110")
        page.get_by_role("button", name="Add address").click()
        expect(page.get_by_role("status")).to_contain_text("Address “Cabin” added.")
        rows = q(
            "SELECT id, full_name, street, city, region, postcode, country, is_default FROM addresses "
            "WHERE label = 'Cabin'"
        )
        assert len(rows) == 1 and rows[0][1:] == (
            "Jamie Rivera",
            "7 Lakeshore Drive",
            "Bend",
            "OR",
            "97701",
            "United States",
            0,
        ), rows
        aid = rows[0][0]
        expect(page.locator("dl")).to_contain_text("7 Lakeshore Drive")
        step(f"add address 'Cabin' (row {aid})")
        page.get_by_role("link", name="Edit address").click()
        page.get_by_label("City").fill("Sisters")
        page.get_by_label("Use as my default address").check()
        page.get_by_role("button", name="Save address").click()
        expect(page.get_by_role("status")).to_contain_text("Address “Cabin” saved.")
        assert q("SELECT city, is_default FROM addresses WHERE id = ?", aid) == [("Sisters", 1)]
        assert q("SELECT COUNT(*) FROM addresses WHERE is_default = 1") == [(1,)]
        step("edit it: city -> Sisters, default")
        page.get_by_role("link", name="Edit address").click()
        page.get_by_role("button", name="Delete", exact=True).click()
        expect(page.get_by_role("status")).to_contain_text("Address “Cabin” deleted.")
        assert q("SELECT COUNT(*) FROM addresses WHERE id = ?", aid) == [(0,)]
        step("delete it")

        # --- wishlist, review, return, settings, password, filters
        page.goto(f"{base}/products/{pid}")
        page.get_by_role("button", name="Add to wishlist").click()
        assert q("SELECT COUNT(*) FROM wishlist_items WHERE product_id = ?", pid) == [(1,)]
        page.get_by_role("button", name="Remove from wishlist").click()
        assert q("SELECT COUNT(*) FROM wishlist_items WHERE product_id = ?", pid) == [(0,)]
        step("wishlist add and remove")
        page.get_by_label("Rating").select_option("4")
        page.get_by_label("Title").fill("Warm and soft")
        page.get_by_label("Your review").fill("No itch at all, true to size.")
        page.get_by_role("button", name="Submit review").click()
        expect(page.get_by_role("status")).to_contain_text("Your review")
        assert q(
            "SELECT rating, user_id FROM reviews WHERE title = 'Warm and soft' AND product_id = ?", pid
        ) == [(4, 1)]
        step("add a review (4 stars)")
        page.get_by_role("link", name="Returns", exact=True).click()
        page.get_by_role("link", name="Request a return").click()
        page.get_by_label("Item").select_option(index=1)
        page.get_by_label("Reason").select_option("Doesn't fit")
        page.get_by_label("Comments").fill("Too small")
        page.get_by_role("button", name="Request return").click()
        expect(page.get_by_role("status")).to_contain_text("requested for")
        assert q("SELECT reason, comment, status FROM returns ORDER BY id DESC LIMIT 1") == [
            ("Doesn't fit", "Too small", "requested")
        ]
        step("request a return")
        page.get_by_role("link", name="Account", exact=True).click()
        page.get_by_label("Display name").fill("Jamie R.")
        page.get_by_label("Email me the newsletter").uncheck()
        page.get_by_role("button", name="Save settings").click()
        expect(page.get_by_role("status")).to_contain_text("Account settings saved.")
        assert q("SELECT display_name, newsletter FROM users WHERE id = 1") == [("Jamie R.", 0)]
        step("save account settings")
        page.get_by_role("link", name="Change your password").click()
        old_hash = q("SELECT password FROM users WHERE id = 1")[0][0]
        page.get_by_label("Current password").fill("correct-horse-42")
        page.get_by_label("New password").fill("battery-staple-7")
        page.get_by_label("Confirm password").fill("battery-staple-7")
        page.get_by_role("button", name="Change password").click()
        expect(page.get_by_role("status")).to_contain_text("Password changed.")
        assert q("SELECT password FROM users WHERE id = 1")[0][0] != old_hash
        step("change password")
        page.get_by_role("link", name="All products").click()
        page.get_by_label("Category").select_option(label="Outdoor Jackets")
        page.get_by_label("Max price ($)").fill("150")
        page.get_by_label("In stock only").check()
        page.get_by_role("button", name="Apply filters").click()
        n = page.locator("ul.grid > li").count()
        expected = q(
            "SELECT COUNT(*) FROM products p JOIN categories c ON c.id = p.category_id "
            "WHERE c.name = 'Outdoor Jackets' AND p.price_cents <= 15000 AND EXISTS "
            "(SELECT 1 FROM variants v WHERE v.product_id = p.id AND v.stock > 0)"
        )[0][0]
        assert n == min(expected, 24) and n > 0, (n, expected)
        step(f"filter: Outdoor Jackets, max $150, in stock -> {expected} products")
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--screenshot", type=Path, default=Path(tempfile.gettempdir()) / "shop_product.png")
    parser.add_argument("--headed", action="store_true")
    args = parser.parse_args()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="shop-smoke-") as tmp:
        db_path = Path(tmp) / "shop.db"
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "app.py"), "--port", str(port), "--db", str(db_path)], cwd=tmp
        )
        try:
            t0 = time.time()
            wait_healthy(base, proc)
            step(
                f"app healthy on port {port} after {time.time() - t0:.2f}s (DB created from schema.sql + seed.py)"
            )
            run(base, db_path, args.screenshot, args.headed)
        except Exception as exc:
            print(f"FAIL {type(exc).__name__}: {exc}", flush=True)
            return 1
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
    print("PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
