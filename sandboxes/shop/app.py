"""The shop sandbox: a server-rendered web shop (Flask + SQLite + Jinja).

`python app.py --port PORT --db PATH` creates PATH from schema.sql + seed.py when it does not exist,
then serves on 127.0.0.1:PORT. One signed-in user (id 1), no login. SQL is written literally in the
route handlers; a new sqlite3 connection is opened per request and closed on teardown.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sqlite3
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import flask.cli
from flask import Flask, abort, flash, g, jsonify, redirect, render_template, request, url_for

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import seed as seed_module

USER_ID = 1
PAGE_SIZE = 24
SHIPPING_METHODS = {
    "standard": ("Standard (3-5 business days)", 599),
    "express": ("Express (1-2 business days)", 1499),
}
FREE_SHIPPING_OVER_CENTS = 10000
RETURN_REASONS = [
    "Doesn't fit",
    "Damaged or defective",
    "Not as described",
    "Changed my mind",
    "Arrived too late",
    "Wrong item sent",
]
SORTS = {
    "featured": ("Featured", "p.id"),
    "price_asc": ("Price: low to high", "p.price_cents ASC, p.id"),
    "price_desc": ("Price: high to low", "p.price_cents DESC, p.id"),
    "rating": ("Customer rating", "avg_rating DESC, review_count DESC, p.id"),
    "newest": ("Newest", "p.created_at DESC, p.id"),
    "name": ("Name: A to Z", "p.name ASC"),
}

app = Flask(__name__)
app.config["SECRET_KEY"] = "shop-sandbox-not-a-secret"
app.config["DB_PATH"] = str(HERE / "shop.db")
app.jinja_env.trim_blocks = True
app.jinja_env.lstrip_blocks = True


# ---------------------------------------------------------------- database


def create_db(path: str) -> None:
    """Build a fresh DB from schema.sql + seed.py at path (written to a temp file, then moved)."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".shop-", suffix=".db", dir=os.path.dirname(path))
    os.close(fd)
    conn = sqlite3.connect(tmp)
    try:
        conn.executescript((HERE / "schema.sql").read_text())
        seed_module.seed(conn)
        conn.commit()
    finally:
        conn.close()
    os.replace(tmp, path)


def db() -> sqlite3.Connection:
    if "db" not in g:
        conn = sqlite3.connect(app.config["DB_PATH"], timeout=10)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        g.db = conn
    return g.db


@app.teardown_appcontext
def close_db(_exc) -> None:
    conn = g.pop("db", None)
    if conn is not None:
        conn.close()


def now() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------- template helpers


@app.template_filter("money")
def money(cents) -> str:
    cents = int(cents or 0)
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) / 100:,.2f}"


@app.template_filter("stars")
def stars(rating) -> str:
    if rating is None:
        return "No reviews yet"
    full = round(float(rating))
    return "★" * full + "☆" * (5 - full)


@app.template_filter("date")
def date_only(ts: str | None) -> str:
    if not ts:
        return ""
    return datetime.strptime(ts[:10], "%Y-%m-%d").strftime("%b %d, %Y").replace(" 0", " ")


@app.context_processor
def nav_counts():
    conn = db()
    cart_count = conn.execute(
        "SELECT COALESCE(SUM(quantity), 0) FROM cart_items WHERE user_id = ?", (USER_ID,)
    ).fetchone()[0]
    wish_count = conn.execute("SELECT COUNT(*) FROM wishlist_items WHERE user_id = ?", (USER_ID,)).fetchone()[
        0
    ]
    return {"cart_count": cart_count, "wishlist_count": wish_count, "shipping_methods": SHIPPING_METHODS}


def cart_summary(conn: sqlite3.Connection) -> dict:
    """Lines, subtotal, coupon discount, shipping and total of user 1's cart (read only)."""
    cart = conn.execute("SELECT * FROM carts WHERE user_id = ?", (USER_ID,)).fetchone()
    lines = conn.execute(
        "SELECT ci.id, ci.quantity, v.id AS variant_id, v.size, v.colour, v.sku, v.price_cents, v.stock, "
        "p.id AS product_id, p.name, p.brand "
        "FROM cart_items ci JOIN variants v ON v.id = ci.variant_id JOIN products p ON p.id = v.product_id "
        "WHERE ci.user_id = ? ORDER BY ci.id",
        (USER_ID,),
    ).fetchall()
    subtotal = sum(l["price_cents"] * l["quantity"] for l in lines)
    coupon = None
    if cart["coupon_code"]:
        coupon = conn.execute(
            "SELECT * FROM coupons WHERE code = ? AND active = 1", (cart["coupon_code"],)
        ).fetchone()
    discount = 0
    free_shipping = subtotal >= FREE_SHIPPING_OVER_CENTS
    if coupon and subtotal >= coupon["min_subtotal_cents"]:
        discount = subtotal * coupon["percent_off"] // 100 + coupon["amount_off_cents"]
        discount = min(discount, subtotal)
        free_shipping = free_shipping or bool(coupon["free_shipping"])
    method = cart["shipping_method"] if cart["shipping_method"] in SHIPPING_METHODS else "standard"
    shipping = SHIPPING_METHODS[method][1]
    if free_shipping and method == "standard":
        shipping = 0
    if not lines:
        shipping = 0
    return {
        "cart": cart,
        "lines": lines,
        "subtotal": subtotal,
        "coupon": coupon,
        "discount": discount,
        "shipping": shipping,
        "shipping_method": method,
        "total": subtotal - discount + shipping,
        "count": sum(l["quantity"] for l in lines),
    }


