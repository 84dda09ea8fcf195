/* Compiled passes over the timeline's columns, each one sequential pass: nest host events on
 * their tracks, cut their own pieces, sum their own time (normalize.py), merge intervals that
 * come sorted into runs (analyzers/attribution.py), number the combinations of columns that
 * rules run once for (arrays.combination_codes, arrays.column_combinations), and take the median
 * of each place over the steps (analyzers/pauses.py), and carry values and states down the nesting
 * tree (arrays.copy_down, arrays.states_down). Where the extension is not built, array
 * passes give the same results (tests/test_nesting_paths.py, tests/test_pauses.py).
 *
 * nest: parents and depths (normalize.nest_tracks).
 *
 * Rows come sorted by (ts, -dur), the tracks interleaved. Each track keeps a stack of the events
 * still open on it; the stack under an event is exactly its chain of parents, so a track's stack
 * is held as its top row alone and popping walks up parent[]. For each row of a host track, in
 * order: the events that ended at or before its start are popped; then the events that end
 * before it does (it starts inside them and outlives them: a partial overlap) are popped and
 * counted, unless either of the two is "loose" (a Python frame, whose edges a separate tracer
 * records); what is left on top is its parent, and its depth is one more than the parent's. A
 * track's top only moves down past a popped row, never back to it, so the pass is linear.
 *
 * This is the stack walk normalize._nest_track_walk does in Python for stretches with a partial
 * overlap; where events nest properly it gives what normalize's level-by-level array passes give
 * (tests/test_nesting_paths.py checks both on random tracks and on every sample and shared trace).
 *
 * nest(track, ts, end, host, loose, n_tracks, parent_out, depth_out) -> overlaps
 *   track       int64[n]: a track code per row, 0 <= code < n_tracks on host rows
 *   ts, end     int64[n]: start and end of each row
 *   host, loose uint8[n]: whether a row is on a host track; whether it is loose (n bytes; all 0
 *               when no row is)
 *   parent_out, depth_out int64[n]: written for every row (-1, -1 off the host tracks)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int same_length(Py_buffer *buffers[], int count, Py_ssize_t rows, const Py_ssize_t item[]) {
    for (int i = 0; i < count; i++)
        if (buffers[i]->len != rows * item[i]) return 0;
    return 1;
}

/* Every call's end: the buffers it held released; ``ok``, or 0 with an error set (the one already
 * raised, else that the call's columns do not fit). */
static int released(Py_buffer *held[], int count, int ok, const char *call) {
    for (int i = 0; i < count; i++) PyBuffer_Release(held[i]);
    if (!ok && !PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s: columns of different lengths or types", call);
    return ok;
}

static PyObject *nest(PyObject *self, PyObject *args) {
    Py_buffer track, ts, end, host, loose, parent, depth;
    Py_ssize_t n_tracks;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nw*w*", &track, &ts, &end, &host, &loose, &n_tracks, &parent, &depth))
        return NULL;
    Py_buffer *held[] = {&track, &ts, &end, &host, &loose, &parent, &depth};
    const Py_ssize_t item[] = {8, 8, 8, 1, 1, 8, 8};
    Py_ssize_t n = ts.len / 8;
    long long overlaps = 0;
    int ok = n_tracks >= 0 && same_length(held, 7, n, item);
    int64_t *top = NULL;
    if (ok) {
        top = malloc(sizeof(int64_t) * (size_t)(n_tracks > 0 ? n_tracks : 1));
        ok = top != NULL;
        if (!ok) PyErr_NoMemory();
    }
    if (ok) {
        const int64_t *tr = track.buf, *start = ts.buf, *stop = end.buf;
        const uint8_t *is_host = host.buf, *is_loose = loose.buf;
        int64_t *up = parent.buf, *level = depth.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t t = 0; t < n_tracks; t++) top[t] = -1;
        for (Py_ssize_t row = 0; row < n; row++) {
            if (!is_host[row] || tr[row] < 0 || tr[row] >= n_tracks) {
                up[row] = -1;
                level[row] = -1;
                continue;
            }
            int64_t open = top[tr[row]];
            while (open >= 0 && stop[open] <= start[row]) open = up[open];
            while (open >= 0 && stop[open] < stop[row]) {
                overlaps += !(is_loose[open] || is_loose[row]);
                open = up[open];
            }
            up[row] = open;
            level[row] = open >= 0 ? level[open] + 1 : 0;
            top[tr[row]] = row;
        }
        Py_END_ALLOW_THREADS
        free(top);
    }
    if (!released(held, 7, ok, "nest")) return NULL;
    return PyLong_FromLongLong(overlaps);
}

/* A row's value in a column of 1, 2, 4 or 8-byte signed integers. */
static int64_t value_at(const void *values, Py_ssize_t width, Py_ssize_t row) {
    switch (width) {
        case 1: return ((const int8_t *)values)[row];
        case 2: return ((const int16_t *)values)[row];
        case 4: return ((const int32_t *)values)[row];
        default: return ((const int64_t *)values)[row];
    }
}

/* The own pieces of selected rows (normalize.own_pieces): the gaps between a row's direct host
 * children, the tail after its last child, and a childless row whole — each track's pieces in
 * time order.
 *
 * One sweep over the rows in table order, with each track's stack of open rows held as in nest()
 * (its top row; the parent column below it). cursor[p] is how far p's children seen so far reach
 * (the running maximum of their ends; children of one event may overlap slightly), ts[p] before
 * the first. When a row arrives, the rows on its track's stack above its parent are over: each
 * gives its tail [cursor, end), innermost first; then its parent gives the gap [cursor, start)
 * before it. Every piece is written once it can no longer grow, so where a track's events nest,
 * its pieces come out in time order: those written at a row's arrival end by its start, those
 * written later start after it. (Where they do not nest, the pieces are the same, the order
 * perhaps not; attribution.merged_runs checks the order it is given.) The rows still open at the
 * end give their tails last, track by track.
 *
 * own_pieces(ts, dur, parent, track, host, selected, n_tracks, starts, ends, rows) -> pieces
 *   ts, dur, parent int64[n]; track: integer codes of 1, 2, 4 or 8 bytes a row, -1 for none (a
 *   row's track is its code + 1, 0 <= track < n_tracks on host rows: no track is a track of its
 *   own); host, selected uint8[n] (a row on a host track; a row whose pieces are wanted)
 *   starts, ends int64[m], rows int32[m] or int64[m]: the first m pieces written; the count of
 *   all of them returned (with m = 0, only counted)
 */
