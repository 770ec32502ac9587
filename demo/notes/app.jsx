// Silt Notes: a small offline-first notes app on siltdb's React binding
// (issue 39, item 4). Every tab of the app shares one database through
// connect(); each view is a live query, so a note added or edited in one
// tab shows in every other at once, and the data is on disk (OPFS) for the
// next visit. Bundled by demo/notes/build.mjs (esbuild and siltdb/esbuild).
//
// Keys (utf8) and values (json):
//   sublevel 'note':  <id> -> { id, title, body, updated }   (ids sort by creation time)
//   sublevel 'title': <lowercase title>\0<id> -> { id, title }  (the search index)
// A note and its index entry are written in one transaction.
import { useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { connect } from 'siltdb';
import { useGet, useLive } from 'siltdb/react';

const db = await connect('silt-notes', { keyEncoding: 'utf8', valueEncoding: 'json' });
const notes = db.sublevel('note');
const titles = db.sublevel('title');

const titleKey = (note) => `${note.title.toLowerCase()}\u0000${note.id}`;

/**
 * This tab's writes, one after the other (each keystroke's save waits for
 * the one before: they never conflict). Resolves to whether it was written;
 * one that failed says so on the page, and the next ones go on.
 */
let queue = Promise.resolve(true);
function queued(write) {
  queue = queue.then(write).then(
    () => true,
    (e) => {
      document.getElementById('error').textContent = `Not saved: ${e.message}`;
      return false;
    },
  );
  return queue;
}

/**
 * Saves `change` to note `id` with its index entry, in a transaction: the
 * title it replaces is the one in the database, whatever this tab last saw,
 * so that another tab editing the same note leaves no stale index entry (a
 * conflict with it is retried by `transaction`). A note that is not there
 * (deleted meanwhile by another tab) is not made again, unless `create`.
 */
function save(id, change, create = false) {
  return queued(() => saveNow(id, change, create));
}

async function saveNow(id, change, create) {
  await db.transaction(async (tx) => {
    const n = tx.in(notes);
    const t = tx.in(titles);
    const before = await n.getForUpdate(id);
    if (before === undefined && !create) return;
    const note = { id, title: '', body: '', ...before, ...change, updated: Date.now() };
    if (before !== undefined && before.title !== note.title) t.delete(titleKey(before));
    n.put(id, note);
    t.put(titleKey(note), { id, title: note.title });
  });
}

/** Deletes note `id` and its index entry, in a transaction. */
function remove(id) {
  return queued(() => removeNow(id));
}

async function removeNow(id) {
  await db.transaction(async (tx) => {
    const n = tx.in(notes);
    const before = await n.getForUpdate(id);
    if (before === undefined) return;
    n.delete(id);
    tx.in(titles).delete(titleKey(before));
  });
}

function NewNote({ onCreated }) {
  const [title, setTitle] = useState('');
  return (
    <form
      id="new-note"
      onSubmit={async (e) => {
        e.preventDefault();
        const t = title.trim();
        if (t === '') return;
        // Cleared now: what is typed while it saves is the next note's.
        setTitle('');
        const id = `${Date.now().toString(36).padStart(9, '0')}-${Math.random().toString(36).slice(2, 6)}`;
        if (await save(id, { title: t }, true)) onCreated(id);
        // Not saved (the page says why): the title comes back, unless something else was typed since.
        else setTitle((now) => (now === '' ? t : now));
      }}
    >
      <input id="new-title" placeholder="A new note's title" value={title} onChange={(e) => setTitle(e.target.value)} />
      <button type="submit">Add</button>
    </form>
  );
}

/** The newest notes first: a live query of the notes' range, reversed. */
function Recent({ selected, onSelect }) {
  const recent = useLive(notes, { reverse: true, limit: 50 });
  if (recent === undefined) return <p>Loading…</p>;
  if (recent.entries.length === 0) return <p id="empty">No notes yet.</p>;
  return (
    <ul id="recent">
      {recent.entries.map(([id, note]) => (
        <li key={id} className={id === selected ? 'selected' : undefined}>
          <button type="button" onClick={() => onSelect(id)}>
            {note.title}
          </button>
        </li>
      ))}
    </ul>
  );
}

/** Titles starting with the search text: a live query over a range of the index. */
function Search({ onSelect }) {
  const [q, setQ] = useState('');
  const from = q.toLowerCase();
  // (U+10FFFF: after every character a title can have next, in the keys' UTF-8 order.)
  const found = useLive(titles, { gte: from, lt: `${from}\u{10FFFF}`, limit: 20 });
  return (
    <section>
      <input id="search" placeholder="Search titles" value={q} onChange={(e) => setQ(e.target.value)} />
      <ul id="found">
        {q !== '' &&
          found?.entries.map(([k, hit]) => (
            <li key={k}>
              <button type="button" onClick={() => onSelect(hit.id)}>
                {hit.title}
              </button>
            </li>
          ))}
      </ul>
    </section>
  );
}

/**
 * A field of the note: what is typed is saved at each keystroke; a value
 * saved since (by another tab, or this one's last keystrokes landing) shows
 * here unless this field is being typed in, so that the caret never jumps.
 */
function Field({ as: Tag, id, value, onSave }) {
  const [draft, setDraft] = useState(value);
  const [editing, setEditing] = useState(false);
  // The value last taken: a new one is taken when not typing (not merely
  // on blur, while this tab's last saves may still be on their way).
  const taken = useRef(value);
  if (!editing && value !== taken.current) {
    taken.current = value;
    setDraft(value);
  }
  return (
    <Tag
      id={id}
      value={draft}
      onFocus={() => setEditing(true)}
      onBlur={() => setEditing(false)}
      onChange={(e) => {
        setDraft(e.target.value);
        onSave(e.target.value);
      }}
    />
  );
}

/** One note, as it is now in the database: edits from any tab show here. */
function Editor({ id, onDeleted }) {
  const got = useGet(notes, id);
  if (got === undefined) return <p>Loading…</p>;
  const note = got.value;
  if (note === undefined) return <p id="gone">This note was deleted.</p>;
  return (
    <article id="editor">
      <Field as="input" id="title" value={note.title} onSave={(title) => void save(note.id, { title })} />
      <Field as="textarea" id="body" value={note.body} onSave={(body) => void save(note.id, { body })} />
      <button
        id="delete"
        type="button"
        onClick={async () => {
          await remove(note.id);
          onDeleted();
        }}
      >
        Delete
      </button>
    </article>
  );
}

function App() {
  const [selected, setSelected] = useState(undefined);
  return (
    <main>
      <header>
        <h1>Silt Notes</h1>
        <p>
          Notes kept in this browser (OPFS), shared by every tab of this page: open it twice and edit in either.{' '}
          <span id="role">{db.isLeader ? 'This tab leads.' : 'Another tab leads.'}</span>
        </p>
        <p id="error" role="alert" />
      </header>
      <NewNote onCreated={setSelected} />
      <div className="columns">
        <nav>
          <Search onSelect={setSelected} />
          <Recent selected={selected} onSelect={setSelected} />
        </nav>
        {selected === undefined ? <p>Pick a note.</p> : <Editor key={selected} id={selected} onDeleted={() => setSelected(undefined)} />}
      </div>
    </main>
  );
}

document.body.dataset.state = 'ready';
createRoot(document.getElementById('app')).render(<App />);