def int_arg(name: str, default=None):
    try:
        return int(request.args.get(name, ""))
    except ValueError:
        return default


def dollars_arg(name: str):
    raw = request.args.get(name, "").strip().lstrip("$")
    try:
        return round(float(raw) * 100) if raw else None
    except ValueError:
        return None


def product_query(where: list[str], params: list, sort: str, page: int):
    """The products matching `where`, with ratings, one page at a time (read only)."""
    where_sql = " AND ".join(where) if where else "1 = 1"
    total = db().execute(f"SELECT COUNT(*) FROM products p WHERE {where_sql}", params).fetchone()[0]
    pages = max(1, math.ceil(total / PAGE_SIZE))
    page = min(max(1, page), pages)
    rows = (
        db()
        .execute(
            "SELECT p.*, c.name AS category_name, "
            "(SELECT AVG(rating) FROM reviews r WHERE r.product_id = p.id) AS avg_rating, "
            "(SELECT COUNT(*) FROM reviews r WHERE r.product_id = p.id) AS review_count, "
            "(SELECT COALESCE(SUM(stock), 0) FROM variants v WHERE v.product_id = p.id) AS total_stock "
            f"FROM products p JOIN categories c ON c.id = p.category_id WHERE {where_sql} "
            f"ORDER BY {SORTS.get(sort, SORTS['featured'])[1]} LIMIT ? OFFSET ?",
            [*params, PAGE_SIZE, (page - 1) * PAGE_SIZE],
        )
        .fetchall()
    )
    return rows, total, page, pages


def page_url(page: int) -> str:
    args = request.args.to_dict()
    args["page"] = page
    return url_for(request.endpoint, **(request.view_args or {}), **args)


app.jinja_env.globals["page_url"] = page_url


# ---------------------------------------------------------------- health, home, catalogue


@app.get("/health")
def health():
    return jsonify({"status": "ok"})


@app.get("/")
def home():
    categories = (
        db()
        .execute(
            "SELECT c.*, (SELECT COUNT(*) FROM products p WHERE p.category_id = c.id) AS product_count "
            "FROM categories c ORDER BY c.id"
        )
        .fetchall()
    )
    featured, _, _, _ = product_query(["p.id % 37 = 0"], [], "rating", 1)
    return render_template("home.html", categories=categories, products=featured[:8])


@app.get("/categories")
def categories_list():
    categories = (
        db()
        .execute(
            "SELECT c.*, (SELECT COUNT(*) FROM products p WHERE p.category_id = c.id) AS product_count "
            "FROM categories c ORDER BY c.name"
        )
        .fetchall()
    )
    return render_template("categories.html", categories=categories)


@app.get("/categories/<int:id>")
def category_detail(id: int):
    category = db().execute("SELECT * FROM categories WHERE id = ?", (id,)).fetchone()
    if category is None:
        abort(404)
    return products_list(category=category)


@app.get("/products")
def products_list(category=None):
    where, params = [], []
    category_id = category["id"] if category else int_arg("category_id")
    if category_id:
        where.append("p.category_id = ?")
        params.append(category_id)
    brand = request.args.get("brand", "").strip()
    if brand:
        where.append("p.brand = ?")
        params.append(brand)
    min_price, max_price = dollars_arg("min_price"), dollars_arg("max_price")
    if min_price is not None:
        where.append("p.price_cents >= ?")
        params.append(min_price)
    if max_price is not None:
        where.append("p.price_cents <= ?")
        params.append(max_price)
    in_stock = request.args.get("in_stock") == "1"
    if in_stock:
        where.append("EXISTS (SELECT 1 FROM variants v WHERE v.product_id = p.id AND v.stock > 0)")
    sort = request.args.get("sort", "featured")
    rows, total, page, pages = product_query(where, params, sort, int_arg("page", 1))
    categories = db().execute("SELECT id, name FROM categories ORDER BY name").fetchall()
    brands = [r[0] for r in db().execute("SELECT DISTINCT brand FROM products ORDER BY brand")]
    return render_template(
        "products.html",
        products=rows,
        total=total,
        page=page,
        pages=pages,
        category=category,
        categories=categories,
        brands=brands,
        sorts=SORTS,
        filters={
            "category_id": category_id,
            "brand": brand,
            "min_price": request.args.get("min_price", ""),
            "max_price": request.args.get("max_price", ""),
            "in_stock": in_stock,
            "sort": sort,
        },
    )


