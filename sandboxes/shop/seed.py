"""Fills a fresh shop DB deterministically (random.Random(0)): ~400 products, variants, reviews,
addresses, past orders, returns, wishlist items and coupons. `seed(conn)` takes well under a second."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from datetime import datetime, timedelta

BASE_DATE = datetime(2025, 3, 1, 10, 0, 0)

# name, description, brands, {noun: [prefixes]} (names are "<prefix> <noun>"), sizes, colours,
# (min, max) price in dollars
CATEGORIES = [
    (
        "Running Shoes",
        "Road, trail and track shoes for every distance.",
        ["Stridewell", "Northpeak", "Kestrel", "Aerofoot", "Velo Run"],
        {
            "Runner": ["Trail", "Road", "Cloud", "Summit", "Canyon", "Metro", "Ridge"],
            "Racer": ["Tempo", "Swift", "Road", "Carbon", "Track"],
            "Trainer": ["Tempo", "Daily", "Cushioned", "Stability", "Metro"],
            "Glide": ["Cloud", "Swift", "Pace", "Ridge"],
            "Trail Shoe": ["Canyon", "Summit", "Mudguard", "Rock Plate", "Ridge"],
            "Spike": ["Sprint", "Distance", "Cross-Country"],
            "Recovery Slide": ["Cushioned", "Cloud"],
            "Walking Shoe": ["Everyday", "Metro", "Lightweight"],
        },
        ["US 7", "US 8", "US 9", "US 10", "US 11", "US 12"],
        ["Black", "Navy", "Volt", "Grey", "White", "Coral"],
        (79, 189),
    ),
    (
        "Outdoor Jackets",
        "Shells, insulated jackets and rain wear.",
        ["Northpeak", "Fjellmark", "Cascade Co.", "Timberline", "Arcwind"],
        {
            "Shell Jacket": ["Alpine", "Storm", "Ridgeline", "Three-Layer", "Lightweight"],
            "Down Jacket": ["Packable", "Glacier", "Hooded", "Expedition", "Featherlight"],
            "Rain Jacket": ["Coastal", "Packable", "Waterproof", "Commuter", "Trail"],
            "Parka": ["Thermal", "Arctic", "Insulated", "City"],
            "Anorak": ["Coastal", "Retro", "Windproof"],
            "Softshell Jacket": ["Alpine", "Stretch", "Ridgeline", "Climbing"],
            "Fleece Jacket": ["Polar", "Grid", "High-Pile", "Recycled"],
            "Vest": ["Insulated", "Down", "Fleece", "Trail"],
        },
        ["XS", "S", "M", "L", "XL"],
        ["Black", "Olive", "Forest Green", "Rust", "Navy", "Sand"],
        (89, 349),
    ),
    (
        "Knitwear",
        "Sweaters, cardigans and knits in wool and cotton.",
        ["Hearth & Loom", "Merrow", "Fjellmark", "Oxbury", "Woolhaven"],
        {
            "Crew Sweater": ["Merino", "Cashmere", "Lambswool", "Shetland", "Fine-Gauge", "Cotton"],
            "V-Neck Sweater": ["Merino", "Cashmere", "Lambswool", "Fine-Gauge"],
            "Cardigan": ["Chunky", "Cashmere", "Shawl-Collar", "Cotton", "Alpaca"],
            "Turtleneck": ["Merino", "Ribbed", "Cashmere", "Chunky"],
            "Quarter-Zip": ["Merino", "Cotton", "Lambswool", "Waffle-Knit"],
            "Sweater": ["Fisherman", "Cable-Knit", "Nordic", "Alpaca"],
            "Knit Vest": ["Cable-Knit", "Argyle", "Merino"],
            "Beanie Set": ["Merino", "Cashmere", "Ribbed"],
        },
        ["XS", "S", "M", "L", "XL"],
        ["Oatmeal", "Charcoal", "Navy", "Camel", "Bottle Green", "Burgundy"],
        (49, 229),
    ),
    (
        "T-Shirts & Tops",
        "Everyday tees, polos and technical tops.",
        ["Basecamp", "Oxbury", "Kestrel", "Lumen", "Merrow"],
        {
            "Tee": [
                "Organic Cotton",
                "Slub",
                "Pocket",
                "Heavyweight",
                "Performance",
                "Striped",
                "Relaxed",
                "Merino",
            ],
            "Long-Sleeve Tee": ["Organic Cotton", "Waffle", "Performance", "Striped", "Merino"],
            "Polo": ["Pique", "Performance", "Knitted", "Organic Cotton"],
            "Tank Top": ["Performance", "Ribbed", "Organic Cotton", "Mesh"],
            "Shirt": ["Linen", "Oxford", "Flannel", "Chambray", "Camp-Collar", "Seersucker"],
            "Henley": ["Waffle", "Slub", "Long-Sleeve", "Organic Cotton"],
            "Base Layer Top": ["Merino", "Midweight", "Lightweight"],
        },
        ["XS", "S", "M", "L", "XL", "XXL"],
        ["White", "Black", "Heather Grey", "Sky Blue", "Sage", "Ecru"],
        (19, 79),
    ),
    (
        "Trousers & Shorts",
        "Chinos, hiking pants, joggers and shorts.",
        ["Oxbury", "Timberline", "Basecamp", "Denimworks", "Arcwind"],
        {
            "Chinos": ["Slim", "Relaxed", "Stretch", "Pleated", "Tapered"],
            "Hiking Pants": ["Ripstop", "Convertible", "Stretch", "Softshell", "Lightweight"],
            "Joggers": ["Fleece", "Tapered", "Tech", "Relaxed"],
            "Shorts": ["Cargo", "Running", "Chino", "Board", "Trail", "Linen"],
            "Jeans": ["Slim", "Straight", "Relaxed", "Selvedge", "Tapered"],
            "Climbing Pants": ["Stretch", "Canvas", "Ripstop"],
            "Trousers": ["Corduroy", "Wool", "Travel", "Pleated", "Linen"],
            "Cargo Pants": ["Ripstop", "Relaxed", "Utility"],
        },
        ["28", "30", "32", "34", "36", "38"],
        ["Khaki", "Stone", "Black", "Navy", "Olive", "Indigo"],
        (39, 149),
    ),
    (
        "Backpacks & Bags",
        "Daypacks, travel bags and everyday carry.",
        ["Packwell", "Northpeak", "Urbanist", "Cascade Co.", "Kestrel"],
        {
            "Backpack": ["Commuter", "Rolltop", "Laptop", "Travel", "Ultralight", "Canvas"],
            "Daypack": ["Hiking", "Packable", "Ultralight", "Trail", "Hydration"],
            "Duffel": ["Weekender", "Expedition", "Travel", "Gym", "Waterproof"],
            "Tote": ["Canvas", "Market", "Waxed", "Laptop"],
            "Messenger Bag": ["Commuter", "Waxed Canvas", "Leather"],
            "Hip Pack": ["Running", "Trail", "Everyday", "Hydration"],
            "Sling Bag": ["Everyday", "Camera", "Travel"],
            "Trekking Pack": ["Expedition", "Multi-Day", "Alpine", "Ultralight"],
        },
        ["18 L", "24 L", "30 L", "40 L"],
        ["Black", "Slate", "Olive", "Mustard", "Navy"],
        (35, 229),
    ),
    (
        "Camping Gear",
        "Tents, sleeping bags and camp furniture.",
        ["Fjellmark", "Campfire & Co.", "Northpeak", "Trailhaven", "Pinecrest"],
        {
            "Tent": ["Backcountry", "Family", "Ultralight", "Four-Season", "Trekking", "Festival", "Dome"],
            "Sleeping Bag": ["Down", "Synthetic", "Ultralight", "Three-Season", "Mummy", "Rectangular"],
            "Sleeping Pad": ["Insulated", "Self-Inflating", "Foam", "Ultralight"],
            "Camp Chair": ["Compact", "Lakeside", "Folding", "Ultralight", "Rocking"],
            "Hammock": ["Camping", "Ultralight", "Double", "Lakeside"],
            "Camp Stove": ["Compact", "Two-Burner", "Backpacking", "Basecamp"],
            "Lantern": ["Rechargeable", "Solar", "Collapsible", "LED"],
            "Cooler": ["Rolling", "Soft-Sided", "Basecamp"],
        },
        ["Regular", "Long", "1-Person", "2-Person", "4-Person"],
        ["Green", "Orange", "Grey", "Blue", "Sand"],
        (29, 499),
    ),
    (
        "Kitchen",
        "Cookware, knives and kitchen tools.",
        ["Ferro Cucina", "Copperleaf", "Hearth & Home", "Brightside", "Kaiyo"],
        {
            "Skillet": ["Cast Iron", "Stainless", "Nonstick", "Carbon Steel", "Copper-Core"],
            "Saucepan": ["Stainless", "Nonstick", "Copper-Core", "Hard-Anodised"],
            "Dutch Oven": ["Enamelled", "Cast Iron", "Ceramic"],
            "Chef's Knife": ["Damascus", "German Steel", "Japanese", "Forged"],
            "Wok": ["Carbon Steel", "Nonstick", "Cast Iron"],
            "Cutting Board": ["Bamboo", "Walnut", "End-Grain", "Maple"],
            "Stockpot": ["Stainless", "Enamelled", "Tri-Ply"],
            "Frying Pan": ["Ceramic", "Nonstick", "Stainless", "Hard-Anodised"],
            "Sauté Pan": ["Tri-Ply", "Copper-Core", "Nonstick"],
        },
        ["16 cm", "20 cm", "24 cm", "28 cm", "32 cm"],
        ["Black", "Red", "Cream", "Sage", "Steel"],
        (19, 289),
    ),
    (
        "Home & Bedding",
        "Sheets, duvets, throws and cushions.",
        ["Hearth & Home", "Linenhaus", "Driftwood", "Woolhaven", "Calmwell"],
        {
            "Sheet Set": ["Percale", "Sateen", "Linen", "Flannel", "Bamboo", "Jersey", "Organic Cotton"],
            "Duvet Cover": ["Percale", "Sateen", "Linen", "Chambray", "Waffle", "Organic Cotton"],
            "Throw Blanket": ["Waffle", "Wool", "Chunky Knit", "Herringbone", "Fleece"],
            "Pillowcase Pair": ["Percale", "Sateen", "Linen", "Silk"],
            "Quilt": ["Cotton", "Linen", "Patchwork", "Stonewashed"],
            "Cushion Cover": ["Linen", "Velvet", "Bouclé", "Woven"],
            "Duvet": ["Down", "All-Season", "Lightweight", "Wool"],
            "Mattress Topper": ["Memory Foam", "Wool", "Latex"],
        },
        ["Twin", "Full", "Queen", "King"],
        ["White", "Oat", "Slate Blue", "Terracotta", "Charcoal", "Blush"],
        (29, 249),
    ),
    (
        "Audio & Electronics",
        "Headphones, speakers and chargers.",
        ["Soundcraft", "Voltaic", "Lumen", "Aria Audio", "Pulse Labs"],
        {
            "Headphones": ["Wireless", "Noise-Cancelling", "Studio", "Over-Ear", "On-Ear"],
            "Earbuds": ["Wireless", "Noise-Cancelling", "Sport", "Open-Ear", "Compact"],
            "Speaker": ["Portable", "Waterproof", "Smart", "Bluetooth", "Bookshelf", "Outdoor"],
            "Power Bank": ["Compact", "Solar", "Fast-Charge", "Magnetic"],
            "Charger": ["Wireless", "Fast", "Travel", "Three-in-One"],
            "Soundbar": ["Compact", "Smart", "Dolby Atmos"],
            "Headlamp": ["Rechargeable", "Trail", "Ultralight"],
            "Action Camera": ["Waterproof", "4K", "Compact"],
            "Fitness Watch": ["GPS", "Smart", "Trail"],
        },
        ["Standard", "Plus", "Max"],
        ["Black", "White", "Midnight Blue", "Silver", "Red"],
        (25, 399),
    ),
    (
        "Accessories",
        "Hats, socks, gloves, belts and sunglasses.",
        ["Basecamp", "Merrow", "Kestrel", "Oxbury", "Sunward"],
        {
            "Socks": [
                "Merino Hiking",
                "Running",
                "Cushioned Crew",
                "Wool Boot",
                "Cotton Ankle",
                "Compression",
            ],
            "Beanie": ["Merino", "Wool", "Cable-Knit", "Fisherman", "Reflective"],
            "Gloves": ["Touchscreen", "Leather", "Fleece", "Insulated", "Running"],
            "Belt": ["Leather", "Canvas", "Braided", "Webbing"],
            "Sunglasses": ["Polarised", "Sport", "Aviator", "Round"],
            "Cap": ["Trail", "Waxed", "Cotton", "Running", "Corduroy"],
            "Scarf": ["Wool", "Cashmere", "Cotton", "Plaid"],
            "Wallet": ["Leather", "Slim", "Card", "Zip"],
        },
        ["S/M", "L/XL", "One Size"],
        ["Black", "Grey", "Navy", "Tan", "Red"],
        (12, 129),
    ),
]

DESCRIPTION_LINES = [
    "Designed for everyday use and built to last.",
    "Made with responsibly sourced materials.",
    "A customer favourite, refined for this season.",
    "Lightweight, durable and easy to care for.",
    "Backed by our 2-year warranty.",
    "Tested in the field by our product team.",
    "Pairs well with the rest of the collection.",
    "Free returns within 30 days.",
]

FIRST = [
    "Alex",
    "Sam",
    "Jordan",
    "Priya",
    "Chen",
    "Maria",
    "Liam",
    "Aisha",
    "Noah",
    "Emma",
    "Lucas",
    "Sofia",
    "Mateo",
    "Hannah",
    "Kenji",
    "Fatima",
    "Oliver",
    "Zoe",
    "Diego",
    "Ingrid",
    "Tom",
    "Nadia",
]
LAST_INITIAL = "ABCDEFGHJKLMNPRSTVW"

REVIEW_TEXT = {
    5: [
        (
            "Absolutely love it",
            "Exceeded my expectations. The quality is outstanding and it arrived quickly.",
        ),
        ("Best purchase this year", "I use it every day. Would buy again without hesitation."),
        ("Perfect", "Exactly as described, fits perfectly and looks great."),
    ],
    4: [
        ("Very good", "Great quality for the price. Only minor nitpicks."),
        ("Happy with it", "Does what it says. Sizing runs slightly small, so consider going up one."),
        ("Solid choice", "Well made and comfortable. Took a week to break in."),
    ],
    3: [
        ("It's okay", "Decent, but not as nice as the photos suggest."),
        ("Average", "Works fine. The colour is a bit different from the website."),
        ("Mixed feelings", "Good materials, but the fit is not quite right for me."),
    ],
    2: [
        ("Disappointed", "Started to wear out after a few weeks of use."),
        ("Not for me", "Runs large and feels cheaper than expected."),
    ],
    1: [
        ("Would not recommend", "Arrived damaged and customer service was slow to respond."),
        ("Poor quality", "Fell apart after the first use. Returned it."),
    ],
}

ADDRESSES = [
    (
        1,
        "Home",
        "Jamie Rivera",
        "42 Maple Street, Apt 3B",
        "Portland",
        "OR",
        "97205",
        "United States",
        "+1 503 555 0142",
        1,
    ),
    (
        2,
        "Work",
        "Jamie Rivera",
        "1200 Harbor Boulevard, Floor 9",
        "Seattle",
        "WA",
        "98101",
        "United States",
        "+1 206 555 0199",
        0,
    ),
    (
        3,
        "Parents",
        "Luis Rivera",
        "88 Cedar Lane",
        "Sacramento",
        "CA",
        "95814",
        "United States",
        "+1 916 555 0177",
        0,
    ),
]

COUPONS = [
    (1, "WELCOME10", "10% off your order", 10, 0, 0, 0, 1),
    (2, "SPRING20", "20% off orders over $100", 20, 0, 0, 10000, 1),
    (3, "FREESHIP", "Free standard shipping", 0, 0, 1, 0, 1),
    (4, "TAKE15", "$15 off orders over $75", 0, 1500, 0, 7500, 1),
    (5, "WINTER25", "25% off (expired)", 25, 0, 0, 0, 0),
]

SHIPPING_CENTS = {"standard": 599, "express": 1499}


def hash_password(password: str) -> str:
    return "sha256$shop$" + hashlib.sha256(("shop" + password).encode()).hexdigest()


def seed(conn: sqlite3.Connection) -> None:
    rng = random.Random(0)
    ts = lambda d: d.strftime("%Y-%m-%d %H:%M:%S")

    conn.execute(
        "INSERT INTO users (id, display_name, email, phone, newsletter, password, password_changed_at) "
        "VALUES (1, 'Jamie Rivera', 'jamie.rivera@example.com', '+1 503 555 0142', 1, ?, ?)",
        (hash_password("correct-horse-42"), ts(BASE_DATE - timedelta(days=200))),
    )
    conn.executemany(
        "INSERT INTO categories (id, name, description) VALUES (?, ?, ?)",
        [(i + 1, c[0], c[1]) for i, c in enumerate(CATEGORIES)],
    )

    products, variants = [], []
    pid = vid = 0
    for cat_id, (cname, _d, brands, names, sizes, colours, (lo, hi)) in enumerate(CATEGORIES, 1):
        combos = [(p, n) for n, prefixes in names.items() for p in prefixes]
        rng.shuffle(combos)
        for prefix, noun in combos[:40]:
            pid += 1
            name = f"{prefix} {noun}"
            brand = rng.choice(brands)
            base = rng.randint(lo, hi) * 100 - rng.choice([0, 1, 1, 5, 51])  # $129.00, $128.99, $128.49
            desc = f"The {name} from {brand}. " + " ".join(rng.sample(DESCRIPTION_LINES, 3))
            created = BASE_DATE - timedelta(days=rng.randint(5, 700))
            n_sizes = rng.randint(1, min(3, len(sizes)))
            n_cols = rng.randint(1, 2)
            chosen_sizes = sorted(rng.sample(sizes, n_sizes), key=sizes.index)
            chosen_cols = rng.sample(colours, n_cols)
            combos_v = [(s, c) for c in chosen_cols for s in chosen_sizes][:6]
            if len(combos_v) < 2:
                combos_v.append((chosen_sizes[0], rng.choice([c for c in colours if c not in chosen_cols])))
            prices = []
            for size, colour in combos_v:
                vid += 1
                extra = (
                    sizes.index(size) * 500
                    if cname
                    in (
                        "Camping Gear",
                        "Kitchen",
                        "Home & Bedding",
                        "Audio & Electronics",
                        "Backpacks & Bags",
                    )
                    else 0
                )
                price = base + extra
                prices.append(price)
                stock = rng.choice([0, 0, 2, 3, 5, 8, 12, 15, 20, 25, 40])
                sku = f"{cname[:2].upper()}{pid:04d}-{vid:05d}"
                variants.append((vid, pid, sku, size, colour, price, stock))
            products.append((pid, cat_id, name, brand, desc, min(prices), ts(created)))
    conn.executemany(
        "INSERT INTO products (id, category_id, name, brand, description, price_cents, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        products,
    )
    conn.executemany(
        "INSERT INTO variants (id, product_id, sku, size, colour, price_cents, stock) VALUES (?, ?, ?, ?, ?, ?, ?)",
        variants,
    )

    reviews = []
    rid = 0
    for p in products:
        for _ in range(rng.choice([0, 0, 1, 1, 2, 2, 3, 4])):
            rid += 1
            rating = rng.choices([5, 4, 3, 2, 1], weights=[45, 30, 12, 8, 5])[0]
            title, body = rng.choice(REVIEW_TEXT[rating])
            author = f"{rng.choice(FIRST)} {rng.choice(LAST_INITIAL)}."
            created = BASE_DATE - timedelta(days=rng.randint(1, 400), minutes=rng.randint(0, 1440))
            reviews.append((rid, p[0], None, author, rating, title, body, ts(created)))
    # three reviews by the signed-in user
    for pid_own, rating in ((3, 5), (57, 4), (131, 3)):
        rid += 1
        title, body = REVIEW_TEXT[rating][0]
        reviews.append(
            (rid, pid_own, 1, "Jamie R.", rating, title, body, ts(BASE_DATE - timedelta(days=rid % 90)))
        )
    conn.executemany(
        "INSERT INTO reviews (id, product_id, user_id, author_name, rating, title, body, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        reviews,
    )

    conn.executemany(
        "INSERT INTO addresses (id, user_id, label, full_name, street, city, region, postcode, country, phone, "
        "is_default) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ADDRESSES,
    )
    conn.executemany(
        "INSERT INTO payment_cards (id, user_id, brand, last4, holder_name, exp_month, exp_year) "
        "VALUES (?, 1, ?, ?, ?, ?, ?)",
        [(1, "Visa", "4242", "Jamie Rivera", 8, 2028), (2, "Mastercard", "5454", "Jamie Rivera", 2, 2027)],
    )
    conn.executemany(
        "INSERT INTO coupons (id, code, description, percent_off, amount_off_cents, free_shipping, "
        "min_subtotal_cents, active) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        COUPONS,
    )
    conn.execute(
        "INSERT INTO carts (id, user_id, coupon_code, address_id, shipping_method) "
        "VALUES (1, 1, NULL, NULL, 'standard')"
    )

    # past orders, oldest first
    statuses = ["delivered"] * 10 + ["cancelled", "delivered", "shipped", "shipped", "processing"]
    orders, items = [], []
    oiid = 0
    in_stock = [v for v in variants if v[6] > 0]
    for oid, status in enumerate(statuses, 1):
        addr = ADDRESSES[0] if oid % 4 else ADDRESSES[rng.choice([1, 2])]
        created = BASE_DATE - timedelta(days=(16 - oid) * 19 + rng.randint(0, 5), hours=rng.randint(0, 10))
        subtotal = 0
        for v in rng.sample(in_stock, rng.randint(1, 3)):
            oiid += 1
            qty = rng.choice([1, 1, 1, 2])
            prod = products[v[1] - 1]
            subtotal += v[5] * qty
            items.append((oiid, oid, v[0], v[1], prod[2], v[3], v[4], v[5], qty))
        method = "express" if oid % 5 == 0 else "standard"
        coupon = "WELCOME10" if oid == 1 else None
        discount = subtotal // 10 if coupon else 0
        shipping = 0 if subtotal >= 10000 and method == "standard" else SHIPPING_CENTS[method]
        orders.append(
            (
                oid,
                status,
                addr[2],
                addr[3],
                addr[4],
                addr[5],
                addr[6],
                addr[7],
                addr[0],
                1 + oid % 2,
                method,
                coupon,
                subtotal,
                discount,
                shipping,
                subtotal - discount + shipping,
                ts(created),
            )
        )
    conn.executemany(
        "INSERT INTO orders (id, user_id, status, ship_name, ship_street, ship_city, ship_region, ship_postcode, "
        "ship_country, address_id, payment_card_id, shipping_method, coupon_code, subtotal_cents, discount_cents, "
        "shipping_cents, total_cents, created_at) VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        orders,
    )
    conn.executemany(
        "INSERT INTO order_items (id, order_id, variant_id, product_id, product_name, size, colour, "
        "unit_price_cents, quantity) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        items,
    )

    # two returns on delivered orders
    ret_items = [it for it in items if it[1] in (8, 10)][:2]
    conn.executemany(
        "INSERT INTO returns (id, order_item_id, quantity, reason, comment, status, refund_cents, created_at) "
        "VALUES (?, ?, 1, ?, ?, ?, ?, ?)",
        [
            (
                1,
                ret_items[0][0],
                "Doesn't fit",
                "Too tight around the shoulders.",
                "refunded",
                ret_items[0][7],
                ts(BASE_DATE - timedelta(days=110)),
            ),
            (
                2,
                ret_items[1][0],
                "Damaged or defective",
                "The zip broke after two days.",
                "requested",
                ret_items[1][7],
                ts(BASE_DATE - timedelta(days=60)),
            ),
        ],
    )

    conn.executemany(
        "INSERT INTO wishlist_items (id, user_id, product_id, added_at) VALUES (?, 1, ?, ?)",
        [(i + 1, p, ts(BASE_DATE - timedelta(days=3 * i + 1))) for i, p in enumerate((12, 88, 203, 317))],
    )

    # something already in the cart
    conn.executemany(
        "INSERT INTO cart_items (id, user_id, variant_id, quantity, added_at) VALUES (?, 1, ?, ?, ?)",
        [(1, in_stock[40][0], 1, ts(BASE_DATE - timedelta(days=1)))],
    )
