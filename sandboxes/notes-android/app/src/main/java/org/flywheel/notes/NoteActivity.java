package org.flywheel.notes;

import android.app.Activity;
import android.content.Intent;
import android.database.Cursor;
import android.os.Bundle;
import android.view.View;
import android.widget.TextView;

/** One note: title, folder, date and text; Edit and Delete. */
public class NoteActivity extends Activity {
    static final String EXTRA_NOTE_ID = "note_id";
    private NotesDbHelper helper;
    private long noteId;

    @Override
    protected void onCreate(Bundle savedInstanceState) {
        super.onCreate(savedInstanceState);
        setContentView(R.layout.activity_note);
        helper = new NotesDbHelper(this);
        noteId = getIntent().getLongExtra(EXTRA_NOTE_ID, -1);
    }

    @Override
    protected void onResume() {
        super.onResume();
        try (Cursor c = helper.getReadableDatabase().rawQuery(
                "SELECT title, folder, created_on, body FROM notes WHERE id = ?",
                new String[] {String.valueOf(noteId)})) {
            if (!c.moveToFirst()) {
                finish();  // deleted meanwhile
                return;
            }
            ((TextView) findViewById(R.id.title)).setText(c.getString(0));
            ((TextView) findViewById(R.id.folder)).setText(c.getString(1));
            ((TextView) findViewById(R.id.created_on)).setText(c.getString(2));
            ((TextView) findViewById(R.id.body)).setText(c.getString(3));
        }
    }

    /** The "Edit note" button. */
    public void editNote(View view) {
        Intent intent = new Intent(this, EditNoteActivity.class);
        intent.putExtra(EXTRA_NOTE_ID, noteId);
        startActivity(intent);
    }

    /** The "Delete note" button: removes the note and goes back to the list. */
    public void deleteNote(View view) {
        helper.getWritableDatabase().delete("notes", "id = ?", new String[] {String.valueOf(noteId)});
        finish();
    }
}