@app.get("/search")
def search():
    q = request.args.get("q", "").strip()
    category_id = int_arg("category_id")
    in_stock = request.args.get("in_stock") == "1"
    sort = request.args.get("sort", "featured")
    rows, total, page, pages = [], 0, 1, 1
    if q:
        where = ["(p.name LIKE ? OR p.brand LIKE ? OR p.description LIKE ?)"]
        like = f"%{q}%"
        params: list = [like, like, like]
        if category_id:
            where.append("p.category_id = ?")
            params.append(category_id)
        if in_stock:
            where.append("EXISTS (SELECT 1 FROM variants v WHERE v.product_id = p.id AND v.stock > 0)")
        rows, total, page, pages = product_query(where, params, sort, int_arg("page", 1))
    categories = db().execute("SELECT id, name FROM categories ORDER BY name").fetchall()
    return render_template(
        "search.html",
        q=q,
        products=rows,
        total=total,
        page=page,
        pages=pages,
        categories=categories,
        sorts=SORTS,
        filters={"category_id": category_id, "in_stock": in_stock, "sort": sort},
    )


@app.get("/products/<int:id>")
def product_detail(id: int):
    conn = db()
    product = conn.execute(
        "SELECT p.*, c.name AS category_name FROM products p JOIN categories c ON c.id = p.category_id "
        "WHERE p.id = ?",
        (id,),
    ).fetchone()
    if product is None:
        abort(404)
    variants = conn.execute("SELECT * FROM variants WHERE product_id = ? ORDER BY id", (id,)).fetchall()
    reviews = conn.execute(
        "SELECT * FROM reviews WHERE product_id = ? ORDER BY created_at DESC", (id,)
    ).fetchall()
    rating = conn.execute("SELECT AVG(rating), COUNT(*) FROM reviews WHERE product_id = ?", (id,)).fetchone()
    wish = conn.execute(
        "SELECT id FROM wishlist_items WHERE user_id = ? AND product_id = ?", (USER_ID, id)
    ).fetchone()
    related = conn.execute(
        "SELECT id, name, brand, price_cents FROM products WHERE category_id = ? AND id != ? "
        "ORDER BY (id * 7919) % 101 LIMIT 4",
        (product["category_id"], id),
    ).fetchall()
    prices = [v["price_cents"] for v in variants]
    return render_template(
        "product.html",
        product=product,
        variants=variants,
        reviews=reviews,
        avg_rating=rating[0],
        review_count=rating[1],
        wish=wish,
        related=related,
        min_price=min(prices),
        max_price=max(prices),
        total_stock=sum(v["stock"] for v in variants),
    )


# ---------------------------------------------------------------- cart


@app.get("/cart")
def cart_view():
    return render_template("cart.html", s=cart_summary(db()))


@app.post("/cart/items/new")
def cart_item_new():
    conn = db()
    variant_id = request.form.get("variant_id", type=int)
    quantity = request.form.get("quantity", default=1, type=int) or 1
    variant = conn.execute(
        "SELECT v.*, p.name FROM variants v JOIN products p ON p.id = v.product_id WHERE v.id = ?",
        (variant_id,),
    ).fetchone()
    if variant is None:
        flash("Choose a size and colour first.")
        return redirect(request.referrer or url_for("products_list"))
    existing = conn.execute(
        "SELECT id, quantity FROM cart_items WHERE user_id = ? AND variant_id = ?", (USER_ID, variant_id)
    ).fetchone()
    wanted = quantity + (existing["quantity"] if existing else 0)
    if quantity < 1 or wanted > variant["stock"]:
        flash(
            f"Sorry, only {variant['stock']} of {variant['name']} ({variant['size']} / {variant['colour']}) "
            "in stock."
        )
        return redirect(url_for("product_detail", id=variant["product_id"]))
    if existing:
        conn.execute("UPDATE cart_items SET quantity = ? WHERE id = ?", (wanted, existing["id"]))
    else:
        conn.execute(
            "INSERT INTO cart_items (user_id, variant_id, quantity, added_at) VALUES (?, ?, ?, ?)",
            (USER_ID, variant_id, quantity, now()),
        )
    conn.commit()
    flash(f"Added {quantity} × {variant['name']} ({variant['size']} / {variant['colour']}) to your cart.")
    return redirect(url_for("cart_view"))


@app.post("/cart/items/<int:id>/edit")
def cart_item_edit(id: int):
    conn = db()
    line = conn.execute(
        "SELECT ci.*, v.stock, v.size, v.colour, p.name FROM cart_items ci JOIN variants v ON v.id = ci.variant_id "
        "JOIN products p ON p.id = v.product_id WHERE ci.id = ? AND ci.user_id = ?",
        (id, USER_ID),
    ).fetchone()
    if line is None:
        abort(404)
    quantity = request.form.get("quantity", type=int)
    if quantity is None or quantity < 1:
        flash("Quantity must be at least 1. Use Remove to take an item out of the cart.")
    elif quantity > line["stock"]:
        flash(f"Sorry, only {line['stock']} of {line['name']} ({line['size']} / {line['colour']}) in stock.")
    else:
        conn.execute("UPDATE cart_items SET quantity = ? WHERE id = ?", (quantity, id))
        conn.commit()
        flash(f"Updated {line['name']} ({line['size']} / {line['colour']}) to {quantity}.")
    return redirect(url_for("cart_view"))


