-- Schema of the mail sandbox: a single-user webmail client. Every entity table has `id INTEGER PRIMARY KEY`.
-- Dates are stored as text 'YYYY-MM-DD HH:MM' (messages) or 'YYYY-MM-DD' (vacation reply).

-- Single-row settings of the signed-in user (id 1): account, signature, paging.
CREATE TABLE settings (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    display_name TEXT NOT NULL,
    email TEXT NOT NULL,
    signature TEXT NOT NULL DEFAULT '',
    messages_per_page INTEGER NOT NULL DEFAULT 50 CHECK (messages_per_page BETWEEN 10 AND 200)
);

-- Single-row vacation (out-of-office) auto-reply.
CREATE TABLE vacation_reply (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    enabled INTEGER NOT NULL DEFAULT 0,   -- 1 = on
    subject TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    start_date TEXT,                      -- 'YYYY-MM-DD' or NULL
    end_date TEXT
);

-- Folders. The five system folders have fixed ids: 1 Inbox, 2 Sent, 3 Drafts, 4 Archive, 5 Trash
-- (is_system = 1; they cannot be renamed or deleted). User folders get ids above 5.
CREATE TABLE folders (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    is_system INTEGER NOT NULL DEFAULT 0,
    position INTEGER NOT NULL DEFAULT 100
);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    folder_id INTEGER NOT NULL REFERENCES folders(id),
    from_name TEXT NOT NULL,
    from_email TEXT NOT NULL,
    to_email TEXT NOT NULL DEFAULT '',    -- comma-separated addresses
    cc_email TEXT NOT NULL DEFAULT '',    -- comma-separated addresses
    subject TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    sent_at TEXT NOT NULL,                -- 'YYYY-MM-DD HH:MM'
    is_read INTEGER NOT NULL DEFAULT 0,
    is_starred INTEGER NOT NULL DEFAULT 0,
    in_reply_to INTEGER REFERENCES messages(id) ON DELETE SET NULL
);
CREATE INDEX messages_folder_date ON messages(folder_id, sent_at);
CREATE INDEX messages_date ON messages(sent_at);
CREATE INDEX messages_from ON messages(from_email);

CREATE TABLE labels (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    colour TEXT NOT NULL DEFAULT 'grey'   -- one of: red orange yellow green teal blue purple pink grey
);

CREATE TABLE message_labels (
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    label_id INTEGER NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
    PRIMARY KEY (message_id, label_id)
);
CREATE INDEX message_labels_label ON message_labels(label_id);

CREATE TABLE contacts (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL,
    phone TEXT NOT NULL DEFAULT '',
    company TEXT NOT NULL DEFAULT '',
    notes TEXT NOT NULL DEFAULT ''
);
CREATE INDEX contacts_name ON contacts(name);