typedef struct {
    const int64_t *ts, *dur;
    const uint8_t *selected;
    int64_t *cursor;
    int64_t *starts, *ends;
    void *rows;
    int wide;
    Py_ssize_t room, count;  /* pieces there is room for (0: only counted); pieces so far */
} Pieces;

/* A row's end, ts + dur: within int64 for every table the readers build (times below 2^62 ns);
 * held at the int64 bounds beyond them, never overflowing. */
static int64_t end_of(const Pieces *out, int64_t row) {
    int64_t ts = out->ts[row], dur = out->dur[row];
    if (dur > 0 && ts > INT64_MAX - dur) return INT64_MAX;
    if (dur < 0 && ts < INT64_MIN - dur) return INT64_MIN;
    return ts + dur;
}

static void piece(Pieces *out, int64_t row, int64_t from, int64_t to) {
    if (to <= from) return;
    if (out->count < out->room) {
        out->starts[out->count] = from;
        out->ends[out->count] = to;
        if (out->wide) ((int64_t *)out->rows)[out->count] = row;
        else ((int32_t *)out->rows)[out->count] = (int32_t)row;
    }
    out->count++;
}

static void tail(Pieces *out, int64_t row) {
    if (out->selected[row]) piece(out, row, out->cursor[row], end_of(out, row));
}

static void sweep(Py_ssize_t n, const int64_t *parent, const void *track, Py_ssize_t track_width,
                  const uint8_t *host, int64_t *top, Py_ssize_t n_tracks, Pieces *out) {
    for (Py_ssize_t t = 0; t < n_tracks; t++) top[t] = -1;
    for (Py_ssize_t row = 0; row < n; row++) {
        int64_t t = value_at(track, track_width, row) + 1, up = parent[row];
        if (!host[row] || t < 0 || t >= n_tracks) {  /* off the host tracks: no children, its whole span */
            if (out->selected[row]) piece(out, row, out->ts[row], end_of(out, row));
            continue;
        }
        while (top[t] >= 0 && top[t] != up) {  /* over: every row above the parent */
            tail(out, top[t]);
            top[t] = parent[top[t]];
        }
        if (up >= 0 && up < n && out->selected[up]) {
            piece(out, up, out->cursor[up], out->ts[row]);  /* the gap before this child */
            int64_t end = end_of(out, row);
            if (end > out->cursor[up]) out->cursor[up] = end;
        }
        out->cursor[row] = out->ts[row];
        top[t] = row;
    }
    for (Py_ssize_t t = 0; t < n_tracks; t++)
        for (int64_t open = top[t]; open >= 0; open = parent[open]) tail(out, open);
}

static PyObject *own_pieces(PyObject *self, PyObject *args) {
    Py_buffer ts, dur, parent, host, selected, track, starts, ends, rows;
    Py_ssize_t n_tracks;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*nw*w*w*", &ts, &dur, &parent, &track, &host, &selected, &n_tracks,
                          &starts, &ends, &rows))
        return NULL;
    Py_buffer *held[] = {&ts, &dur, &parent, &host, &selected, &track, &starts, &ends, &rows};
    Py_ssize_t n = ts.len / 8, m = starts.len / 8, track_width = n ? track.len / n : 0;
    const Py_ssize_t item[] = {8, 8, 8, 1, 1};
    int ok = n_tracks >= 0 && same_length(held, 5, n, item) && ends.len == m * 8 &&
             (rows.len == m * 4 || rows.len == m * 8) && track.len == n * track_width &&
             (track_width == 1 || track_width == 2 || track_width == 4 || track_width == 8 || n == 0);
    if (ok) {  /* the sweep follows parent links: each must be a row or none (-1) */
        const int64_t *up = parent.buf;
        for (Py_ssize_t row = 0; row < n && ok; row++) ok = up[row] >= -1 && up[row] < n;
        if (!ok) PyErr_SetString(PyExc_ValueError, "own_pieces: a parent is no row of the table");
    }
    Pieces out = {ts.buf, dur.buf, selected.buf, NULL, starts.buf, ends.buf, rows.buf, rows.len == m * 8, m, 0};
    int64_t *top = NULL;
    if (ok) {
        out.cursor = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
        top = malloc(sizeof(int64_t) * (size_t)(n_tracks > 0 ? n_tracks : 1));
        ok = out.cursor && top;
        if (!ok) PyErr_NoMemory();
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        sweep(n, parent.buf, track.buf, track_width, host.buf, top, n_tracks, &out);
        Py_END_ALLOW_THREADS
    }
    free(out.cursor);
    free(top);
    if (!released(held, 9, ok, "own_pieces")) return NULL;
    return PyLong_FromSsize_t(out.count);
}

/* Each row's own time (normalize.self_time): its duration less its children's, at least 0.
 *
 * own_time(dur, parent, children, own_out)
 *   dur, parent int64[n]; children uint8[n] (the rows that count as children); own_out int64[n]
 */
static PyObject *own_time(PyObject *self, PyObject *args) {
    Py_buffer dur, parent, children, own;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &dur, &parent, &children, &own)) return NULL;
    Py_buffer *held[] = {&dur, &parent, &children, &own};
    const Py_ssize_t item[] = {8, 8, 1, 8};
    Py_ssize_t n = dur.len / 8;
    int ok = same_length(held, 4, n, item);
    if (ok) {
        const int64_t *length = dur.buf, *up = parent.buf;
        const uint8_t *counts = children.buf;
        int64_t *out = own.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t row = 0; row < n; row++) out[row] = length[row];
        for (Py_ssize_t row = 0; row < n; row++)
            if (out[row] < 0) out[row] = 0;
        /* Saturating at 0: lengths are not negative (the readers drop the others), so once a
         * parent's own time reaches 0 it stays there, and no sum of children can overflow. */
        for (Py_ssize_t row = 0; row < n; row++)
            if (counts[row] && up[row] >= 0 && up[row] < n && length[row] > 0) {
                int64_t *left = &out[up[row]];
                *left = *left > length[row] ? *left - length[row] : 0;
            }
        Py_END_ALLOW_THREADS
    }
    if (!released(held, 4, ok, "own_time")) return NULL;
    Py_RETURN_NONE;
}

/* Runs being merged from intervals in start order: an interval joins the last run when it starts
 * at or before where that run reaches, else begins the next. */
typedef struct {
    int64_t *from, *to;
    Py_ssize_t room, count;
    int64_t last_start;
} Runs;

