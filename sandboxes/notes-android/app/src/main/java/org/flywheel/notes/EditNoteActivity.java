package org.flywheel.notes;

import android.app.Activity;
import android.content.ContentValues;
import android.database.Cursor;
import android.os.Bundle;
import android.view.View;
import android.widget.CheckBox;
import android.widget.EditText;

import java.time.LocalDate;

/** Creates a note (no extra) or edits one (EXTRA_NOTE_ID). */
public class EditNoteActivity extends Activity {
    private NotesDbHelper helper;
    private long noteId;
    private EditText title;
    private EditText body;
    private EditText folder;
    private CheckBox pinned;

    @Override
    protected void onCreate(Bundle savedInstanceState) {
        super.onCreate(savedInstanceState);
        setContentView(R.layout.activity_edit_note);
        helper = new NotesDbHelper(this);
        noteId = getIntent().getLongExtra(NoteActivity.EXTRA_NOTE_ID, -1);
        title = findViewById(R.id.title);
        body = findViewById(R.id.body);
        folder = findViewById(R.id.folder);
        pinned = findViewById(R.id.pinned);
        if (noteId >= 0) {
            try (Cursor c = helper.getReadableDatabase().rawQuery(
                    "SELECT title, body, folder, pinned FROM notes WHERE id = ?",
                    new String[] {String.valueOf(noteId)})) {
                if (c.moveToFirst()) {
                    title.setText(c.getString(0));
                    body.setText(c.getString(1));
                    folder.setText(c.getString(2));
                    pinned.setChecked(c.getInt(3) == 1);
                }
            }
        }
    }

    /** The "Save note" button: inserts or updates, then returns to the previous screen. */
    public void saveNote(View view) {
        String newTitle = title.getText().toString().trim();
        if (newTitle.isEmpty()) {
            title.setError("A note needs a title");
            return;
        }
        ContentValues values = new ContentValues();
        values.put("title", newTitle);
        values.put("body", body.getText().toString().trim());
        String newFolder = folder.getText().toString().trim();
        values.put("folder", newFolder.isEmpty() ? "Personal" : newFolder);
        values.put("pinned", pinned.isChecked() ? 1 : 0);
        if (noteId < 0) {
            values.put("created_on", LocalDate.now().toString());
            helper.getWritableDatabase().insert("notes", null, values);
        } else {
            helper.getWritableDatabase().update("notes", values, "id = ?", new String[] {String.valueOf(noteId)});
        }
        finish();
    }
}