@app.post("/cart/items/<int:id>/delete")
def cart_item_delete(id: int):
    conn = db()
    line = conn.execute(
        "SELECT ci.id, v.size, v.colour, p.name FROM cart_items ci JOIN variants v ON v.id = ci.variant_id "
        "JOIN products p ON p.id = v.product_id WHERE ci.id = ? AND ci.user_id = ?",
        (id, USER_ID),
    ).fetchone()
    if line is None:
        abort(404)
    conn.execute("DELETE FROM cart_items WHERE id = ?", (id,))
    conn.commit()
    flash(f"Removed {line['name']} ({line['size']} / {line['colour']}) from your cart.")
    return redirect(url_for("cart_view"))


@app.post("/cart/coupon")
def cart_coupon_apply():
    conn = db()
    code = request.form.get("coupon_code", "").strip().upper()
    coupon = conn.execute("SELECT * FROM coupons WHERE code = ?", (code,)).fetchone()
    subtotal = cart_summary(conn)["subtotal"]
    if coupon is None or not coupon["active"]:
        flash(f"Coupon code {code or '(empty)'} is not valid.")
    elif subtotal < coupon["min_subtotal_cents"]:
        flash(f"Coupon {code} needs a subtotal of at least {money(coupon['min_subtotal_cents'])}.")
    else:
        conn.execute("UPDATE carts SET coupon_code = ? WHERE id = ?", (code, USER_ID))
        conn.commit()
        flash(f"Coupon {code} applied: {coupon['description']}.")
    return redirect(url_for("cart_view"))


@app.post("/cart/coupon/delete")
def cart_coupon_remove():
    conn = db()
    conn.execute("UPDATE carts SET coupon_code = NULL WHERE id = ?", (USER_ID,))
    conn.commit()
    flash("Coupon removed.")
    return redirect(url_for("cart_view"))


# ---------------------------------------------------------------- checkout


@app.route("/checkout", methods=["GET", "POST"])
def checkout():
    conn = db()
    s = cart_summary(conn)
    if not s["lines"]:
        flash("Your cart is empty.")
        return redirect(url_for("cart_view"))
    addresses = conn.execute(
        "SELECT * FROM addresses WHERE user_id = ? ORDER BY is_default DESC, id", (USER_ID,)
    ).fetchall()
    if request.method == "POST":
        address_id = request.form.get("address_id", type=int)
        method = request.form.get("shipping_method", "standard")
        if address_id not in {a["id"] for a in addresses}:
            flash("Choose a shipping address.")
            return redirect(url_for("checkout"))
        if method not in SHIPPING_METHODS:
            method = "standard"
        conn.execute(
            "UPDATE carts SET address_id = ?, shipping_method = ? WHERE id = ?", (address_id, method, USER_ID)
        )
        conn.commit()
        return redirect(url_for("checkout_payment"))
    selected = s["cart"]["address_id"] or (addresses[0]["id"] if addresses else None)
    return render_template("checkout.html", s=s, addresses=addresses, selected=selected)


@app.route("/checkout/payment", methods=["GET", "POST"])
def checkout_payment():
    conn = db()
    s = cart_summary(conn)
    if not s["lines"]:
        flash("Your cart is empty.")
        return redirect(url_for("cart_view"))
    address = conn.execute(
        "SELECT * FROM addresses WHERE id = ? AND user_id = ?", (s["cart"]["address_id"], USER_ID)
    ).fetchone()
    if address is None:
        flash("Choose a shipping address first.")
        return redirect(url_for("checkout"))
    cards = conn.execute("SELECT * FROM payment_cards WHERE user_id = ? ORDER BY id", (USER_ID,)).fetchall()
    if request.method == "GET":
        return render_template("payment.html", s=s, address=address, cards=cards)

    card_id = request.form.get("payment_card_id", type=int)
    if card_id not in {c["id"] for c in cards}:
        flash("Choose a payment card.")
        return redirect(url_for("checkout_payment"))
    for line in s["lines"]:
        if line["quantity"] > line["stock"]:
            flash(
                f"Sorry, only {line['stock']} of {line['name']} ({line['size']} / {line['colour']}) left. "
                "Update your cart."
            )
            return redirect(url_for("cart_view"))
    cur = conn.execute(
        "INSERT INTO orders (user_id, status, ship_name, ship_street, ship_city, ship_region, ship_postcode, "
        "ship_country, address_id, payment_card_id, shipping_method, coupon_code, subtotal_cents, "
        "discount_cents, shipping_cents, total_cents, created_at) "
        "VALUES (?, 'processing', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            USER_ID,
            address["full_name"],
            address["street"],
            address["city"],
            address["region"],
            address["postcode"],
            address["country"],
            address["id"],
            card_id,
            s["shipping_method"],
            s["coupon"]["code"] if s["coupon"] and s["discount"] else None,
            s["subtotal"],
            s["discount"],
            s["shipping"],
            s["total"],
            now(),
        ),
    )
    order_id = cur.lastrowid
    conn.executemany(
        "INSERT INTO order_items (order_id, variant_id, product_id, product_name, size, colour, "
        "unit_price_cents, quantity) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                order_id,
                l["variant_id"],
                l["product_id"],
                l["name"],
                l["size"],
                l["colour"],
                l["price_cents"],
                l["quantity"],
            )
            for l in s["lines"]
        ],
    )
    conn.executemany(
        "UPDATE variants SET stock = stock - ? WHERE id = ?",
        [(l["quantity"], l["variant_id"]) for l in s["lines"]],
    )
    conn.execute("DELETE FROM cart_items WHERE user_id = ?", (USER_ID,))
    conn.execute("UPDATE carts SET coupon_code = NULL, address_id = NULL WHERE id = ?", (USER_ID,))
    conn.commit()
    flash(f"Order #{order_id} placed. Thank you!")
    return redirect(url_for("order_detail", id=order_id))