/* Add a non-empty interval; 0, or -1 when it starts before the one added before it (or no room). */
static int add_run(Runs *runs, int64_t from, int64_t to) {
    if (runs->count && from < runs->last_start) return -1;
    runs->last_start = from;
    if (runs->count && from <= runs->to[runs->count - 1]) {
        if (to > runs->to[runs->count - 1]) runs->to[runs->count - 1] = to;
        return 0;
    }
    if (runs->count >= runs->room) return -1;
    runs->from[runs->count] = from;
    runs->to[runs->count] = to;
    runs->count++;
    return 0;
}

/* The union of intervals sorted by start as disjoint runs (attribution.merged_runs): an interval
 * joins the run before it when it starts at or before where that run reaches; empty ones are left
 * out. The intervals need not be disjoint or nested, only sorted by start.
 *
 * merged_runs(starts, ends, run_starts, run_ends) -> runs  (int64[n] each; the first runs written),
 *   or -1 when a (non-empty) interval starts before the one before it: then nothing is certain
 */
static PyObject *merged_runs(PyObject *self, PyObject *args) {
    Py_buffer starts, ends, run_starts, run_ends;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*w*", &starts, &ends, &run_starts, &run_ends)) return NULL;
    Py_buffer *held[] = {&starts, &ends, &run_starts, &run_ends};
    const Py_ssize_t item[] = {8, 8, 8, 8};
    Py_ssize_t n = starts.len / 8, runs = 0;
    int ok = same_length(held, 4, n, item);
    if (ok) {
        const int64_t *from = starts.buf, *to = ends.buf;
        Runs merged = {run_starts.buf, run_ends.buf, n, 0, 0};
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n && runs >= 0; i++)
            if (to[i] > from[i] && add_run(&merged, from[i], to[i]) < 0) runs = -1;  /* out of order */
        if (runs >= 0) runs = merged.count;
        Py_END_ALLOW_THREADS
    }
    if (!released(held, 4, ok, "merged_runs")) return NULL;
    return PyLong_FromSsize_t(runs);
}

/* The runs of the pieces one attribution layer selects (attribution._layer_intervals): pieces
 * whose code the table marks, on the step's thread, off it, or either, merged as merged_runs does
 * — without the selected pieces being gathered first.
 *
 * selected_runs(starts, ends, codes, on_driver, table, scope, run_starts, run_ends) -> runs, or -1
 *   when a selected piece starts before the one selected before it (then nothing is certain)
 *   starts, ends int64[n]; codes int8[n] or int16[n] (-1: the table's last entry); on_driver uint8[n]
 *   table uint8[codes + 1]; scope 0 either, 1 the step's thread, 2 the others
 *   run_starts, run_ends int64[m], m at least the number of selected pieces
 */
static PyObject *selected_runs(PyObject *self, PyObject *args) {
    Py_buffer starts, ends, codes, driver, table, run_starts, run_ends;
    int scope;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*iw*w*", &starts, &ends, &codes, &driver, &table, &scope, &run_starts,
                          &run_ends))
        return NULL;
    Py_buffer *held[] = {&starts, &ends, &codes, &driver, &table, &run_starts, &run_ends};
    Py_ssize_t n = starts.len / 8, m = run_starts.len / 8, runs = 0;
    int wide = codes.len == n * 2;
    int ok = ends.len == n * 8 && (codes.len == n || wide) && driver.len == n && table.len >= 1 &&
             run_ends.len == m * 8 && scope >= 0 && scope <= 2;
    if (ok) {
        const int64_t *from = starts.buf, *to = ends.buf;
        const uint8_t *on_driver = driver.buf, *wanted = table.buf;
        Runs merged = {run_starts.buf, run_ends.buf, m, 0, 0};
        Py_ssize_t missing = table.len - 1;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n && runs >= 0; i++) {
            Py_ssize_t code = wide ? ((const int16_t *)codes.buf)[i] : ((const int8_t *)codes.buf)[i];
            if (code < 0 || code > missing) code = missing;
            if (!wanted[code] || (scope == 1 && !on_driver[i]) || (scope == 2 && on_driver[i]) || to[i] <= from[i])
                continue;
            if (add_run(&merged, from[i], to[i]) < 0) runs = -1;  /* out of order (or no room) */
        }
        if (runs >= 0) runs = merged.count;
        Py_END_ALLOW_THREADS
    }
    if (!released(held, 7, ok, "selected_runs")) return NULL;
    return PyLong_FromSsize_t(runs);
}

/* Integer keys numbered in order of first appearance (pd.factorize's numbering), each one's first
 * row noted: an open-addressing table of the distinct keys (a trace's millions of rows have a few
 * thousand combinations of the columns a key packs), doubled as it fills. */
typedef struct {
    int64_t *key, *code;  /* per slot: the key, its code + 1 (0: empty) */
    size_t size;          /* a power of two */
    int shift;            /* a key's slot: the top bits of the key times 2^64 / golden ratio */
    Py_ssize_t distinct;
} KeyTable;

static int table_init(KeyTable *table) {
    table->size = 1 << 12;
    table->shift = 64 - 12;
    table->distinct = 0;
    table->key = malloc(sizeof(int64_t) * table->size);
    table->code = calloc(table->size, sizeof(int64_t));
    return table->key && table->code ? 0 : -1;
}

static void table_free(KeyTable *table) {
    free(table->key);
    free(table->code);
}

static size_t slot_of(int64_t key, int shift) { return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> shift); }

/* The code of ``key`` (a new one numbered next, its row noted in first_row); -1 out of memory. */
static int64_t table_number(KeyTable *table, int64_t key, Py_ssize_t row, int64_t *first_row) {
    size_t at = slot_of(key, table->shift);
    while (table->code[at] && table->key[at] != key) at = (at + 1) & (table->size - 1);
    if (table->code[at]) return table->code[at] - 1;
    table->key[at] = key;
    table->code[at] = ++table->distinct;
    first_row[table->distinct - 1] = row;
    if ((size_t)table->distinct * 2 > table->size) {  /* half full: twice the slots, the keys placed again */
        size_t grown = table->size * 2;
        int64_t *new_key = malloc(sizeof(int64_t) * grown), *new_code = calloc(grown, sizeof(int64_t));
        if (!new_key || !new_code) {
            free(new_key);
            free(new_code);
            return -1;
        }
        for (size_t old = 0; old < table->size; old++) {
            if (!table->code[old]) continue;
            size_t to = slot_of(table->key[old], table->shift - 1);
            while (new_code[to]) to = (to + 1) & (grown - 1);
            new_key[to] = table->key[old];
            new_code[to] = table->code[old];
        }
        table_free(table);
        table->key = new_key;
        table->code = new_code;
        table->size = grown;
        table->shift--;
    }
    return table->distinct - 1;
}

