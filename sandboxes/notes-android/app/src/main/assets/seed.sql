-- The notes a fresh install starts with (run by NotesDbHelper.onCreate after schema.sql).
INSERT INTO notes (id, title, body, folder, pinned, created_on) VALUES
    (1, 'Groceries', 'Oat milk, lemons, rye bread, basil.', 'Personal', 1, '2026-10-02'),
    (2, 'Sprint retro', 'Keep: pairing on reviews. Change: shorter stand-ups.', 'Work', 0, '2026-10-05'),
    (3, 'Lisbon trip', 'Book the tram 28 tickets and the Sintra day trip.', 'Travel', 0, '2026-10-09'),
    (4, 'Birthday gift ideas', 'Pottery class, a good chef''s knife, concert tickets.', 'Personal', 0, '2026-10-14'),
    (5, 'Quarterly goals', 'Ship offline mode, cut cold start below one second.', 'Work', 1, '2026-10-20'),
    (6, 'Reading list', 'The Overstory, Piranesi, A Psalm for the Wild-Built.', 'Ideas', 0, '2026-10-27'),
    (7, 'Plumber visit', 'Thursday 9:00, kitchen sink leak, call before arriving.', 'Personal', 0, '2026-11-03'),
    (8, 'Garden plan', 'Move the rosemary, plant garlic before the frost.', 'Ideas', 0, '2026-11-11');
