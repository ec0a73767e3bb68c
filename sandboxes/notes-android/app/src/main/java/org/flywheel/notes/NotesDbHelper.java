package org.flywheel.notes;

import android.content.Context;
import android.database.sqlite.SQLiteDatabase;
import android.database.sqlite.SQLiteOpenHelper;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/** Opens databases/notes.db; on first launch runs assets/schema.sql and assets/seed.sql. */
public class NotesDbHelper extends SQLiteOpenHelper {
    static final String DB_NAME = "notes.db";
    private final Context context;

    public NotesDbHelper(Context context) {
        super(context, DB_NAME, null, 1);
        this.context = context;
    }

    @Override
    public void onCreate(SQLiteDatabase db) {
        runScript(db, "schema.sql");
        runScript(db, "seed.sql");
    }

    @Override
    public void onUpgrade(SQLiteDatabase db, int oldVersion, int newVersion) {
        // version 1 only
    }

    private void runScript(SQLiteDatabase db, String asset) {
        String sql;
        try (InputStream in = context.getAssets().open(asset)) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            for (int n; (n = in.read(buffer)) != -1; ) {
                bytes.write(buffer, 0, n);
            }
            sql = new String(bytes.toByteArray(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("missing asset " + asset, e);
        }
        for (String statement : sql.replaceAll("--[^\n]*", "").split(";")) {
            if (!statement.trim().isEmpty()) {
                db.execSQL(statement);
            }
        }
    }
}