/* factorize(keys, codes_out, first_out) -> distinct keys  (int64[n] each; first_out's first entries) */
static PyObject *factorize(PyObject *self, PyObject *args) {
    Py_buffer keys, codes, first;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*w*", &keys, &codes, &first)) return NULL;
    Py_buffer *held[] = {&keys, &codes, &first};
    const Py_ssize_t item[] = {8, 8, 8};
    Py_ssize_t n = keys.len / 8;
    KeyTable table = {NULL, NULL, 0, 0, 0};
    int ok = same_length(held, 3, n, item);
    if (ok && table_init(&table) < 0) {
        ok = 0;
        PyErr_NoMemory();
    }
    if (ok) {
        const int64_t *key = keys.buf;
        int64_t *code = codes.buf, *first_row = first.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t row = 0; row < n && ok; row++)
            if ((code[row] = table_number(&table, key[row], row, first_row)) < 0) ok = 0;
        Py_END_ALLOW_THREADS
        if (!ok) PyErr_NoMemory();
    }
    table_free(&table);
    if (!released(held, 3, ok, "factorize")) return NULL;
    return PyLong_FromSsize_t(table.distinct);
}

/* The combinations of integer columns, numbered as factorize numbers their packed keys, without
 * the key column: each row's digits (a column's value plus its shift, in [0, size)) are packed in
 * mixed radix, a block of rows at a time, column by column. The sizes' product must stay below
 * 2^63 (the caller checks); where it is at most DIRECT_KEYS, a key's code is found at the key's
 * own place in a table, else through the hash table.
 *
 * combine(columns, shifts, sizes, codes_out, first_out) -> combinations
 *   columns: a sequence of integer arrays (1, 2, 4 or 8 bytes, signed) of n rows; shifts, sizes:
 *   a sequence of ints each; codes_out, first_out int64[n]
 */
enum { MAX_COLUMNS = 16 };
#define DIRECT_KEYS ((int64_t)1 << 20)  /* up to this many possible keys, a table with a place for each */
enum { KEY_BLOCK = 2048 };
/* One column's digits into a block's keys: its values (of type T) plus the shift, each checked to
 * lie in [0, size). */
#define PACK_DIGITS(T)                                                     \
    do {                                                                   \
        const T *values = (const T *)view[i].buf + from;                   \
        for (Py_ssize_t r = 0; r < rows; r++) {                            \
            int64_t digit = (int64_t)values[r] + shift;                    \
            outside |= digit < 0 || digit >= size;                         \
            key[r] = key[r] * size + digit;                                \
        }                                                                  \
    } while (0)

static PyObject *combine(PyObject *self, PyObject *args) {
    PyObject *columns, *shifts, *sizes;
    Py_buffer codes, first, view[MAX_COLUMNS];
    int64_t shift_of[MAX_COLUMNS], size_of[MAX_COLUMNS];
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOw*w*", &columns, &shifts, &sizes, &codes, &first)) return NULL;
    Py_ssize_t n = codes.len / 8, count = PySequence_Check(columns) ? PySequence_Size(columns) : -1;
    Py_ssize_t held = 0;
    int ok = count > 0 && count <= MAX_COLUMNS && first.len == codes.len && PySequence_Check(shifts) &&
             PySequence_Check(sizes) && PySequence_Size(shifts) == count && PySequence_Size(sizes) == count;
    for (Py_ssize_t i = 0; ok && i < count; i++, held++) {
        PyObject *column = PySequence_GetItem(columns, i), *shift = PySequence_GetItem(shifts, i),
                 *size = PySequence_GetItem(sizes, i);
        ok = column && shift && size && PyObject_GetBuffer(column, &view[i], PyBUF_ND | PyBUF_FORMAT) == 0;
        if (ok) {
            shift_of[i] = PyLong_AsLongLong(shift);
            size_of[i] = PyLong_AsLongLong(size);
            Py_ssize_t width = view[i].itemsize;
            ok = !PyErr_Occurred() && view[i].ndim == 1 && view[i].len == n * width && size_of[i] > 0 &&
                 (width == 1 || width == 2 || width == 4 || width == 8) && view[i].format &&
                 strchr("bhilq", view[i].format[0]) != NULL;
        } else {
            held--;  /* (no buffer was taken) */
        }
        Py_XDECREF(column);
        Py_XDECREF(shift);
        Py_XDECREF(size);
    }
    /* Few possible keys (the sizes' product): each key's code + 1 sits at the key's own place in
     * a table (0: not seen yet), no hashing; else the hash table. */
    int64_t space = 1;
    for (Py_ssize_t i = 0; ok && i < count && space <= DIRECT_KEYS; i++)
        space = size_of[i] > DIRECT_KEYS ? DIRECT_KEYS + 1 : space * size_of[i];  /* (no overflow) */
    int32_t *direct = ok && space <= DIRECT_KEYS ? calloc((size_t)space, sizeof(int32_t)) : NULL;
    KeyTable table = {NULL, NULL, 0, 0, 0};
    if (ok && !direct && table_init(&table) < 0) {
        ok = 0;
        PyErr_NoMemory();
    }
    int out_of_range = 0;
    if (ok) {
        int64_t *code = codes.buf, *first_row = first.buf;
        Py_BEGIN_ALLOW_THREADS
        int64_t key[KEY_BLOCK];
        /* A block of rows at a time, column by column (one tight loop per column and width), then
         * each row's key numbered. */
        for (Py_ssize_t from = 0; from < n && ok; from += KEY_BLOCK) {
            Py_ssize_t rows = n - from < KEY_BLOCK ? n - from : KEY_BLOCK;
            for (Py_ssize_t r = 0; r < rows; r++) key[r] = 0;
            for (Py_ssize_t i = 0; i < count && !out_of_range; i++) {
                const int64_t shift = shift_of[i], size = size_of[i];
                int outside = 0;
                switch (view[i].itemsize) {
                    case 1: PACK_DIGITS(const int8_t); break;
                    case 2: PACK_DIGITS(const int16_t); break;
                    case 4: PACK_DIGITS(const int32_t); break;
                    default: PACK_DIGITS(const int64_t); break;
                }
                out_of_range = outside;
            }
            if (out_of_range) {
                ok = 0;
                break;
            }
            for (Py_ssize_t r = 0; r < rows; r++) {
                Py_ssize_t row = from + r;
                if (direct) {
                    if (!direct[key[r]]) {
                        direct[key[r]] = (int32_t)++table.distinct;
                        first_row[table.distinct - 1] = row;
                    }
                    code[row] = direct[key[r]] - 1;
                } else if ((code[row] = table_number(&table, key[r], row, first_row)) < 0) {
                    ok = 0;
                    break;
                }
            }
        }
        Py_END_ALLOW_THREADS
        if (!ok && !out_of_range) PyErr_NoMemory();
    }
    free(direct);
    table_free(&table);
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&view[i]);
    PyBuffer_Release(&codes);
    PyBuffer_Release(&first);
    if (!ok) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, out_of_range ? "combine: a value outside its column's size"
                                                           : "combine: columns of different lengths or types");
        return NULL;
    }
    return PyLong_FromSsize_t(table.distinct);
}

