package org.flywheel.notes;

import android.app.Activity;
import android.content.Intent;
import android.database.Cursor;
import android.os.Bundle;
import android.view.LayoutInflater;
import android.view.View;
import android.view.ViewGroup;
import android.widget.TextView;

import androidx.recyclerview.widget.LinearLayoutManager;
import androidx.recyclerview.widget.RecyclerView;

import java.util.ArrayList;
import java.util.List;

/** The launcher screen: every note, newest first. */
public class NotesListActivity extends Activity {
    private NotesDbHelper helper;
    private RecyclerView list;

    @Override
    protected void onCreate(Bundle savedInstanceState) {
        super.onCreate(savedInstanceState);
        setContentView(R.layout.activity_notes_list);
        helper = new NotesDbHelper(this);
        list = findViewById(R.id.notes);
        list.setLayoutManager(new LinearLayoutManager(this));
    }

    @Override
    protected void onResume() {
        super.onResume();
        List<long[]> ids = new ArrayList<>();
        List<String[]> rows = new ArrayList<>();
        try (Cursor c = helper.getReadableDatabase().rawQuery(
                "SELECT id, title, folder FROM notes ORDER BY id DESC", null)) {
            while (c.moveToNext()) {
                ids.add(new long[] {c.getLong(0)});
                rows.add(new String[] {c.getString(1), c.getString(2)});
            }
        }
        list.setAdapter(new NotesAdapter(ids, rows));
    }

    /** The "New note" button (android:onClick in activity_notes_list.xml). */
    public void newNote(View view) {
        startActivity(new Intent(this, EditNoteActivity.class));
    }

    /** A tap on a row of the list. */
    void openNote(long id) {
        Intent intent = new Intent(this, NoteActivity.class);
        intent.putExtra(NoteActivity.EXTRA_NOTE_ID, id);
        startActivity(intent);
    }

    private class NotesAdapter extends RecyclerView.Adapter<NotesAdapter.Row> {
        private final List<long[]> ids;
        private final List<String[]> rows;

        NotesAdapter(List<long[]> ids, List<String[]> rows) {
            this.ids = ids;
            this.rows = rows;
        }

        class Row extends RecyclerView.ViewHolder {
            final TextView title;
            final TextView folder;

            Row(View item) {
                super(item);
                title = item.findViewById(R.id.title);
                folder = item.findViewById(R.id.folder);
            }
        }

        @Override
        public Row onCreateViewHolder(ViewGroup parent, int viewType) {
            return new Row(LayoutInflater.from(parent.getContext()).inflate(R.layout.item_note, parent, false));
        }

        @Override
        public void onBindViewHolder(Row row, int position) {
            row.title.setText(rows.get(position)[0]);
            row.folder.setText(rows.get(position)[1]);
            long id = ids.get(position)[0];
            row.itemView.setOnClickListener(v -> openNote(id));
        }

        @Override
        public int getItemCount() {
            return rows.size();
        }
    }
}