# ---------------------------------------------------------------- orders


@app.get("/orders")
def orders_list():
    orders = (
        db()
        .execute(
            "SELECT o.*, (SELECT SUM(quantity) FROM order_items oi WHERE oi.order_id = o.id) AS item_count "
            "FROM orders o WHERE o.user_id = ? ORDER BY o.created_at DESC, o.id DESC",
            (USER_ID,),
        )
        .fetchall()
    )
    return render_template("orders.html", orders=orders)


@app.get("/orders/<int:id>")
def order_detail(id: int):
    conn = db()
    order = conn.execute(
        "SELECT o.*, pc.brand AS card_brand, pc.last4 FROM orders o "
        "LEFT JOIN payment_cards pc ON pc.id = o.payment_card_id WHERE o.id = ? AND o.user_id = ?",
        (id, USER_ID),
    ).fetchone()
    if order is None:
        abort(404)
    items = conn.execute(
        "SELECT oi.*, (SELECT COALESCE(SUM(r.quantity), 0) FROM returns r WHERE r.order_item_id = oi.id "
        "AND r.status != 'cancelled') AS returned FROM order_items oi WHERE oi.order_id = ? ORDER BY oi.id",
        (id,),
    ).fetchall()
    returns = conn.execute(
        "SELECT r.*, oi.product_name, oi.size, oi.colour FROM returns r "
        "JOIN order_items oi ON oi.id = r.order_item_id WHERE oi.order_id = ? ORDER BY r.id",
        (id,),
    ).fetchall()
    return render_template("order.html", order=order, items=items, returns=returns)


@app.post("/orders/<int:id>/cancel")
def order_cancel(id: int):
    conn = db()
    order = conn.execute("SELECT * FROM orders WHERE id = ? AND user_id = ?", (id, USER_ID)).fetchone()
    if order is None:
        abort(404)
    if order["status"] != "processing":
        flash(f"Order #{id} is {order['status']} and can no longer be cancelled.")
        return redirect(url_for("order_detail", id=id))
    conn.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (id,))
    conn.execute(
        "UPDATE variants SET stock = stock + (SELECT SUM(quantity) FROM order_items oi "
        "WHERE oi.order_id = ? AND oi.variant_id = variants.id) "
        "WHERE id IN (SELECT variant_id FROM order_items WHERE order_id = ?)",
        (id, id),
    )
    conn.commit()
    flash(f"Order #{id} cancelled.")
    return redirect(url_for("order_detail", id=id))


# ---------------------------------------------------------------- returns


def returnable_items(conn: sqlite3.Connection):
    return conn.execute(
        "SELECT oi.*, o.created_at AS ordered_at, oi.quantity - (SELECT COALESCE(SUM(r.quantity), 0) "
        "FROM returns r WHERE r.order_item_id = oi.id AND r.status != 'cancelled') AS returnable "
        "FROM order_items oi JOIN orders o ON o.id = oi.order_id "
        "WHERE o.user_id = ? AND o.status = 'delivered' AND oi.quantity > (SELECT COALESCE(SUM(r.quantity), 0) "
        "FROM returns r WHERE r.order_item_id = oi.id AND r.status != 'cancelled') "
        "ORDER BY o.created_at DESC, oi.id",
        (USER_ID,),
    ).fetchall()


@app.get("/returns")
def returns_list():
    returns = (
        db()
        .execute(
            "SELECT r.*, oi.product_name, oi.size, oi.colour, oi.order_id FROM returns r "
            "JOIN order_items oi ON oi.id = r.order_item_id JOIN orders o ON o.id = oi.order_id "
            "WHERE o.user_id = ? ORDER BY r.created_at DESC, r.id DESC",
            (USER_ID,),
        )
        .fetchall()
    )
    return render_template("returns.html", returns=returns)