/* The k-th smallest of values[0..n) (values are reordered): quickselect on a median-of-three
 * pivot, Hoare's partition (runs of equal values split evenly); past 64 rounds, the rest sorted. */
static int compare_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int64_t kth_smallest(int64_t *values, Py_ssize_t n, Py_ssize_t k) {
    Py_ssize_t low = 0, high = n - 1;
    for (int round = 0; low < high; round++) {
        if (round == 64) {
            qsort(values + low, (size_t)(high - low + 1), sizeof(int64_t), compare_int64);
            break;
        }
        Py_ssize_t middle = low + (high - low) / 2;
        int64_t a = values[low], b = values[middle], c = values[high];
        int64_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        Py_ssize_t i = low, j = high;
        while (i <= j) {
            while (values[i] < pivot) i++;
            while (values[j] > pivot) j--;
            if (i <= j) {
                int64_t swap = values[i];
                values[i] = values[j];
                values[j] = swap;
                i++;
                j--;
            }
        }
        if (k <= j) high = j;
        else if (k >= i) low = i;
        else break;  /* between the two halves: equal to the pivot */
    }
    return values[k];
}

/* The median of each column of a (rows x columns) int64 matrix, as np.median(matrix, axis=0)
 * gives it: the middle value, or the mean of the two middle values, as float64.
 *
 * column_medians(matrix, rows, columns, out)   matrix int64[rows * columns] (C order), out float64[columns]
 */
static PyObject *column_medians(PyObject *self, PyObject *args) {
    Py_buffer matrix, out;
    Py_ssize_t rows, columns;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnw*", &matrix, &rows, &columns, &out)) return NULL;
    int ok = rows > 0 && columns >= 0 && matrix.len == rows * columns * 8 && out.len == columns * 8;
    enum { BLOCK = 64 };  /* columns copied out together: each row's cells of a block are one read */
    int64_t *block = NULL;
    if (ok) {
        block = malloc(sizeof(int64_t) * (size_t)rows * BLOCK);
        ok = block != NULL;
        if (!ok) PyErr_NoMemory();
    }
    if (ok) {
        const int64_t *cell = matrix.buf;
        double *median = out.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t c = 0; c < columns; c++) {
            Py_ssize_t within = c % BLOCK;
            if (!within) {
                Py_ssize_t width = columns - c < BLOCK ? columns - c : BLOCK;
                for (Py_ssize_t r = 0; r < rows; r++)
                    for (Py_ssize_t j = 0; j < width; j++) block[j * rows + r] = cell[r * columns + c + j];
            }
            int64_t *column = block + within * rows;
            int64_t upper = kth_smallest(column, rows, rows / 2);
            if (rows % 2) {
                median[c] = (double)upper;
            } else {  /* the lower middle: the largest of the values left below the upper one */
                int64_t lower = column[0];
                for (Py_ssize_t r = 1; r < rows / 2; r++)
                    if (column[r] > lower) lower = column[r];
                median[c] = ((double)lower + (double)upper) / 2.0;
            }
        }
        Py_END_ALLOW_THREADS
    }
    free(block);
    PyBuffer_Release(&matrix);
    PyBuffer_Release(&out);
    if (!ok) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "column_medians: a matrix and an output that do not fit");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The cut points of edge streams and the bit mask active after each (attribution.layer_activity):
 * the streams are each sorted (the windows' starts, their ends, and per layer its runs' starts and
 * ends alternating); they are merged through a heap of their heads, each edge adds its stream's
 * increment (a layer's bit at a run's start, minus it at its end, modulo 2^64; 0 for windows), and
 * a point is written once every edge at it is in.
 *
 * merge_edges(streams, increments, points_out, masks_out) -> points
 *   streams: a sequence of int64 arrays, each sorted; increments: per stream (start, end)
 *   increments as a sequence of 2-tuples of ints (an edge at an even place of its stream adds the
 *   first, at an odd place the second); points_out int64[m], masks_out uint64[m], m at least the
 *   number of edges. Returns the number of points, or -1 when a stream is out of order.
 */
enum { MAX_STREAMS = 72 };

typedef struct {
    const int64_t *edge;
    Py_ssize_t at, count;
    uint64_t add[2];
} Stream;

static void sift_down(int *heap, int size, Stream *streams, int from) {
    for (;;) {
        int smallest = from, left = 2 * from + 1, right = left + 1;
        if (left < size && streams[heap[left]].edge[streams[heap[left]].at] <
                               streams[heap[smallest]].edge[streams[heap[smallest]].at])
            smallest = left;
        if (right < size && streams[heap[right]].edge[streams[heap[right]].at] <
                                streams[heap[smallest]].edge[streams[heap[smallest]].at])
            smallest = right;
        if (smallest == from) return;
        int swap = heap[from];
        heap[from] = heap[smallest];
        heap[smallest] = swap;
        from = smallest;
    }
}

