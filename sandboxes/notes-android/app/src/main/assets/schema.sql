-- Run by NotesDbHelper.onCreate on first launch.
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    folder TEXT NOT NULL DEFAULT 'Personal',
    pinned INTEGER NOT NULL DEFAULT 0,
    created_on TEXT NOT NULL
);