@app.route("/returns/new", methods=["GET", "POST"])
def return_new():
    conn = db()
    items = returnable_items(conn)
    by_id = {i["id"]: i for i in items}
    if request.method == "POST":
        order_item_id = request.form.get("order_item_id", type=int)
        quantity = request.form.get("quantity", default=1, type=int) or 1
        reason = request.form.get("reason", "")
        comment = request.form.get("comment", "").strip()
        item = by_id.get(order_item_id)
        error = None
        if item is None:
            error = "Choose an item from a delivered order."
        elif not 1 <= quantity <= item["returnable"]:
            error = f"You can return between 1 and {item['returnable']} of this item."
        elif reason not in RETURN_REASONS:
            error = "Choose a reason for the return."
        if error:
            return render_template(
                "return_form.html", items=items, reasons=RETURN_REASONS, error=error, form=request.form
            ), 400
        cur = conn.execute(
            "INSERT INTO returns (order_item_id, quantity, reason, comment, status, refund_cents, created_at) "
            "VALUES (?, ?, ?, ?, 'requested', ?, ?)",
            (order_item_id, quantity, reason, comment, item["unit_price_cents"] * quantity, now()),
        )
        conn.commit()
        flash(f"Return #{cur.lastrowid} requested for {item['product_name']}.")
        return redirect(url_for("return_detail", id=cur.lastrowid))
    return render_template(
        "return_form.html",
        items=items,
        reasons=RETURN_REASONS,
        error=None,
        form={"order_item_id": request.args.get("order_item_id", "")},
    )


@app.get("/returns/<int:id>")
def return_detail(id: int):
    ret = (
        db()
        .execute(
            "SELECT r.*, oi.product_name, oi.size, oi.colour, oi.order_id, oi.product_id, oi.unit_price_cents "
            "FROM returns r JOIN order_items oi ON oi.id = r.order_item_id JOIN orders o ON o.id = oi.order_id "
            "WHERE r.id = ? AND o.user_id = ?",
            (id, USER_ID),
        )
        .fetchone()
    )
    if ret is None:
        abort(404)
    return render_template("return.html", ret=ret)


@app.post("/returns/<int:id>/cancel")
def return_cancel(id: int):
    conn = db()
    ret = conn.execute("SELECT * FROM returns WHERE id = ?", (id,)).fetchone()
    if ret is None:
        abort(404)
    if ret["status"] != "requested":
        flash(f"Return #{id} is {ret['status']} and can no longer be cancelled.")
    else:
        conn.execute("UPDATE returns SET status = 'cancelled' WHERE id = ?", (id,))
        conn.commit()
        flash(f"Return #{id} cancelled.")
    return redirect(url_for("return_detail", id=id))


# ---------------------------------------------------------------- addresses

ADDRESS_FIELDS = ["label", "full_name", "street", "city", "region", "postcode", "country", "phone"]
ADDRESS_REQUIRED = ["label", "full_name", "street", "city", "postcode", "country"]


def address_form() -> tuple[dict, str | None]:
    form = {f: request.form.get(f, "").strip() for f in ADDRESS_FIELDS}
    form["is_default"] = 1 if request.form.get("is_default") == "1" else 0
    missing = [f.replace("_", " ") for f in ADDRESS_REQUIRED if not form[f]]
    return form, ("Please fill in: " + ", ".join(missing) + ".") if missing else None


@app.get("/addresses")
def addresses_list():
    addresses = (
        db()
        .execute("SELECT * FROM addresses WHERE user_id = ? ORDER BY is_default DESC, id", (USER_ID,))
        .fetchall()
    )
    return render_template("addresses.html", addresses=addresses)


@app.route("/addresses/new", methods=["GET", "POST"])
def address_new():
    next_url = request.values.get("next", "")
    if request.method == "POST":
        form, error = address_form()
        if error:
            return render_template(
                "address_form.html", address=None, form=form, error=error, next_url=next_url
            ), 400
        conn = db()
        cur = conn.execute(
            "INSERT INTO addresses (user_id, label, full_name, street, city, region, postcode, country, phone, "
            "is_default) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                USER_ID,
                form["label"],
                form["full_name"],
                form["street"],
                form["city"],
                form["region"],
                form["postcode"],
                form["country"],
                form["phone"],
                form["is_default"],
            ),
        )
        if form["is_default"]:
            conn.execute(
                "UPDATE addresses SET is_default = 0 WHERE user_id = ? AND id != ?", (USER_ID, cur.lastrowid)
            )
        conn.commit()
        flash(f"Address \u201c{form['label']}\u201d added.")
        if next_url == "/checkout":
            return redirect(url_for("checkout"))
        return redirect(url_for("address_detail", id=cur.lastrowid))
    return render_template(
        "address_form.html", address=None, form={"country": "United States"}, error=None, next_url=next_url
    )


@app.get("/addresses/<int:id>")
def address_detail(id: int):
    address = db().execute("SELECT * FROM addresses WHERE id = ? AND user_id = ?", (id, USER_ID)).fetchone()
    if address is None:
        abort(404)
    return render_template("address.html", address=address)