static PyObject *merge_edges(PyObject *self, PyObject *args) {
    PyObject *stream_list, *increment_list;
    Py_buffer points, masks, view[MAX_STREAMS];
    Stream streams[MAX_STREAMS];
    int heap[MAX_STREAMS];
    (void)self;
    if (!PyArg_ParseTuple(args, "OOw*w*", &stream_list, &increment_list, &points, &masks)) return NULL;
    Py_ssize_t count = PySequence_Check(stream_list) ? PySequence_Size(stream_list) : -1, held = 0, total = 0;
    Py_ssize_t room = points.len / 8, written = 0;
    int ok = count >= 0 && count <= MAX_STREAMS && masks.len == room * 8 && PySequence_Check(increment_list) &&
             PySequence_Size(increment_list) == count;
    for (Py_ssize_t i = 0; ok && i < count; i++) {
        PyObject *stream = PySequence_GetItem(stream_list, i), *pair = PySequence_GetItem(increment_list, i);
        ok = stream && pair && PyArg_ParseTuple(pair, "KK", &streams[i].add[0], &streams[i].add[1]) &&
             PyObject_GetBuffer(stream, &view[i], PyBUF_ND) == 0;
        Py_XDECREF(stream);
        Py_XDECREF(pair);
        if (!ok) break;
        held++;
        ok = view[i].len % 8 == 0;
        streams[i].edge = view[i].buf;
        streams[i].at = 0;
        streams[i].count = view[i].len / 8;
        total += streams[i].count;
    }
    ok = ok && total <= room;
    if (ok) {
        int64_t *point = points.buf;
        uint64_t *mask = masks.buf, active = 0;
        int size = 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < count; i++) {
            const int64_t *edge = streams[i].edge;
            for (Py_ssize_t k = 1; k < streams[i].count && written >= 0; k++)
                if (edge[k] < edge[k - 1]) written = -1;  /* out of order */
            if (streams[i].count) heap[size++] = (int)i;
        }
        for (int from = size / 2 - 1; from >= 0 && written >= 0; from--) sift_down(heap, size, streams, from);
        while (size && written >= 0) {
            Stream *head = &streams[heap[0]];
            int64_t at = head->edge[head->at];
            active += head->add[head->at & 1];
            if (++head->at == head->count) heap[0] = heap[--size];
            if (size) sift_down(heap, size, streams, 0);
            if (!size || streams[heap[0]].edge[streams[heap[0]].at] != at) {  /* every edge at this point is in */
                point[written] = at;
                mask[written] = active;
                written++;
            }
        }
        Py_END_ALLOW_THREADS
    }
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&view[i]);
    PyBuffer_Release(&points);
    PyBuffer_Release(&masks);
    if (!ok) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "merge_edges: streams that do not fit");
        return NULL;
    }
    return PyLong_FromSsize_t(written);
}

/* Values carried down the nesting tree (arrays.copy_down): a row takes its parent's value where
 * the row's own value may take one (takes[own]) and the parent's may be given (gives[parent's]).
 * Rows in table order, where a parent comes before its children, so each parent's value is final
 * when its children read it: the same as the array pass that goes level by level from the top.
 *
 * copy_down(values, parent, takes, gives) -> 1, or 0 where a parent does not come before its child
 *   values int8/16/32/64[n], changed in place (values outside the tables take and give nothing);
 *   parent int64[n] (-1: none); takes, gives uint8[k] indexed by value */

static void set_value(void *values, Py_ssize_t width, Py_ssize_t row, int64_t value) {
    switch (width) {
        case 1: ((int8_t *)values)[row] = (int8_t)value; break;
        case 2: ((int16_t *)values)[row] = (int16_t)value; break;
        case 4: ((int32_t *)values)[row] = (int32_t)value; break;
        default: ((int64_t *)values)[row] = value;
    }
}

static PyObject *copy_down(PyObject *self, PyObject *args) {
    Py_buffer values, parent, takes, gives;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*y*y*y*", &values, &parent, &takes, &gives)) return NULL;
    Py_buffer *held[] = {&values, &parent, &takes, &gives};
    Py_ssize_t n = parent.len / 8, width = n ? values.len / n : 0;
    int ok = (width == 1 || width == 2 || width == 4 || width == 8 || n == 0) && values.len == n * width &&
             parent.len == n * 8 && takes.len == gives.len;
    int in_order = 1;
    if (ok && n) {
        const int64_t *up = parent.buf;
        const uint8_t *take = takes.buf, *give = gives.buf;
        const int64_t tables = takes.len;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t row = 0; row < n; row++) {
            int64_t p = up[row];
            if (p < 0) continue;
            if (p >= row) { in_order = 0; break; }
            int64_t own = value_at(values.buf, width, row), given = value_at(values.buf, width, p);
            if (own >= 0 && own < tables && take[own] && given >= 0 && given < tables && give[given])
                set_value(values.buf, width, row, given);
        }
        Py_END_ALLOW_THREADS
    }
    if (!released(held, 4, ok, "copy_down")) return NULL;
    return PyLong_FromLong(in_order);
}

/* States carried down the nesting tree (arrays.states_down): a row's final state is
 * table[parent's final state][its own state], or top[own state] for a row without a parent;
 * rows in table order, as in copy_down.
 *
 * states_down(own, parent, table, top, out) -> 1, or 0 where a parent does not come before its
 * child or a state is outside the tables
 *   own int32[n] (0 <= own < k); parent int64[n] (-1: none); table int32[m * k]; top int32[k];
 *   out int32[n] (0 <= final < m) */
static PyObject *states_down(PyObject *self, PyObject *args) {
    Py_buffer own, parent, table, top, out;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*", &own, &parent, &table, &top, &out)) return NULL;
    Py_buffer *held[] = {&own, &parent, &table, &top, &out};
    Py_ssize_t n = parent.len / 8, k = top.len / 4;
    int ok = own.len == n * 4 && parent.len == n * 8 && out.len == n * 4 && top.len == k * 4 && k > 0 &&
             table.len % (k * 4) == 0;
    int fits = 1;
    if (ok) {
        const int32_t *mine = own.buf, *after = table.buf, *alone = top.buf;
        const int64_t *up = parent.buf;
        int32_t *state = out.buf;
        const int64_t finals = table.len / (k * 4);
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t row = 0; row < n; row++) {
            int32_t o = mine[row];
            int64_t p = up[row];
            if (o < 0 || o >= k || p >= row) { fits = 0; break; }
            int32_t s = p < 0 ? alone[o] : after[(int64_t)state[p] * k + o];
            if (s < 0 || s >= finals) { fits = 0; break; }
            state[row] = s;
        }
        Py_END_ALLOW_THREADS
    }
    if (!released(held, 5, ok, "states_down")) return NULL;
    return PyLong_FromLong(fits);
}

/* The steps replayed along their recorded dependencies (analyzers/replay.py, whose docstring
 * states the model, and whose Python walk this pass repeats operation for operation, so that
 * both give the same doubles): per step window, in order of its elementary segments, a clock per
 * lane (the step's thread, the other threads, the device), work advancing its lane's clock by
 * its length times its cause's factor, the step thread's waits ending at the awaited lane's clock
 * (plus the return as recorded), and work after idle handed off from the step thread's clock.
 * Each of the T rows of ``factors`` is one replay; every step is replayed under each.
 *
 * replay(start, length, step, in_step, active, winner, lane, waits, unsupported, bucket, factors,
 *        cpu, n_steps, n_buckets, idle_bucket, sync_bucket,
 *        out_length, out_path, out_lanes, out_unsupported) -> None
 *   start, length, step int64[n]; in_step uint8[n]; active uint64[n]; winner int64[n]
 *   lane int8[L]; waits, unsupported uint8[L]; bucket int64[L] (-1: none); factors float64[T * L]
 *   out_length float64[T * n_steps]; out_path float64[T * n_steps * n_buckets];
 *   out_lanes float64[T * n_steps * 3]; out_unsupported float64[T * n_steps]
 */
