/* Passes over the nesting of host events (normalize.py): nest them on their tracks, cut their own
 * pieces, sum their own time — each one sequential pass (or two) over the rows.
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

static int same_length(Py_buffer *buffers[], int count, Py_ssize_t rows, const Py_ssize_t item[]) {
    for (int i = 0; i < count; i++)
        if (buffers[i]->len != rows * item[i]) return 0;
    return 1;
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
    for (int i = 0; i < 7; i++) PyBuffer_Release(held[i]);
    if (!ok) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "nest: columns of different lengths or types");
        return NULL;
    }
    return PyLong_FromLongLong(overlaps);
}

/* The own pieces of selected rows (normalize.own_pieces): the gaps between a row's direct host
 * children, the tail after its last child, and a childless row whole. Two passes over the rows
 * in table order, the same walk in both: the first counts, the second writes.
 *
 * A row's children come in table order (by start). cursor[p] is how far p's children seen so
 * far reach (the running maximum of their ends; children of one event may overlap slightly),
 * ts[p] before the first; the gap before a child is [cursor, child start), kept when not empty.
 * The output is in the order the array passes give: the gaps grouped by parent (parents
 * ascending, each parent's in time order), then the tails (parents ascending), then the
 * childless rows (ascending).
 *
 * own_pieces(ts, end, parent, host, selected, starts, ends, rows) -> (n_gap, n_tail, n_whole)
 *   ts, end, parent int64[n]; host, selected uint8[n] (a row on a host track; a row whose pieces are wanted)
 *   starts, ends int64[m], rows int32[m] or int64[m]: written when m is the number of pieces (the
 *   first call, with m = 0, counts them; the second, with room for exactly that many, writes)
 */
static void walk_children(Py_ssize_t n, const int64_t *ts, const int64_t *end, const int64_t *parent,
                          const uint8_t *host, const uint8_t *selected, int64_t *cursor, int64_t *gaps,
                          int64_t *starts, int64_t *ends, void *rows, int wide) {
    /* INT64_MIN: no child seen yet (no end is that small: ends are starts plus durations >= 0) */
    for (Py_ssize_t p = 0; p < n; p++) cursor[p] = INT64_MIN;
    for (Py_ssize_t row = 0; row < n; row++) {
        int64_t p = parent[row];
        if (!host[row] || p < 0 || p >= n || !selected[p]) continue;
        int64_t gap_start = cursor[p] == INT64_MIN ? ts[p] : cursor[p];
        if (ts[row] > gap_start) {
            if (starts) {
                int64_t at = gaps[p]++;
                starts[at] = gap_start;
                ends[at] = ts[row];
                if (wide) ((int64_t *)rows)[at] = p; else ((int32_t *)rows)[at] = (int32_t)p;
            } else {
                gaps[p]++;
            }
        }
        cursor[p] = cursor[p] == INT64_MIN || end[row] > cursor[p] ? end[row] : cursor[p];
    }
}

static PyObject *own_pieces(PyObject *self, PyObject *args) {
    Py_buffer ts, end, parent, host, selected, starts, ends, rows;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*w*", &ts, &end, &parent, &host, &selected, &starts, &ends, &rows))
        return NULL;
    Py_buffer *held[] = {&ts, &end, &parent, &host, &selected, &starts, &ends, &rows};
    Py_ssize_t n = ts.len / 8, m = starts.len / 8;
    const Py_ssize_t item[] = {8, 8, 8, 1, 1};
    int wide = m > 0 && rows.len == m * 8;
    int ok = same_length(held, 5, n, item) && ends.len == m * 8 && (rows.len == m * 4 || rows.len == m * 8);
    Py_ssize_t n_gap = 0, n_tail = 0, n_whole = 0;
    /* Per row: how far its children reach, and its gap count (then its first gap's position). */
    int64_t *reach = NULL, *count = NULL;
    if (ok) {
        reach = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
        count = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
        ok = reach && count;
        if (!ok) PyErr_NoMemory();
    }
    if (ok) {
        const int64_t *start_of = ts.buf, *end_of = end.buf, *up = parent.buf;
        const uint8_t *is_host = host.buf, *wanted = selected.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t p = 0; p < n; p++) count[p] = 0;
        walk_children(n, start_of, end_of, up, is_host, wanted, reach, count, NULL, NULL, NULL, 0);
        for (Py_ssize_t p = 0; p < n; p++) {
            if (reach[p] != INT64_MIN) {
                n_gap += count[p];
                n_tail += end_of[p] > reach[p];
            } else {
                n_whole += wanted[p] && end_of[p] > start_of[p];
            }
        }
        if (m == n_gap + n_tail + n_whole && m > 0) {
            int64_t *out_start = starts.buf, *out_end = ends.buf;
            /* Each parent's first gap position: the gaps of the parents before it. */
            int64_t at = 0;
            for (Py_ssize_t p = 0; p < n; p++) {
                int64_t here = count[p];
                count[p] = at;
                at += here;
            }
            walk_children(n, start_of, end_of, up, is_host, wanted, reach, count, out_start, out_end, rows.buf, wide);
            Py_ssize_t tail = n_gap, whole = n_gap + n_tail;
            for (Py_ssize_t p = 0; p < n; p++) {
                Py_ssize_t *next;
                if (reach[p] != INT64_MIN && end_of[p] > reach[p]) next = &tail;  /* after the last child */
                else if (reach[p] == INT64_MIN && wanted[p] && end_of[p] > start_of[p]) next = &whole;  /* childless */
                else continue;
                out_start[*next] = next == &tail ? reach[p] : start_of[p];
                out_end[*next] = end_of[p];
                if (wide) ((int64_t *)rows.buf)[*next] = p; else ((int32_t *)rows.buf)[*next] = (int32_t)p;
                (*next)++;
            }
        }
        Py_END_ALLOW_THREADS
    }
    free(reach);
    free(count);
    for (int i = 0; i < 8; i++) PyBuffer_Release(held[i]);
    if (!ok) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "own_pieces: columns of different lengths or types");
        return NULL;
    }
    return Py_BuildValue("nnn", n_gap, n_tail, n_whole);
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
            if (counts[row] && up[row] >= 0 && up[row] < n) out[up[row]] -= length[row];
        for (Py_ssize_t row = 0; row < n; row++)
            if (out[row] < 0) out[row] = 0;
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < 4; i++) PyBuffer_Release(held[i]);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "own_time: columns of different lengths or types");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"nest", nest, METH_VARARGS, "Parent row and depth of every host event on its track; returns the overlaps."},
    {"own_pieces", own_pieces, METH_VARARGS, "The own pieces of selected rows: counted, or written where there is room."},
    {"own_time", own_time, METH_VARARGS, "Each row's duration less its children's, at least 0."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_nesting", "Compiled nesting of host events on their tracks.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__nesting(void) { return PyModule_Create(&module); }