@app.route("/addresses/<int:id>/edit", methods=["GET", "POST"])
def address_edit(id: int):
    conn = db()
    address = conn.execute("SELECT * FROM addresses WHERE id = ? AND user_id = ?", (id, USER_ID)).fetchone()
    if address is None:
        abort(404)
    if request.method == "POST":
        form, error = address_form()
        if error:
            return render_template(
                "address_form.html", address=address, form=form, error=error, next_url=""
            ), 400
        conn.execute(
            "UPDATE addresses SET label = ?, full_name = ?, street = ?, city = ?, region = ?, postcode = ?, "
            "country = ?, phone = ?, is_default = ? WHERE id = ?",
            (
                form["label"],
                form["full_name"],
                form["street"],
                form["city"],
                form["region"],
                form["postcode"],
                form["country"],
                form["phone"],
                form["is_default"],
                id,
            ),
        )
        if form["is_default"]:
            conn.execute("UPDATE addresses SET is_default = 0 WHERE user_id = ? AND id != ?", (USER_ID, id))
        conn.commit()
        flash(f"Address \u201c{form['label']}\u201d saved.")
        return redirect(url_for("address_detail", id=id))
    return render_template("address_form.html", address=address, form=dict(address), error=None, next_url="")


@app.post("/addresses/<int:id>/delete")
def address_delete(id: int):
    conn = db()
    address = conn.execute("SELECT * FROM addresses WHERE id = ? AND user_id = ?", (id, USER_ID)).fetchone()
    if address is None:
        abort(404)
    conn.execute("DELETE FROM addresses WHERE id = ?", (id,))
    conn.commit()
    flash(f"Address \u201c{address['label']}\u201d deleted.")
    return redirect(url_for("addresses_list"))


# ---------------------------------------------------------------- wishlist


@app.get("/wishlist")
def wishlist_list():
    items = (
        db()
        .execute(
            "SELECT w.*, p.name, p.brand, p.price_cents, "
            "(SELECT COALESCE(SUM(stock), 0) FROM variants v WHERE v.product_id = p.id) AS total_stock "
            "FROM wishlist_items w JOIN products p ON p.id = w.product_id WHERE w.user_id = ? "
            "ORDER BY w.added_at DESC, w.id DESC",
            (USER_ID,),
        )
        .fetchall()
    )
    return render_template("wishlist.html", items=items)


@app.post("/wishlist/new")
def wishlist_new():
    conn = db()
    product_id = request.form.get("product_id", type=int)
    product = conn.execute("SELECT id, name FROM products WHERE id = ?", (product_id,)).fetchone()
    if product is None:
        abort(404)
    exists = conn.execute(
        "SELECT id FROM wishlist_items WHERE user_id = ? AND product_id = ?", (USER_ID, product_id)
    ).fetchone()
    if exists is None:
        conn.execute(
            "INSERT INTO wishlist_items (user_id, product_id, added_at) VALUES (?, ?, ?)",
            (USER_ID, product_id, now()),
        )
        conn.commit()
    flash(f"Added {product['name']} to your wishlist.")
    return redirect(url_for("product_detail", id=product_id))


@app.post("/wishlist/<int:id>/delete")
def wishlist_delete(id: int):
    conn = db()
    item = conn.execute(
        "SELECT w.id, w.product_id, p.name FROM wishlist_items w JOIN products p ON p.id = w.product_id "
        "WHERE w.id = ? AND w.user_id = ?",
        (id, USER_ID),
    ).fetchone()
    if item is None:
        abort(404)
    conn.execute("DELETE FROM wishlist_items WHERE id = ?", (id,))
    conn.commit()
    flash(f"Removed {item['name']} from your wishlist.")
    if request.form.get("next") == "product":
        return redirect(url_for("product_detail", id=item["product_id"]))
    return redirect(url_for("wishlist_list"))


# ---------------------------------------------------------------- reviews


def review_form() -> tuple[dict, str | None]:
    form = {
        "rating": request.form.get("rating", type=int),
        "title": request.form.get("title", "").strip(),
        "body": request.form.get("body", "").strip(),
    }
    if form["rating"] not in (1, 2, 3, 4, 5):
        return form, "Choose a rating from 1 to 5 stars."
    if not form["title"] or not form["body"]:
        return form, "Please write a title and a review."
    return form, None


@app.get("/reviews")
def reviews_list():
    reviews = (
        db()
        .execute(
            "SELECT r.*, p.name AS product_name FROM reviews r JOIN products p ON p.id = r.product_id "
            "WHERE r.user_id = ? ORDER BY r.created_at DESC, r.id DESC",
            (USER_ID,),
        )
        .fetchall()
    )
    return render_template("reviews.html", reviews=reviews)