enum { LANE_H = 0, LANE_O = 1, LANE_D = 2, N_LANES = 3, MAX_BUCKETS = 16, MAX_LAYERS = 64 };

typedef struct {
    double t;
    double path[MAX_BUCKETS];
    double lanes[N_LANES];
} Clock;

typedef struct {
    const int8_t *lane;
    const uint8_t *waits, *unsupported;
    const int64_t *bucket;
    const double *factor;
    int cpu, n_buckets, idle, sync;
    uint64_t lane_mask[N_LANES], own_mask;
    Clock c[N_LANES];
    int busy[N_LANES], worked_in_wait[N_LANES];
    double last_busy_end[N_LANES];
    int waiting, waited_for_others;
    double wait_new, fixed, back, unsupported_total;
    double wait_path[MAX_BUCKETS], wait_lanes[N_LANES], since_awaited[MAX_BUCKETS];
    double fixed_path[MAX_BUCKETS];
} Replay;

static int lowest_bit(uint64_t bits) {  /* bits != 0 */
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(bits);
#else
    int k = 0;
    while (!(bits & 1)) {
        bits >>= 1;
        k++;
    }
    return k;
#endif
}

static void clock_advance(Clock *c, double ns, int bucket, int lane) {
    c->t += ns;
    c->path[bucket] += ns;
    c->lanes[lane] += ns;
}

static void replay_hand_off(Replay *r, int lane, double t) {
    Clock *h = &r->c[LANE_H], *c = &r->c[lane];
    if (!r->waiting) {
        if (h->t > c->t) *c = *h;
    } else if (r->worked_in_wait[lane]) {
        clock_advance(c, t - r->last_busy_end[lane], r->idle, lane);
    } else if (r->wait_new + r->fixed > c->t) {
        c->t = r->wait_new + r->fixed;
        for (int b = 0; b < r->n_buckets; b++) c->path[b] = r->wait_path[b] + r->fixed_path[b];
        for (int l = 0; l < N_LANES; l++) c->lanes[l] = r->wait_lanes[l];
        c->lanes[LANE_H] += r->fixed;
    }
}

static void replay_end_wait(Replay *r) {
    int awaited = r->cpu ? LANE_O : LANE_D;
    Clock *h = &r->c[LANE_H], *other = &r->c[awaited];
    r->waiting = 0;
    if (!r->worked_in_wait[awaited]) {
        h->t = r->wait_new + r->fixed;
        for (int b = 0; b < r->n_buckets; b++) h->path[b] = r->wait_path[b] + r->fixed_path[b];
        for (int l = 0; l < N_LANES; l++) h->lanes[l] = r->wait_lanes[l];
        h->lanes[LANE_H] += r->fixed;
        r->unsupported_total += r->fixed;
        return;
    }
    h->t = r->wait_new;
    if (awaited == LANE_O) r->waited_for_others = 1;
    for (int b = 0; b < r->n_buckets; b++) h->path[b] = r->wait_path[b];
    for (int l = 0; l < N_LANES; l++) h->lanes[l] = r->wait_lanes[l];
    double back = r->back;
    if (other->t + back > h->t) {
        h->t = other->t + back;
        for (int b = 0; b < r->n_buckets; b++) h->path[b] = other->path[b] + r->since_awaited[b];
        for (int l = 0; l < N_LANES; l++) h->lanes[l] = other->lanes[l];
        h->lanes[LANE_H] += back;
    }
}

/* One step (its segments rows[first, last)) under one row of factors. */
static void replay_one(Replay *r, const int64_t *start, const int64_t *length, const uint64_t *active,
                       const int64_t *winner, Py_ssize_t first, Py_ssize_t last, double *out_length, double *out_path,
                       double *out_lanes, double *out_unsupported) {
    double t0 = (double)start[first];
    int awaited = r->cpu ? LANE_O : LANE_D;
    memset(r->c, 0, sizeof(r->c));
    for (int l = 0; l < N_LANES; l++) {
        r->c[l].t = t0;
        r->busy[l] = 0;
        r->worked_in_wait[l] = 0;
        r->last_busy_end[l] = t0;
    }
    r->waiting = 0;
    r->waited_for_others = 0;
    r->unsupported_total = 0.0;
    for (Py_ssize_t i = first; i < last; i++) {
        double t = (double)start[i], span = (double)length[i];
        uint64_t mask = active[i];
        int64_t won = winner[i];
        uint64_t mine = mask & r->own_mask;
        int own = mine ? lowest_bit(mine) : -1;
        int waiting;
        if (r->cpu)
            waiting = won >= 0 && (r->lane[won] == LANE_O || r->unsupported[won] || r->waits[won]);
        else
            waiting = (own >= 0 && r->bucket[own] == r->sync) ||
                      (own >= 0 && r->waits[own] && (mask & r->lane_mask[LANE_D])) ||
                      (own < 0 && (mask & r->lane_mask[LANE_D]));
        if (waiting && own >= 0 && r->factor[own] == 0.0) {
            waiting = 0;
            /* Its own work removed beside the other threads' (replay.py's _replay_step): the step
               still ends after their work. */
            if (r->cpu && r->lane[won] == LANE_O) r->waited_for_others = 1;
        }
        /* The wait begins or ends before the moment's work (replay.py's _replay_step). */
        if (waiting && !r->waiting) {
            Clock *h = &r->c[LANE_H];
            r->waiting = 1;
            r->wait_new = h->t;
            for (int b = 0; b < r->n_buckets; b++) {
                r->wait_path[b] = h->path[b];
                r->since_awaited[b] = r->fixed_path[b] = 0.0;
            }
            for (int l = 0; l < N_LANES; l++) {
                r->wait_lanes[l] = h->lanes[l];
                r->worked_in_wait[l] = 0;
            }
            r->fixed = 0.0;
            r->back = 0.0;
        } else if (!waiting && r->waiting) {
            replay_end_wait(r);
        }
        for (int lane = LANE_O; lane <= LANE_D; lane++) {
            uint64_t on = mask & r->lane_mask[lane];
            if (!on) {
                r->busy[lane] = 0;
                continue;
            }
            if (!r->busy[lane]) replay_hand_off(r, lane, t);
            int slowest = -1;
            for (uint64_t bits = on; bits; bits &= bits - 1) {  /* set bits, lowest first */
                int k = lowest_bit(bits);
                if (slowest < 0 || r->factor[k] > r->factor[slowest]) slowest = k;
            }
            int b = r->bucket[slowest] >= 0 ? (int)r->bucket[slowest] : r->idle;
            clock_advance(&r->c[lane], span * r->factor[slowest], b, lane);
            r->busy[lane] = 1;
            r->last_busy_end[lane] = t + span;
            if (r->waiting) r->worked_in_wait[lane] = 1;
        }
        if (waiting) {
            int cause = r->cpu ? (int)won : own;
            int b = cause >= 0 && r->bucket[cause] >= 0 ? (int)r->bucket[cause] : r->idle;
            double scaled = span * (cause >= 0 ? r->factor[cause] : 1.0);
            r->fixed += scaled;
            r->fixed_path[b] += scaled;
            if (r->busy[awaited]) {
                for (int k = 0; k < r->n_buckets; k++) r->since_awaited[k] = 0.0;
                r->back = 0.0;
            } else {
                r->since_awaited[b] += scaled;
                r->back += scaled;
            }
            continue;
        }
        if (own >= 0 && r->bucket[own] >= 0)
            clock_advance(&r->c[LANE_H], span * r->factor[own], (int)r->bucket[own], LANE_H);
        else if (own < 0)
            clock_advance(&r->c[LANE_H], span, r->idle, LANE_H);
    }
    if (r->waiting) replay_end_wait(r);
    /* The step ends when its thread and the device do; the other threads only where awaited. */
    int best = LANE_H;
    if (r->waited_for_others && r->c[LANE_O].t > r->c[best].t) best = LANE_O;
    if (r->c[LANE_D].t > r->c[best].t) best = LANE_D;
    *out_length = r->c[best].t - t0;
    for (int b = 0; b < r->n_buckets; b++) out_path[b] = r->c[best].path[b];
    for (int l = 0; l < N_LANES; l++) out_lanes[l] = r->c[best].lanes[l];
    *out_unsupported = r->unsupported_total;
}

