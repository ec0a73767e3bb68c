"""Fills a fresh mail DB with a realistic, deterministic mailbox: `seed(conn)`.

About 2,600 messages over the year before SEED_NOW (incoming mail of a dozen kinds, sent replies,
drafts, trash), 150 contacts, 8 labels and 4 user folders. Everything comes from random.Random(0)
and a fixed clock, so two seeds give byte-identical databases.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta

SEED_NOW = datetime(2026, 11, 27, 18, 0)  # the "now" of the seeded mailbox (fixed for determinism)

ME_NAME = "Alex Morgan"
ME_EMAIL = "alex.morgan@brightwave.io"
SIGNATURE = "Alex Morgan\nProduct Manager, Brightwave\n+1 415 555 0142"

INBOX, SENT, DRAFTS, ARCHIVE, TRASH = 1, 2, 3, 4, 5
SYSTEM_FOLDERS = [(INBOX, "Inbox"), (SENT, "Sent"), (DRAFTS, "Drafts"), (ARCHIVE, "Archive"), (TRASH, "Trash")]
USER_FOLDERS = [(6, "Receipts"), (7, "Travel"), (8, "Projects"), (9, "Newsletters")]
RECEIPTS, TRAVEL, PROJECTS, NEWSLETTERS = 6, 7, 8, 9

LABELS = [
    (1, "Work", "blue"),
    (2, "Personal", "green"),
    (3, "Finance", "orange"),
    (4, "Urgent", "red"),
    (5, "Follow up", "purple"),
    (6, "Family", "pink"),
    (7, "Read later", "teal"),
    (8, "Clients", "yellow"),
]
WORK, PERSONAL, FINANCE, URGENT, FOLLOW_UP, FAMILY, READ_LATER, CLIENTS = range(1, 9)

FIRST = ["Aisha", "Ben", "Carmen", "Daniel", "Elena", "Farid", "Grace", "Hiro", "Isabel", "Jonah", "Keiko", "Liam", "Maya", "Nikhil", "Olivia", "Pablo", "Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wesley", "Xiomara", "Yusuf", "Zoe", "Amara", "Bruno", "Chloe", "Dmitri", "Esther", "Felix", "Gemma", "Hassan", "Ines", "Jamal", "Kira", "Lucas", "Mei", "Noah", "Oksana", "Priya", "Rafael", "Sofia", "Theo", "Uma", "Victor", "Wen", "Yara", "Adrian", "Beatriz", "Caleb", "Dana", "Emeka", "Fiona", "Gabriel", "Hana", "Ivan", "Julia", "Kwame", "Leah", "Marco", "Nadia", "Owen", "Petra", "Ravi", "Sana", "Tomas", "Ursula", "Valentina", "Will", "Ximena", "Yosef", "Zara", "Andre", "Bianca", "Colin", "Diana", "Ethan", "Freya"]
LAST = ["Okafor", "Lindqvist", "Moreno", "Park", "Castillo", "Haddad", "Whitfield", "Tanaka", "Alvarez", "Brennan", "Sato", "Gallagher", "Chen", "Rao", "Bennett", "Ruiz", "Ahmed", "Novak", "Kowalski", "Nguyen", "Fischer", "Dubois", "Oyelaran", "Costa", "Murphy", "Petrov", "Silva", "Kim", "Hughes", "Mendez", "Jensen", "Kapoor", "Rossi", "Schmidt", "Walsh", "Yilmaz", "Abbott", "Delgado", "Ferreira", "Gupta", "Hartley", "Ibrahim", "Johansson", "Kaur", "Laurent", "Mitchell", "Nakamura", "O'Connor", "Patel", "Quintero", "Reyes", "Sullivan", "Thornton", "Ueda", "Varga", "Weber", "Xu", "Young", "Zimmerman", "Adeyemi", "Barros", "Carver", "Donovan", "Eriksen", "Flores", "Greene", "Holm", "Iversen", "Jovanovic", "Keller", "Larsen", "Mensah", "Nilsen", "Ortiz", "Price", "Quinlan", "Romero", "Stein", "Torres"]

COLLEAGUE_CO = ("Brightwave", "brightwave.io")
COMPANIES = [
    ("Northstar Analytics", "northstar-analytics.com"),
    ("Cedar & Finch", "cedarfinch.co"),
    ("Helix Health", "helixhealth.org"),
    ("Bluepeak Ventures", "bluepeak.vc"),
    ("Orchard Labs", "orchardlabs.dev"),
    ("Tidewater Logistics", "tidewaterlogistics.com"),
    ("Kestrel Media", "kestrelmedia.net"),
    ("Luma Retail", "luma-retail.com"),
    ("Summit Legal LLP", "summitlegal.law"),
    ("Fernway Studio", "fernway.studio"),
    ("Meridian Consulting", "meridian-consulting.com"),
    ("Copperleaf Foods", "copperleaf.com"),
    ("Silverline Architects", "silverline-arch.com"),
    ("Harborlight Foundation", "harborlight.org"),
    ("Quill & Ink Publishing", "quillink.pub"),
]
PERSONAL_DOMAINS = ["gmail.com", "outlook.com", "proton.me", "fastmail.com", "icloud.com"]
AREA_CODES = ["415", "510", "650", "212", "646", "312", "206", "503", "617", "512"]

FAMILY_MEMBERS = [
    ("Linda Morgan", "linda.morgan@gmail.com", "Mom"),
    ("Robert Morgan", "bob.morgan54@outlook.com", "Dad"),
    ("Jess Morgan", "jessmorgan@icloud.com", "Jess"),
    ("Tom Alvarez", "tom.alvarez@gmail.com", "Tom"),
    ("Nana Ruth Morgan", "ruth.morgan@outlook.com", "Nana"),
]

TOPICS = [
    "Q3 roadmap", "onboarding redesign", "billing migration", "mobile release 4.2", "API rate limits",
    "customer interviews", "design system", "pricing page", "data retention policy", "hiring plan",
    "support backlog", "analytics dashboard", "SSO integration", "performance review cycle", "team offsite",
    "search relevance", "notifications revamp", "accessibility audit", "Q4 planning", "churn analysis",
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]

VENDORS = [  # name, billing address, what they bill for, typical amount range
    ("Northwind Hosting", "billing@northwindhosting.com", "cloud hosting (3 servers, 2 TB transfer)", (80, 400)),
    ("Cobalt Cloud Storage", "invoices@cobaltcloud.io", "storage plan Business 5 TB", (25, 60)),
    ("Greenline Energy", "accounts@greenline-energy.com", "electricity, meter 4471-A", (60, 190)),
    ("Metro Fiber", "billing@metrofiber.net", "Fiber 1 Gbps internet", (65, 75)),
    ("Keystone Insurance", "policy@keystone-insure.com", "renters insurance policy KR-22817", (18, 24)),
    ("Papertrail Office Supply", "orders@papertrail-office.com", "office supplies", (30, 260)),
    ("Clearview Dental", "frontdesk@clearviewdental.com", "dental cleaning and X-rays", (45, 180)),
    ("Stride Fitness", "members@stridefitness.com", "monthly membership", (49, 49)),
]
STORES = [
    ("Oakridge Outfitters", "orders@oakridge-outfitters.com",
     ["Trail running shoes (size 10)", "Merino wool hoodie", "40L daypack", "Insulated water bottle"]),
    ("Bookhaven", "hello@bookhaven.com",
     ["The Design of Everyday Things", "Thinking in Systems", "A Field Guide to Getting Lost", "Klara and the Sun"]),
    ("Kitchen & Co.", "orders@kitchenandco.com",
     ["Cast iron skillet 12\"", "Chef's knife 8\"", "Pour-over coffee set", "Bamboo cutting board"]),
    ("TechNest", "no-reply@technest.com",
     ["USB-C hub (7-in-1)", "Noise-cancelling headphones", "27\" 4K monitor", "Mechanical keyboard"]),
    ("Petal & Stem", "orders@petalandstem.com", ["Seasonal bouquet", "Potted fiddle leaf fig", "Orchid in ceramic pot"]),
]
CARRIERS = [("ParcelPoint", "tracking@parcelpoint.com"), ("Swift Courier", "updates@swiftcourier.com")]
NEWSLETTER_SOURCES = [
    ("The Weekly Byte", "newsletter@weeklybyte.dev",
     ["Why your database needs fewer indexes", "A gentle intro to vector search", "The state of WebAssembly",
      "Postmortems that actually help", "What's new in Python 3.15"]),
    ("Design Digest", "digest@designdigest.co",
     ["Typography for dashboards", "The return of skeuomorphism?", "Designing empty states",
      "Color systems that scale", "Microcopy that converts"]),
    ("Morning Ledger", "briefing@morningledger.com",
     ["Markets edge higher on rate hopes", "Housing starts cool in October", "What the jobs report means for you",
      "Small caps rally", "A quiet week for earnings"]),
    ("Trail & Summit", "news@trailandsummit.org",
     ["10 autumn hikes near the bay", "Layering for cold mornings", "Trail etiquette refresher",
      "Volunteer trail days this month", "Best campgrounds for winter"]),
    ("Product Notes", "hello@productnotes.fm",
     ["How to run a pricing experiment", "Roadmaps are promises, not plans", "Interviewing churned users",
      "The one-page spec", "Saying no to good ideas"]),
]
CITIES = [("Lisbon", "LIS"), ("Chicago", "ORD"), ("Denver", "DEN"), ("Tokyo", "HND"), ("Mexico City", "MEX"),
          ("Boston", "BOS"), ("Seattle", "SEA"), ("Copenhagen", "CPH"), ("Austin", "AUS"), ("Vancouver", "YVR")]
AIRLINES = [("SkyBridge Airlines", "reservations@skybridgeair.com", "SB"),
            ("Nordia Air", "booking@nordia-air.com", "ND")]
HOTELS = ["Hotel Alfama", "Harborview Inn", "The Lantern House", "Parkside Suites", "Copper Kettle Lodge"]

FEEDBACK_ITEMS = ["homepage mockups", "second round of wireframes", "brand guidelines", "pilot results",
                  "Q3 report draft", "statement of work", "onboarding flow prototype", "research summary"]

FAMILY_SUBJECTS = [
    ("Sunday dinner?", "Are you free for dinner on Sunday? Dad is making his lasagna and Jess might come by with the kids."),
    ("Photos from the lake", "I finally uploaded the photos from the lake weekend. The one of you and the canoe is my favourite."),
    ("Nana's birthday", "Nana turns 88 on the {day}th. We're thinking a small lunch at her place. Can you bring dessert?"),
    ("Thanksgiving plans", "We're doing Thanksgiving at our place this year. Let me know if you're bringing anyone and what you'd like to cook."),
    ("Did you see this?", "Saw this article about the old neighbourhood and thought of you. The bakery on Elm is closing, can you believe it?"),
    ("Call me when you can", "Nothing urgent, just want to catch up. Call me when you have a minute this week."),
    ("Recipe you asked for", "Here's Nana's apple cake recipe: 3 apples, 2 cups flour, 1 cup sugar, 3 eggs, a stick of butter, cinnamon. Bake at 350 for 45 minutes."),
    ("Holiday flights", "Have you booked your flights for December yet? Prices are going up, don't wait too long."),
    ("The kids' recital", "The kids have their winter recital on the {day}th at 6pm. It would mean a lot if you could make it."),
    ("Garage clean-out", "We're finally clearing out the garage. Is there anything of yours in there you want to keep? Your old bike is still here."),
]
FRIEND_SUBJECTS = [
    ("Drinks Friday?", "A few of us are going to the Copper Tap on Friday after work. You in?"),
    ("Climbing this weekend", "Gym on Saturday morning? I want to try the new overhang routes."),
    ("Book club: next pick", "We're voting on the next book. Current options: Piranesi, The Overstory, or Tomorrow x3. Vote by Sunday!"),
    ("Wedding RSVP reminder", "Just a reminder to RSVP for the wedding by the end of the month. We can't wait to celebrate with you."),
    ("Borrowing your tent", "Could I borrow your tent for a camping trip in two weeks? I'll return it dry, I promise."),
    ("Game night", "Game night at ours next Thursday. Bring a snack and your competitive spirit."),
    ("Trip photos", "Sharing the album from our trip. Some great shots of the coast."),
    ("Concert tickets", "I have a spare ticket for the Lumineers on the {day}th. Want it?"),
]

GREETINGS = ["Hi Alex,", "Hey Alex,", "Hello Alex,", "Alex,", "Hi Alex!", "Good morning Alex,"]
SIGNOFFS = ["Thanks,", "Best,", "Cheers,", "Thanks!", "Talk soon,", "Best regards,", "Regards,"]
MEETING_OPENERS = [
    "Thanks everyone for joining today's {topic} sync. Summary below.",
    "Here are my notes from the {topic} meeting.",
    "Quick recap of where we landed on {topic}.",
    "Sharing the notes from this morning's {topic} discussion so we're all aligned.",
]
DECISIONS = [
    "We agreed to ship the first phase behind a feature flag.",
    "Scope for the next sprint is frozen; anything new goes to the backlog.",
    "Design will run two more user interviews before we commit.",
    "Engineering estimates came in at about three weeks.",
    "We're dropping the legacy export format at the end of the quarter.",
    "Support wants a heads-up one week before launch.",
    "Legal has signed off on the updated terms.",
    "The pilot with two enterprise customers starts next month.",
    "We'll revisit the pricing tiers after the churn analysis is done.",
    "Marketing will prepare a launch post and a short demo video.",
]
ACTIONS = [
    "{name} to share the updated spec by {weekday}.",
    "{name} to follow up with the data team about the missing events.",
    "Alex to confirm the launch date with leadership.",
    "{name} to book a follow-up session for next week.",
    "Alex to update the roadmap doc.",
    "{name} to draft the customer announcement.",
    "{name} to file tickets for the open bugs.",
]
QUESTIONS = [
    "Do you have a few minutes today to look at the {topic} numbers?",
    "Can you take a look at the doc before the review on {weekday}?",
    "Would it be OK to push the {topic} deadline by a week?",
    "Who should own the {topic} follow-ups now that Priya is out?",
    "Can we move our 1:1 to {weekday} afternoon?",
]
CLIENT_LINES = [
    "Following up on our call, I've attached the revised proposal with the timeline we discussed.",
    "The team reviewed the {item} and we have a few comments, mostly minor wording changes.",
    "Could we schedule a call next week to go over the next phase?",
    "Our budget for the next quarter has been approved, so we're ready to move forward.",
    "We'd like to extend the engagement through the end of the year if that works on your side.",
    "I'm out of office from the {day}th but my colleague can cover anything urgent.",
    "Overall we're very happy with the progress. Great work from your team.",
    "One concern: the launch date feels tight given the holiday freeze.",
]


def _fmt(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M")


def _human_date(dt: datetime) -> str:
    return dt.strftime("%B %-d, %Y")


def seed(conn: sqlite3.Connection) -> None:
    rng = random.Random(0)

    # ---- settings, folders, labels --------------------------------------------------------------
    conn.execute(
        "INSERT INTO settings (id, display_name, email, signature, messages_per_page) VALUES (1, ?, ?, ?, 50)",
        (ME_NAME, ME_EMAIL, SIGNATURE),
    )
    conn.execute(
        "INSERT INTO vacation_reply (id, enabled, subject, message, start_date, end_date) VALUES (1, 0, ?, ?, ?, ?)",
        ("Out of office", "Hi, I'm away with limited access to email until January 5. For anything urgent, "
         "please contact Dana Kim (dana.kim@brightwave.io).\n\nAlex",
         "2026-12-22", "2027-01-05"),
    )
    conn.executemany(
        "INSERT INTO folders (id, name, is_system, position) VALUES (?, ?, 1, ?)",
        [(fid, name, fid) for fid, name in SYSTEM_FOLDERS],
    )
    conn.executemany(
        "INSERT INTO folders (id, name, is_system, position) VALUES (?, ?, 0, ?)",
        [(fid, name, 100 + i) for i, (fid, name) in enumerate(USER_FOLDERS)],
    )
    conn.executemany("INSERT INTO labels (id, name, colour) VALUES (?, ?, ?)", LABELS)

    # ---- contacts --------------------------------------------------------------------------------
    used: set[tuple[str, str]] = set()
    contacts: list[dict] = []

    def person() -> tuple[str, str]:
        while True:
            f, l = rng.choice(FIRST), rng.choice(LAST)
            if (f, l) not in used:
                used.add((f, l))
                return f, l

    def phone() -> str:
        return f"+1 {rng.choice(AREA_CODES)} 555 {rng.randint(100, 199):04d}"

    notes_pool = [
        "", "", "", "Prefers calls in the morning.", "Met at the Product Summit in Austin.",
        "Point of contact for the {topic}.", "Birthday in {month}.", "Vegetarian: remember for team dinners.",
        "Works remotely from Lisbon (UTC+0).", "Introduced by Dana.", "Usually replies within a day.",
        "Ask about the {topic} before the next renewal.",
    ]

    def note() -> str:
        return rng.choice(notes_pool).format(topic=rng.choice(TOPICS), month=rng.choice(MONTHS))

    # Dana Kim is Alex's manager, referenced by the vacation reply.
    used.add(("Dana", "Kim"))
    contacts.append(dict(name="Dana Kim", email="dana.kim@brightwave.io", phone=phone(), company="Brightwave",
                         notes="Manager. Weekly 1:1 on Tuesdays.", kind="colleague", first="Dana"))
    for _ in range(37):
        f, l = person()
        email = f"{f.lower()}.{l.lower().replace(chr(39), '')}@{COLLEAGUE_CO[1]}"
        contacts.append(dict(name=f"{f} {l}", email=email, phone=phone(), company=COLLEAGUE_CO[0], notes=note(),
                             kind="colleague", first=f))
    for _ in range(90):
        f, l = person()
        co, domain = rng.choice(COMPANIES)
        email = f"{f[0].lower()}{l.lower().replace(chr(39), '')}@{domain}"
        contacts.append(dict(name=f"{f} {l}", email=email, phone=phone(), company=co, notes=note(),
                             kind="client", first=f))
    for name, email, first in FAMILY_MEMBERS:
        contacts.append(dict(name=name, email=email, phone=phone(), company="", notes="Family", kind="family",
                             first=first))
    for _ in range(17):
        f, l = person()
        email = f"{f.lower()}{rng.choice(['', '.', '_'])}{l.lower().replace(chr(39), '')}{rng.choice(['', '', str(rng.randint(1, 99))])}@{rng.choice(PERSONAL_DOMAINS)}"
        contacts.append(dict(name=f"{f} {l}", email=email, phone=phone(), company="", notes=note(),
                             kind="friend", first=f))
    contacts.sort(key=lambda c: c["name"])
    conn.executemany(
        "INSERT INTO contacts (name, email, phone, company, notes) VALUES (?, ?, ?, ?, ?)",
        [(c["name"], c["email"], c["phone"], c["company"], c["notes"]) for c in contacts],
    )
    by_kind: dict[str, list[dict]] = {}
    for c in contacts:
        by_kind.setdefault(c["kind"], []).append(c)

    # ---- incoming mail ---------------------------------------------------------------------------
    def when(max_days: float = 365) -> datetime:
        days = rng.random() ** 1.15 * max_days  # a little denser towards the present
        dt = (SEED_NOW - timedelta(days=days)).replace(hour=rng.choice(range(7, 23)), minute=rng.randrange(60))
        return dt - timedelta(days=1) if dt > SEED_NOW else dt

    def money(lo: int, hi: int) -> str:
        return f"${rng.uniform(lo, hi):,.2f}"

    def sign(first: str) -> str:
        return f"{rng.choice(SIGNOFFS)}\n{first}"

    msgs: list[dict] = []

    def add(kind, sender, subject, body, dt, labels=(), folder=None, to=ME_EMAIL, cc=""):
        msgs.append(dict(kind=kind, from_name=sender[0], from_email=sender[1], to_email=to, cc_email=cc,
                         subject=subject, body=body, dt=dt, labels=set(labels), folder=folder, reply_to=None))

    def colleague() -> dict:
        return rng.choice(by_kind["colleague"])

    def meeting():
        c, topic = colleague(), rng.choice(TOPICS)
        others = rng.sample(by_kind["colleague"], 3)
        subject = rng.choice(["Notes from the {t} sync", "Action items: {t}", "{T} decisions and next steps",
                              "Recap: {t} review"]).format(t=topic, T=topic[0].upper() + topic[1:])
        decisions = "\n".join(f"- {d}" for d in rng.sample(DECISIONS, 3))
        actions = "\n".join(
            "- " + a.format(name=rng.choice(others)["first"], weekday=rng.choice(WEEKDAYS))
            for a in rng.sample(ACTIONS, 3)
        )
        body = (f"{rng.choice(GREETINGS).replace('Alex', 'all').replace('all!', 'all,')}\n\n"
                f"{rng.choice(MEETING_OPENERS).format(topic=topic)}\n\n"
                f"Attendees: {', '.join(o['name'] for o in others)}, Alex Morgan, {c['name']}\n\n"
                f"Decisions:\n{decisions}\n\nAction items:\n{actions}\n\n{sign(c['first'])}")
        labels = [WORK] + ([FOLLOW_UP] if rng.random() < 0.25 else [])
        cc = ", ".join(o["email"] for o in others[:2])
        add("work", (c["name"], c["email"]), subject, body, when(), labels,
            PROJECTS if rng.random() < 0.15 else None, cc=cc)

    def question():
        c, topic = colleague(), rng.choice(TOPICS)
        q = rng.choice(QUESTIONS).format(topic=topic, weekday=rng.choice(WEEKDAYS))
        subject = rng.choice(["Quick question", "Re: {t}", "{T} follow-up", "Question about {t}", "Can you review?"])
        subject = subject.format(t=topic, T=topic[0].upper() + topic[1:])
        extra = rng.choice([
            "No rush, end of week is fine.", "I'd like to close this out before the planning meeting.",
            "Happy to jump on a quick call if that's easier.", "The latest draft is in the shared drive.",
        ])
        body = f"{rng.choice(GREETINGS)}\n\n{q} {extra}\n\n{sign(c['first'])}"
        urgent = rng.random() < 0.12
        labels = [WORK] + ([URGENT] if urgent else []) + ([FOLLOW_UP] if rng.random() < 0.2 else [])
        add("work", (c["name"], c["email"]), ("Urgent: " if urgent else "") + subject, body, when(), labels,
            PROJECTS if rng.random() < 0.1 else None)

    def invite():
        c, topic = colleague(), rng.choice(TOPICS)
        dt = when()
        day = dt + timedelta(days=rng.randint(1, 9))
        if day.weekday() >= 5:  # meetings happen on weekdays
            day += timedelta(days=7 - day.weekday())
        t = f"{rng.choice([9, 10, 11, 13, 14, 15, 16])}:{rng.choice(['00', '30'])}"
        subject = f"Invitation: {topic[0].upper() + topic[1:]} @ {day.strftime('%a %b %-d')} {t}"
        body = (f"{c['name']} has invited you to an event.\n\n{topic[0].upper() + topic[1:]}\n"
                f"When: {day.strftime('%A, %B %-d, %Y')}, {t} ({rng.choice([30, 45, 60])} minutes)\n"
                f"Where: {rng.choice(['Room Redwood (3F)', 'Room Sequoia (2F)', 'Video call', 'Cafe area'])}\n"
                f"Organizer: {c['email']}\n\nGoing? Yes / No / Maybe")
        add("invite", (c["name"], c["email"]), subject, body, dt, [WORK])

    def client():
        c = rng.choice(by_kind["client"])
        item = rng.choice(FEEDBACK_ITEMS)
        subject = rng.choice([
            "Feedback on the {i}", "Proposal for {co}", "Contract renewal: {co}", "Scheduling a call next week",
            "Next steps on the {i}", "Updated timeline", "Invoice question from {co}",
        ]).format(i=item, co=c["company"])
        lines = " ".join(l.format(item=item, day=rng.randint(2, 28)) for l in rng.sample(CLIENT_LINES, 2))
        body = (f"{rng.choice(GREETINGS)}\n\n{lines}\n\n{sign(c['first'])}\n{c['name']}, {c['company']}\n"
                f"{c['phone']}")
        add("client", (c["name"], c["email"]), subject, body, when(),
            [CLIENTS, WORK] if rng.random() < 0.6 else [CLIENTS])

    def invoice():
        vendor, addr, what, (lo, hi) = rng.choice(VENDORS)
        dt = when()
        no = f"INV-{rng.randint(10000, 99999)}"
        amount = money(lo, hi)
        due = dt + timedelta(days=rng.choice([14, 21, 30]))
        kind = rng.random()
        if kind < 0.55:
            subject = f"Invoice {no} from {vendor}"
            body = (f"Hello Alex Morgan,\n\nYour invoice {no} for {what} is now available.\n\n"
                    f"Amount due: {amount}\nDue date: {_human_date(due)}\nAccount: {rng.randint(100000, 999999)}\n\n"
                    f"You can view and pay this invoice in your {vendor} account. If you have set up automatic "
                    f"payments, no action is needed.\n\nThank you for your business,\n{vendor} Billing")
        elif kind < 0.8:
            subject = f"Payment received: thank you ({no})"
            body = (f"Hi Alex,\n\nWe received your payment of {amount} for invoice {no} on {_human_date(dt)}.\n"
                    f"Payment method: Visa ending in {rng.randint(1000, 9999)}\n\nThanks,\n{vendor}")
        else:
            subject = f"Reminder: invoice {no} is due {due.strftime('%b %-d')}"
            body = (f"Hi Alex,\n\nThis is a friendly reminder that invoice {no} ({amount}) is due on "
                    f"{_human_date(due)}. Please disregard this message if you have already paid.\n\n{vendor} Billing")
        add("invoice", (f"{vendor} Billing", addr), subject, body, dt, [FINANCE],
            RECEIPTS if rng.random() < 0.4 else None)

    def bank():
        dt = when()
        sender = ("Granite Bay Bank", "alerts@granitebay.com")
        r = rng.random()
        if r < 0.5:
            subject = f"Your {MONTHS[(dt.month - 2) % 12]} statement is ready"
            body = (f"Hi Alex,\n\nYour statement for checking account ending in 4821 is ready to view online.\n"
                    f"Closing balance: {money(1800, 9400)}\n\nGranite Bay Bank")
        elif r < 0.8:
            merchant = rng.choice(["TechNest", "SkyBridge Airlines", "Oakridge Outfitters", "Hotel Alfama",
                                   "Whole Harvest Market"])
            subject = "Large purchase alert"
            body = (f"A purchase of {money(250, 1400)} at {merchant} was made with your card ending in 4821 on "
                    f"{_human_date(dt)}.\n\nIf you don't recognize this purchase, call us at +1 800 555 0199.\n\n"
                    f"Granite Bay Bank Fraud Prevention")
        else:
            subject = "Your direct deposit has arrived"
            body = f"Hi Alex,\n\nA direct deposit of {money(3900, 4300)} from BRIGHTWAVE INC PAYROLL posted to your account.\n\nGranite Bay Bank"
        add("bank", sender, subject, body, dt, [FINANCE])

    def shipping():
        store, addr, items = rng.choice(STORES)
        item = rng.choice(items)
        dt = when()
        order = f"{rng.randint(100, 999)}-{rng.randint(1000000, 9999999)}"
        r = rng.random()
        if r < 0.35:
            subject, sender = f"Order confirmation #{order}", (store, addr)
            body = (f"Hi Alex,\n\nThanks for your order! We're getting it ready.\n\nOrder #{order}\n"
                    f"1 x {item}  {money(15, 320)}\nShipping: {rng.choice(['Free', '$5.99', '$8.49'])}\n\n"
                    f"We'll email you when it ships.\n\n{store}")
        elif r < 0.7:
            carrier = rng.choice(CARRIERS)
            track = f"{carrier[0][:2].upper()}{rng.randint(100000000, 999999999)}"
            subject, sender = f"Your order #{order} has shipped", (store, addr)
            body = (f"Good news, Alex! Your {item} is on its way.\n\nCarrier: {carrier[0]}\nTracking number: {track}\n"
                    f"Estimated delivery: {_human_date(dt + timedelta(days=rng.randint(2, 6)))}\n\n{store}")
        elif r < 0.85:
            carrier = rng.choice(CARRIERS)
            subject, sender = f"Out for delivery: order #{order}", carrier
            body = (f"Your package from {store} is out for delivery today and should arrive by 8 pm.\n\n"
                    f"Delivery address: 1840 Folsom St, Apt 5, San Francisco, CA 94103\n\n{carrier[0]}")
        else:
            carrier = rng.choice(CARRIERS)
            subject, sender = f"Delivered: {item}", carrier
            body = (f"Your package was delivered at {rng.randint(9, 19)}:{rng.randint(10, 59)} and left at the front door.\n\n"
                    f"Order #{order} from {store}\n\n{carrier[0]}")
        add("shipping", sender, subject, body, dt, [], RECEIPTS if rng.random() < 0.35 else None)

    def newsletter():
        name, addr, heads = rng.choice(NEWSLETTER_SOURCES)
        dt = when()
        issue = 40 + 23 * [n[0] for n in NEWSLETTER_SOURCES].index(name) + int((dt - datetime(2025, 1, 1)).days / 7)
        picks = rng.sample(heads, 3)
        subject = f"{name}, issue {issue}: {picks[0]}"
        body = (f"{name} | Issue {issue}\n\nIn this issue:\n\n"
                + "\n\n".join(f"{i + 1}. {h}\n{rng.choice(['A short read', 'A longer read', 'A quick take', 'Our pick of the week'])}"
                              f" on {h.lower()}, with links and examples." for i, h in enumerate(picks))
                + f"\n\nYou're receiving this because you subscribed to {name}.\nUnsubscribe | Manage preferences")
        folder = NEWSLETTERS if rng.random() < 0.35 else (TRASH if rng.random() < 0.05 else None)
        add("newsletter", (name, addr), subject, body, dt, [READ_LATER] if rng.random() < 0.15 else [], folder)

    def family():
        name, email, first = rng.choice(FAMILY_MEMBERS)
        subject, text = rng.choice(FAMILY_SUBJECTS)
        text = text.format(day=rng.randint(3, 28))
        closing = rng.choice(["Love,", "Love you,", "xo", "Hugs,"])
        greeting = rng.choice(["Hi sweetie,", "Hi Alex,", "Hey!", "Alex,"])
        add("family", (name, email), subject, f"{greeting}\n\n{text}\n\n{closing}\n{first}", when(),
            [FAMILY, PERSONAL] if rng.random() < 0.5 else [FAMILY])

    def friend():
        c = rng.choice(by_kind["friend"])
        subject, text = rng.choice(FRIEND_SUBJECTS)
        text = text.format(day=rng.randint(3, 28))
        add("friend", (c["name"], c["email"]), subject, f"Hey Alex,\n\n{text}\n\n{c['first']}", when(), [PERSONAL])

    def travel():
        city, code = rng.choice(CITIES)
        dt = when()
        trip = dt + timedelta(days=rng.randint(7, 60))
        r = rng.random()
        if r < 0.45:
            airline, addr, iata = rng.choice(AIRLINES)
            conf = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
            flight = f"{iata} {rng.randint(100, 2999)}"
            subject = f"Your flight to {city} is confirmed ({conf})"
            body = (f"Hi Alex Morgan,\n\nYour booking is confirmed.\n\nConfirmation code: {conf}\n"
                    f"Flight: {flight}, SFO to {code}\nDeparts: {_human_date(trip)} at {rng.randint(6, 21)}:{rng.choice(['05', '20', '45'])}\n"
                    f"Seat: {rng.randint(8, 34)}{rng.choice('ABCDEF')}\nFare: {money(180, 1350)}\n\n"
                    f"Check in online 24 hours before departure.\n\n{airline}")
            sender = (airline, addr)
        elif r < 0.75:
            hotel = rng.choice(HOTELS)
            nights = rng.randint(2, 6)
            subject = f"Booking confirmation: {hotel}, {city}"
            body = (f"Dear Alex,\n\nThank you for booking with {hotel} in {city}.\n\n"
                    f"Check-in: {_human_date(trip)} from 3 pm\nCheck-out: {_human_date(trip + timedelta(days=nights))} by 11 am\n"
                    f"Room: {rng.choice(['Queen room', 'King room, city view', 'Twin room', 'Junior suite'])}\n"
                    f"Total: {money(120 * nights, 260 * nights)}\nReservation number: {rng.randint(10000000, 99999999)}\n\n"
                    f"We look forward to welcoming you.\n{hotel}")
            sender = ("TripNest", "bookings@tripnest.com")
        else:
            subject = f"Your trip to {city}: itinerary"
            body = (f"Hi Alex,\n\nHere is your itinerary for {city}, starting {_human_date(trip)}.\n\n"
                    f"- Flight out: SFO to {code}\n- Hotel: {rng.choice(HOTELS)}\n- Car rental: Zephyr Car Rental, compact\n\n"
                    f"Have a great trip!\nTripNest")
            sender = ("TripNest", "trips@tripnest.com")
        add("travel", sender, subject, body, dt, [PERSONAL] if rng.random() < 0.3 else [],
            TRAVEL if rng.random() < 0.5 else None)

    def security():
        dt = when()
        r = rng.random()
        if r < 0.5:
            subject = "New sign-in to your account"
            body = (f"We noticed a new sign-in to your Brightwave account on {_human_date(dt)}.\n\n"
                    f"Device: {rng.choice(['Chrome on macOS', 'Safari on iPhone', 'Firefox on Windows', 'Mail app on iPad'])}\n"
                    f"Location: {rng.choice(['San Francisco, CA', 'Oakland, CA', 'Lisbon, Portugal', 'Denver, CO'])}\n\n"
                    f"If this was you, you can ignore this message. If not, reset your password right away.\n\nBrightwave IT")
        elif r < 0.75:
            subject = "Your password was changed"
            body = "The password for alex.morgan@brightwave.io was changed. If you didn't make this change, contact IT at it-help@brightwave.io.\n\nBrightwave IT"
        else:
            subject = f"Scheduled maintenance on {(dt + timedelta(days=3)).strftime('%A, %B %-d')}"
            body = "The VPN and internal wiki will be unavailable from 10 pm to midnight for scheduled maintenance.\n\nBrightwave IT"
        add("security", ("Brightwave IT", "it-help@brightwave.io"), subject, body, dt, [])

    def social():
        dt = when()
        c = rng.choice(by_kind["client"] + by_kind["colleague"])
        r = rng.random()
        if r < 0.4:
            subject = f"{c['name']} commented on your post"
            body = f"{c['name']} commented: \"{rng.choice(['Great write-up!', 'Totally agree with this.', 'Would love to chat more about this.', 'Congrats on the launch!'])}\"\n\nView the conversation on Linkwise.\n\nLinkwise"
        elif r < 0.7:
            subject = f"{c['name']} wants to connect"
            body = f"{c['name']} ({c['company'] or 'Independent'}) would like to join your professional network.\n\nAccept | Ignore\n\nLinkwise"
        else:
            co, _ = rng.choice(COMPANIES)
            subject = f"Opportunity: Senior Product Manager at {co}"
            body = (f"Hi Alex,\n\nI'm recruiting for a Senior Product Manager role at {co}. Your background in "
                    f"B2B SaaS looks like a great fit. Open to a quick chat?\n\nBest,\n{c['first']}\nTalent Partner")
        folder = TRASH if rng.random() < 0.08 else None
        add("social", ("Linkwise", "notifications@linkwise.com"), subject, body, dt, [], folder)

    def promo():
        store, addr, items = rng.choice(STORES)
        dt = when()
        subject = rng.choice([f"{rng.choice([15, 20, 25, 30, 40])}% off this weekend only",
                              f"New arrivals: {rng.choice(items)} and more", "Your cart misses you",
                              "Members-only early access", "Last chance: free shipping ends tonight"])
        body = (f"Hi Alex,\n\n{subject}. Shop our latest picks including {', '.join(rng.sample(items, 2))}.\n\n"
                f"Use code {rng.choice(['SAVE20', 'HELLO15', 'WEEKEND', 'THANKS10'])} at checkout.\n\n{store}\nUnsubscribe")
        add("promo", (store, addr), subject, body, dt, [], TRASH if rng.random() < 0.25 else None)

    makers = [(meeting, 260), (question, 300), (invite, 160), (client, 330), (invoice, 170), (bank, 90),
              (shipping, 190), (newsletter, 260), (family, 120), (friend, 80), (travel, 90), (security, 60),
              (social, 90), (promo, 110)]
    for fn, count in makers:
        for _ in range(count):
            fn()

    # ---- sent mail: replies to people, plus a few fresh messages --------------------------------
    people_msgs = [m for m in msgs if m["kind"] in ("work", "client", "family", "friend")]
    reply_lines = [
        "Thanks, that works for me.", "Sounds good, I'll take a look today.", "Great, see you then!",
        "Thanks for the update. Let's discuss in our next sync.", "Sure, I'll send it over by end of day.",
        "Good catch. I've updated the doc.", "Let me check with Dana and get back to you.",
        "Happy to help. Can we find 30 minutes on Thursday?", "Love it, thank you!",
        "I can't make it this time, but count me in for the next one.", "Confirmed. I've added it to my calendar.",
    ]
    for m in rng.sample(people_msgs, 240):
        dt = min(m["dt"] + timedelta(minutes=rng.randint(20, 60 * 30)), SEED_NOW - timedelta(minutes=5))
        first = m["from_name"].split()[0] if m["kind"] != "family" else m["body"].rsplit("\n", 1)[-1]
        subject = m["subject"] if m["subject"].startswith("Re: ") else f"Re: {m['subject']}"
        quoted = "\n".join("> " + line for line in m["body"].splitlines())
        body = (f"Hi {first},\n\n{rng.choice(reply_lines)}\n\n-- \n{SIGNATURE}\n\n"
                f"On {m['dt'].strftime('%a, %b %-d, %Y at %H:%M')}, {m['from_name']} <{m['from_email']}> wrote:\n{quoted}")
        msgs.append(dict(kind="sent", from_name=ME_NAME, from_email=ME_EMAIL, to_email=m["from_email"], cc_email="",
                         subject=subject, body=body, dt=dt, labels=set(l for l in m["labels"] if l in (WORK, CLIENTS, FAMILY)),
                         folder=SENT, reply_to=m, read=1))
    fresh = [
        ("Draft agenda for {t} review", "Hi {f},\n\nHere's a draft agenda for the {t} review. Let me know if I missed anything:\n\n1. Where we are\n2. Open questions\n3. Decisions needed\n4. Next steps"),
        ("{T}: status update", "Hi {f},\n\nQuick status update on {t}: we're on track for the end of the month. The main risk is the dependency on the data team."),
        ("Coffee next week?", "Hi {f},\n\nWould you be up for a coffee next week? It's been a while."),
        ("Intro: {f} <> Dana", "Hi {f},\n\nI'd love to introduce you to Dana Kim, who leads our product team. I think you two should talk about {t}."),
    ]
    for _ in range(70):
        c = rng.choice(by_kind["colleague"] + by_kind["client"] + by_kind["friend"])
        topic = rng.choice(TOPICS)
        subj, text = rng.choice(fresh)
        fmt = dict(f=c["first"], t=topic, T=topic[0].upper() + topic[1:])
        msgs.append(dict(kind="sent", from_name=ME_NAME, from_email=ME_EMAIL, to_email=c["email"], cc_email="",
                         subject=subj.format(**fmt), body=text.format(**fmt) + f"\n\nThanks,\nAlex\n\n-- \n{SIGNATURE}",
                         dt=when(), labels=set(), folder=SENT, reply_to=None, read=1))

    # ---- drafts ----------------------------------------------------------------------------------
    draft_specs = [
        ("dana.kim@brightwave.io", "", "Q4 planning: my priorities", "Hi Dana,\n\nAhead of Q4 planning, here are the three things I'd like us to focus on:\n\n1. Billing migration\n2. "),
        ("", "", "Thank-you note for the offsite", "Hi everyone,\n\nThank you all for a fantastic offsite. "),
        ("linda.morgan@gmail.com", "jessmorgan@icloud.com", "Christmas plans", "Hi Mom,\n\nI'm planning to fly in on the 22nd and "),
        (by_kind["client"][3]["email"], "", "Re: Contract renewal", "Hi,\n\nThanks for sending the renewal terms. Before we sign I'd like to clarify "),
        ("", "", "Ideas for the notifications revamp", "- digest mode\n- per-channel mute\n- quiet hours\n"),
        (by_kind["colleague"][5]["email"], "", "Feedback on your spec", "Hi,\n\nI read through the spec. Overall it's great; a few comments:\n\n"),
        ("", "", "Packing list for Lisbon", "passport, adapters, rain jacket, "),
        (by_kind["friend"][2]["email"], "", "Re: Book club: next pick", "I vote for Piranesi!"),
    ]
    for to, cc, subj, body in draft_specs:
        msgs.append(dict(kind="draft", from_name=ME_NAME, from_email=ME_EMAIL, to_email=to, cc_email=cc,
                         subject=subj, body=body, dt=SEED_NOW - timedelta(days=rng.randint(0, 20), minutes=rng.randint(0, 600)),
                         labels=set(), folder=DRAFTS, reply_to=None, read=1))

    # ---- order chronologically, choose folders and flags, insert ------------------------------
    msgs.sort(key=lambda m: (m["dt"], m["subject"]))
    for i, m in enumerate(msgs, start=1):
        m["id"] = i
    rows, label_rows = [], []
    for m in msgs:
        age = (SEED_NOW - m["dt"]).days
        folder = m["folder"]
        if folder is None:
            folder = ARCHIVE if age > 45 and rng.random() < 0.45 else INBOX
        if "read" in m:
            read = m["read"]
        else:
            read = 1 if (age > 10 and rng.random() < 0.97) or (age <= 10 and rng.random() < 0.45) else 0
        star_p = 0.12 if m["kind"] in ("family", "client") or URGENT in m["labels"] else 0.03
        starred = 1 if folder != TRASH and rng.random() < star_p else 0
        rows.append((m["id"], folder, m["from_name"], m["from_email"], m["to_email"], m["cc_email"], m["subject"],
                     m["body"], _fmt(m["dt"]), read, starred, m["reply_to"]["id"] if m["reply_to"] else None))
        label_rows.extend((m["id"], lid) for lid in sorted(m["labels"]))
    conn.executemany(
        "INSERT INTO messages (id, folder_id, from_name, from_email, to_email, cc_email, subject, body, sent_at, "
        "is_read, is_starred, in_reply_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.executemany("INSERT INTO message_labels (message_id, label_id) VALUES (?, ?)", label_rows)


if __name__ == "__main__":  # python seed.py OUT.db: build a DB by hand
    import sys
    from pathlib import Path

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "mail.db")
    out.unlink(missing_ok=True)
    c = sqlite3.connect(out)
    c.executescript((Path(__file__).parent / "schema.sql").read_text())
    seed(c)
    c.commit()
    c.close()
    print(f"seeded {out}")