@app.route("/reviews/new", methods=["GET", "POST"])
def review_new():
    conn = db()
    product_id = request.values.get("product_id", type=int)
    product = conn.execute("SELECT id, name FROM products WHERE id = ?", (product_id,)).fetchone()
    if product is None:
        abort(404)
    if request.method == "POST":
        form, error = review_form()
        if error:
            return render_template(
                "review_form.html", review=None, product=product, form=form, error=error
            ), 400
        author = conn.execute("SELECT display_name FROM users WHERE id = ?", (USER_ID,)).fetchone()[0]
        conn.execute(
            "INSERT INTO reviews (product_id, user_id, author_name, rating, title, body, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (product_id, USER_ID, author, form["rating"], form["title"], form["body"], now()),
        )
        conn.commit()
        flash(f"Thanks! Your review of {product['name']} was added.")
        return redirect(url_for("product_detail", id=product_id))
    return render_template("review_form.html", review=None, product=product, form={}, error=None)


@app.get("/reviews/<int:id>")
def review_detail(id: int):
    review = (
        db()
        .execute(
            "SELECT r.*, p.name AS product_name FROM reviews r JOIN products p ON p.id = r.product_id "
            "WHERE r.id = ?",
            (id,),
        )
        .fetchone()
    )
    if review is None:
        abort(404)
    return render_template("review.html", review=review)


@app.route("/reviews/<int:id>/edit", methods=["GET", "POST"])
def review_edit(id: int):
    conn = db()
    review = conn.execute(
        "SELECT r.*, p.name AS product_name FROM reviews r JOIN products p ON p.id = r.product_id "
        "WHERE r.id = ? AND r.user_id = ?",
        (id, USER_ID),
    ).fetchone()
    if review is None:
        abort(404)
    product = {"id": review["product_id"], "name": review["product_name"]}
    if request.method == "POST":
        form, error = review_form()
        if error:
            return render_template(
                "review_form.html", review=review, product=product, form=form, error=error
            ), 400
        conn.execute(
            "UPDATE reviews SET rating = ?, title = ?, body = ? WHERE id = ?",
            (form["rating"], form["title"], form["body"], id),
        )
        conn.commit()
        flash("Review saved.")
        return redirect(url_for("review_detail", id=id))
    return render_template("review_form.html", review=review, product=product, form=dict(review), error=None)


@app.post("/reviews/<int:id>/delete")
def review_delete(id: int):
    conn = db()
    review = conn.execute("SELECT * FROM reviews WHERE id = ? AND user_id = ?", (id, USER_ID)).fetchone()
    if review is None:
        abort(404)
    conn.execute("DELETE FROM reviews WHERE id = ?", (id,))
    conn.commit()
    flash("Review deleted.")
    return redirect(url_for("reviews_list"))


# ---------------------------------------------------------------- settings


@app.route("/settings/account", methods=["GET", "POST"])
def settings_account():
    conn = db()
    if request.method == "POST":
        display_name = request.form.get("display_name", "").strip()
        email = request.form.get("email", "").strip()
        phone = request.form.get("phone", "").strip()
        newsletter = 1 if request.form.get("newsletter") == "1" else 0
        if not display_name or "@" not in email:
            flash("Display name and a valid email are required.")
            return redirect(url_for("settings_account"))
        conn.execute(
            "UPDATE users SET display_name = ?, email = ?, phone = ?, newsletter = ? WHERE id = 1",
            (display_name, email, phone, newsletter),
        )
        conn.commit()
        flash("Account settings saved.")
        return redirect(url_for("settings_account"))
    user = conn.execute("SELECT * FROM users WHERE id = 1").fetchone()
    return render_template("settings_account.html", user=user)


@app.route("/settings/password", methods=["GET", "POST"])
def settings_password():
    conn = db()
    user = conn.execute("SELECT * FROM users WHERE id = 1").fetchone()
    if request.method == "POST":
        current = request.form.get("current_password", "")
        new = request.form.get("password", "")
        confirm = request.form.get("password_confirm", "")
        if seed_module.hash_password(current) != user["password"]:
            flash("Your current password is incorrect.")
        elif len(new) < 8:
            flash("The new password must be at least 8 characters.")
        elif new != confirm:
            flash("The new passwords do not match.")
        else:
            conn.execute(
                "UPDATE users SET password = ?, password_changed_at = ? WHERE id = 1",
                (seed_module.hash_password(new), now()),
            )
            conn.commit()
            flash("Password changed.")
            return redirect(url_for("settings_account"))
        return redirect(url_for("settings_password"))
    return render_template("settings_password.html", user=user)


@app.errorhandler(404)
def not_found(_e):
    return render_template("not_found.html"), 404


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description="The shop sandbox web app.")
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--db", default=str(HERE / "shop.db"))
    args = parser.parse_args()
    if not os.path.exists(args.db):
        create_db(args.db)
    app.config["DB_PATH"] = os.path.abspath(args.db)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    flask.cli.show_server_banner = lambda *a, **k: None  # quiet logs
    app.run(host="127.0.0.1", port=args.port, threaded=True, debug=False, use_reloader=False)


if __name__ == "__main__":
    main()