static PyObject *replay(PyObject *self, PyObject *args) {
    Py_buffer start, length, step, in_step, active, winner, lane, waits, unsupported, bucket, factors;
    Py_buffer out_length, out_path, out_lanes, out_unsupported;
    int cpu, n_buckets, idle, sync;
    Py_ssize_t n_steps;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*inniiw*w*w*w*", &start, &length, &step, &in_step, &active,
                          &winner, &lane, &waits, &unsupported, &bucket, &factors, &cpu, &n_steps, &n_buckets, &idle,
                          &sync, &out_length, &out_path, &out_lanes, &out_unsupported))
        return NULL;
    Py_buffer *held[] = {&start, &length, &step, &in_step, &active, &winner, &lane, &waits, &unsupported, &bucket,
                         &factors, &out_length, &out_path, &out_lanes, &out_unsupported};
    Py_ssize_t n = start.len / 8, layers = lane.len;
    Py_ssize_t transforms = layers ? factors.len / 8 / layers : 0;
    const Py_ssize_t item[] = {8, 8, 8, 1, 8, 8};
    int ok = same_length(held, 6, n, item) && layers <= MAX_LAYERS && n_buckets <= MAX_BUCKETS && n_buckets > 0
             && waits.len == layers && unsupported.len == layers && bucket.len == layers * 8
             && factors.len == transforms * layers * 8 && out_length.len == transforms * n_steps * 8
             && out_path.len == transforms * n_steps * n_buckets * 8 && out_lanes.len == transforms * n_steps * 3 * 8
             && out_unsupported.len == transforms * n_steps * 8 && idle >= 0 && idle < n_buckets;
    if (ok) {
        const int64_t *begin = start.buf, *span = length.buf, *position = step.buf, *won = winner.buf;
        const uint8_t *inside = in_step.buf;
        const uint64_t *mask = active.buf;
        Replay r;
        r.lane = lane.buf;
        r.waits = waits.buf;
        r.unsupported = unsupported.buf;
        r.bucket = bucket.buf;
        r.cpu = cpu;
        r.n_buckets = n_buckets;
        r.idle = idle;
        r.sync = sync;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t i = 0;
        while (i < n) {
            if (!inside[i] || position[i] < 0 || position[i] >= n_steps) {
                i++;
                continue;
            }
            Py_ssize_t first = i;
            uint64_t background = mask[i];
            while (i < n && inside[i] && position[i] == position[first]) background &= mask[i++];
            r.own_mask = 0;
            for (int l = 0; l < N_LANES; l++) r.lane_mask[l] = 0;
            for (Py_ssize_t k = 0; k < layers; k++) {
                int at = r.lane[k];
                if (at == LANE_H) r.own_mask |= (uint64_t)1 << k;
                else if ((at == LANE_O || at == LANE_D) && !(background >> k & 1)) r.lane_mask[at] |= (uint64_t)1 << k;
            }
            for (Py_ssize_t t = 0; t < transforms; t++) {
                Py_ssize_t at = t * n_steps + position[first];
                r.factor = (const double *)factors.buf + t * layers;
                replay_one(&r, begin, span, mask, won, first, i, (double *)out_length.buf + at,
                           (double *)out_path.buf + at * n_buckets, (double *)out_lanes.buf + at * 3,
                           (double *)out_unsupported.buf + at);
            }
        }
        Py_END_ALLOW_THREADS
    }
    if (!released(held, 15, ok, "replay")) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"nest", nest, METH_VARARGS, "Parent row and depth of every host event on its track; returns the overlaps."},
    {"own_pieces", own_pieces, METH_VARARGS, "The own pieces of selected rows: counted, or written."},
    {"own_time", own_time, METH_VARARGS, "Each row's duration less its children's, at least 0."},
    {"merged_runs", merged_runs, METH_VARARGS, "The union of intervals sorted by start, as disjoint runs."},
    {"selected_runs", selected_runs, METH_VARARGS, "The runs of the pieces an attribution layer selects."},
    {"column_medians", column_medians, METH_VARARGS, "The median of each column of an int64 matrix."},
    {"merge_edges", merge_edges, METH_VARARGS, "The cut points of sorted edge streams and the bit mask after each."},
    {"combine", combine, METH_VARARGS, "The combinations of integer columns, numbered in order of first appearance."},
    {"factorize", factorize, METH_VARARGS, "Integer keys numbered in order of first appearance, with first rows."},
    {"copy_down", copy_down, METH_VARARGS, "Parents' values carried down to the children that take them."},
    {"replay", replay, METH_VARARGS, "Every step replayed along its recorded dependencies, under rows of factors."},
    {"states_down", states_down, METH_VARARGS, "Each row's state from its parent's and its own, through a table."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_passes", "Compiled passes over the timeline's columns.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__passes(void) { return PyModule_Create(&module); }
