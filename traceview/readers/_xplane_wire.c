/* Decode an XLine's events (protobuf wire format) into column buffers in one sequential pass.
 *
 * The events of a line are its field 4: a run of "0x22 <length> <XEvent>" records between the
 * line's header and trailer fields. readers/xplane_space.py finds that run in the file's own bytes
 * (field_run below); where the line was parsed by the runtime, readers/xplane_events.py cuts it
 * out of the line serialized again.
 * XEvent: 1 metadata_id, 2 offset_ps | 5 num_occurrences (a oneof), 3 duration_ps, 4 stats
 * (XStat: 1 metadata_id, then the value oneof 2 double, 3 uint64, 4 int64, 5 str, 6 bytes,
 * 7 ref). Unknown fields are skipped by wire type; a known field with another wire type, a group,
 * a malformed varint or a record overrunning its message makes the decoder decline, and the
 * caller reads the line through the protobuf runtime instead (tests/test_xplane_wire.py checks
 * both give the same timeline).
 *
 * decode(buf, begin, end, expected, line_ns, metadata_out, start_out, end_out, flags_out, stats_out)
 *   -> stat count, or -1 (declined), or -(needed + 2) when stats_out holds fewer rows than the line
 *   has stats.
 *   metadata_out, start_out, end_out int64[expected]: metadata_id, start ns, end ns
 *   flags_out  int8[expected]: the timing status of xplane_events.event_times, plus AGGREGATED when
 *              the event carries num_occurrences (separate arrays: each is let go when read)
 *   stats_out  int64[6, capacity]: event, stat_id, value field (0 none), raw value (the bits of
 *              a double, a varint's uint64 bits), value start, value end (str / bytes ranges)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { STAT_ROWS = 6 };

/* xplane_events.event_times, per event: the same statuses, bounds and rounding. */
enum { TIMED = 0, OUT_OF_RANGE = 1, NEGATIVE = 2, INSTANT = 3, AGGREGATED = 4 };
static const int64_t MAX_PS = (int64_t)1 << 61, MAX_LINE_NS = (int64_t)1 << 61;

/* Python's floor division by 1000 (C's rounds toward zero). */
static int64_t floor_div_1000(int64_t value) { return value >= 0 ? value / 1000 : -((-(value + 1)) / 1000) - 1; }

static void event_times(int64_t line_ns, int64_t offset_ps, int64_t duration_ps, int64_t *start, int64_t *stop,
                        int64_t *status) {
    int line_out = line_ns > MAX_LINE_NS || line_ns < -MAX_LINE_NS;
    *status = duration_ps < 0 ? NEGATIVE : duration_ps == 0 ? INSTANT : TIMED;
    if (offset_ps < 0 || offset_ps > MAX_PS || duration_ps > MAX_PS || line_out) {
        *status = OUT_OF_RANGE;
        offset_ps = duration_ps = 0;
        if (line_out) line_ns = 0;
    }
    *start = line_ns + floor_div_1000(offset_ps + 500);
    *stop = line_ns + floor_div_1000(offset_ps + duration_ps + 500);
}

typedef struct {
    const unsigned char *base, *p;
} Reader;

/* A varint within [p, end): 0 and the value, or -1 (malformed or past end). */
static int varint(Reader *r, const unsigned char *end, uint64_t *out) {
    uint64_t value = 0;
    for (int k = 0; k < 10; k++) {
        if (r->p >= end) return -1;
        unsigned char b = *r->p++;
        value |= (uint64_t)(b & 0x7F) << (7 * k);
        if (b < 0x80) {
            *out = value;
            return 0;
        }
    }
    return -1;
}

/* One field's tag and payload within [p, end): its number, wire type, varint / fixed64 value
 * (0 for other wire types) and payload range. */
typedef struct {
    uint64_t number, value;
    int wire;
    const unsigned char *start, *stop;
} Field;

static int field(Reader *r, const unsigned char *end, Field *f) {
    uint64_t tag;
    if (varint(r, end, &tag) < 0) return -1;
    f->number = tag >> 3;
    f->wire = (int)(tag & 7);
    f->value = 0;
    f->start = r->p;
    switch (f->wire) {
        case 0:
            if (varint(r, end, &f->value) < 0) return -1;
            break;
        case 1:
            if (end - r->p < 8) return -1;
            for (int k = 7; k >= 0; k--) f->value = (f->value << 8) | r->p[k]; /* little-endian on the wire */
            r->p += 8;
            break;
        case 2: {
            uint64_t length;
            if (varint(r, end, &length) < 0 || length > (uint64_t)(end - r->p)) return -1;
            f->start = r->p;
            r->p += length;
            break;
        }
        case 5:
            if (end - r->p < 4) return -1;
            r->p += 4;
            break;
        default: /* groups (3, 4) and reserved types */
            return -1;
    }
    f->stop = r->p;
    return 0;
}

static Py_ssize_t decode_events(const unsigned char *base, Py_ssize_t begin, Py_ssize_t end, Py_ssize_t expected,
                                int64_t line_ns, int64_t *metadata_out, int64_t *start_out, int64_t *end_out,
                                int8_t *flags_out, int64_t *stats, Py_ssize_t capacity) {
    Reader r = {base, base + begin};
    const unsigned char *stop = base + end;
    Py_ssize_t n = 0, n_stats = 0;
    while (r.p < stop) {
        Field record;
        if (field(&r, stop, &record) < 0 || record.number != 4 || record.wire != 2 || n >= expected) return -1;
        int64_t metadata_id = 0, offset_ps = 0, duration_ps = 0, aggregated = 0;
        Reader e = {base, record.start};
        while (e.p < record.stop) {
            Field f;
            if (field(&e, record.stop, &f) < 0) return -1;
            if (f.number == 1 || f.number == 2 || f.number == 3 || f.number == 5) {
                if (f.wire != 0) return -1;
                if (f.number == 1) metadata_id = (int64_t)f.value;
                else if (f.number == 2) offset_ps = (int64_t)f.value, aggregated = 0;
                else if (f.number == 3) duration_ps = (int64_t)f.value;
                else offset_ps = 0, aggregated = 1; /* num_occurrences: offset_ps reads 0 */
            } else if (f.number == 4) {
                if (f.wire != 2) return -1;
                int64_t stat_id = 0, value_field = 0, raw = 0, value_start = 0, value_end = 0;
                Reader s = {base, f.start};
                while (s.p < f.stop) {
                    Field v;
                    if (field(&s, f.stop, &v) < 0) return -1;
                    if (v.number == 1) {
                        if (v.wire != 0) return -1;
                        stat_id = (int64_t)v.value;
                    } else if (v.number >= 2 && v.number <= 7) {
                        int wire = v.number == 2 ? 1 : (v.number == 5 || v.number == 6) ? 2 : 0;
                        if (v.wire != wire) return -1;
                        value_field = (int64_t)v.number; /* the oneof: the last member seen is the value */
                        raw = (int64_t)v.value;
                        value_start = v.start - base;
                        value_end = v.stop - base;
                    }
                }
                if (n_stats < capacity) {
                    int64_t row[STAT_ROWS] = {n, stat_id, value_field, raw, value_start, value_end};
                    for (int k = 0; k < STAT_ROWS; k++) stats[k * capacity + n_stats] = row[k];
                }
                n_stats++;
            }
        }
        int64_t start, stop, status;
        event_times(line_ns, offset_ps, duration_ps, &start, &stop, &status);
        metadata_out[n] = metadata_id;
        start_out[n] = start;
        end_out[n] = stop;
        flags_out[n] = (int8_t)(status | (aggregated ? AGGREGATED : 0));
        n++;
    }
    if (n != expected) return -1;
    return n_stats > capacity ? -(n_stats + 2) : n_stats;
}

static PyObject *decode(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf, metadata, start, stop, flags, stats;
    Py_ssize_t begin, end, expected;
    long long line_ns;
    if (!PyArg_ParseTuple(args, "y*nnnLw*w*w*w*w*", &buf, &begin, &end, &expected, &line_ns, &metadata, &start, &stop,
                          &flags, &stats))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t capacity = stats.len / (Py_ssize_t)(STAT_ROWS * sizeof(int64_t));
    Py_ssize_t column = (Py_ssize_t)sizeof(int64_t) * expected;
    if (begin < 0 || begin > end || end > buf.len || expected < 0 || metadata.len < column || start.len < column ||
        stop.len < column || flags.len < expected) {
        PyErr_SetString(PyExc_ValueError, "decode: range or output buffers out of bounds");
    } else {
        Py_ssize_t got;
        Py_BEGIN_ALLOW_THREADS
        got = decode_events(buf.buf, begin, end, expected, (int64_t)line_ns, metadata.buf, start.buf, stop.buf,
                            flags.buf, stats.buf, capacity);
        Py_END_ALLOW_THREADS
        result = PyLong_FromSsize_t(got);
    }
    Py_buffer *held[] = {&buf, &metadata, &start, &stop, &flags, &stats};
    for (size_t k = 0; k < sizeof held / sizeof held[0]; k++) PyBuffer_Release(held[k]);
    return result;
}

/* The fields of the message bytes [begin, end), walked without decoding them: how many records of
 * field `number` there are, the first `capacity` of them as (record start, payload start, payload
 * end) triples in `ranges`, and whether they form one unbroken run [*run_start, *run_end).
 * -1 when the bytes are not well-formed fields or the field is not length-delimited. */
static int scan_field(const unsigned char *base, Py_ssize_t begin, Py_ssize_t end, uint64_t number,
                      Py_ssize_t *ranges, Py_ssize_t capacity, Py_ssize_t *count, int *one_run,
                      Py_ssize_t *run_start, Py_ssize_t *run_end) {
    Reader r = {base, base + begin};
    const unsigned char *stop = base + end;
    int after_run = 0; /* a record of the field was seen and another field followed it */
    *count = 0, *one_run = 1, *run_start = begin, *run_end = begin;
    while (r.p < stop) {
        const unsigned char *record = r.p;
        Field f;
        if (field(&r, stop, &f) < 0 || (f.number == number && f.wire != 2)) return -1;
        if (f.number != number) {
            if (*count) after_run = 1;
            continue;
        }
        if (after_run) *one_run = 0;
        if (!*count) *run_start = record - base;
        *run_end = f.stop - base;
        if (*count < capacity) {
            ranges[3 * *count] = record - base;
            ranges[3 * *count + 1] = f.start - base;
            ranges[3 * *count + 2] = f.stop - base;
        }
        (*count)++;
    }
    return 0;
}

/* The records of field `number` in the message bytes [begin, end): a list of (record start, payload
 * start, payload end), or None when the bytes are not well-formed fields or the field is not
 * length-delimited. The planes of an XSpace (field 1) and the lines of an XPlane (field 3) are
 * found this way, without parsing their events. */
static PyObject *field_ranges(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    Py_ssize_t begin, end, count, run_start, run_end;
    unsigned long long number;
    int one_run;
    if (!PyArg_ParseTuple(args, "y*nnK", &buf, &begin, &end, &number)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t *ranges = NULL;
    if (begin < 0 || begin > end || end > buf.len) {
        PyErr_SetString(PyExc_ValueError, "field_ranges: range out of bounds");
    } else if (scan_field(buf.buf, begin, end, number, NULL, 0, &count, &one_run, &run_start, &run_end) < 0) {
        out = Py_NewRef(Py_None);
    } else if ((ranges = PyMem_Malloc(sizeof(Py_ssize_t) * 3 * (size_t)(count + 1))) == NULL) {
        PyErr_NoMemory();
    } else {
        scan_field(buf.buf, begin, end, number, ranges, count, &count, &one_run, &run_start, &run_end);
        out = PyList_New(count);
        for (Py_ssize_t i = 0; out != NULL && i < count; i++) {
            PyObject *item = Py_BuildValue("(nnn)", ranges[3 * i], ranges[3 * i + 1], ranges[3 * i + 2]);
            if (item == NULL) Py_CLEAR(out);
            else PyList_SET_ITEM(out, i, item);
        }
    }
    PyMem_Free(ranges);
    PyBuffer_Release(&buf);
    return out;
}

/* Where the records of field `number` lie in the message bytes [begin, end): (count, run start,
 * run end) when they form one unbroken run (a line's events as the profiler writes them; (0,
 * begin, begin) when there are none), or None when they are split by other fields, the bytes are
 * not well-formed fields, or the field is not length-delimited. */
static PyObject *field_run(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    Py_ssize_t begin, end, count = 0, run_start = 0, run_end = 0;
    unsigned long long number;
    int one_run = 0, got = -1;
    if (!PyArg_ParseTuple(args, "y*nnK", &buf, &begin, &end, &number)) return NULL;
    int in_bounds = begin >= 0 && begin <= end && end <= buf.len;
    if (in_bounds) {
        Py_BEGIN_ALLOW_THREADS
        got = scan_field(buf.buf, begin, end, number, NULL, 0, &count, &one_run, &run_start, &run_end);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&buf);
    if (!in_bounds) {
        PyErr_SetString(PyExc_ValueError, "field_run: range out of bounds");
        return NULL;
    }
    if (got < 0 || !one_run) Py_RETURN_NONE;
    return Py_BuildValue("(nnn)", count, run_start, run_end);
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, "Decode an XLine's event records into column buffers (see the module source)."},
    {"field_ranges", field_ranges, METH_VARARGS, "(record start, payload start, payload end) of each record of a field."},
    {"field_run", field_run, METH_VARARGS, "(count, start, end) of a field's records when they form one run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_xplane_wire", "Compiled decoding of XPlane event records into columns.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__xplane_wire(void) { return PyModule_Create(&module); }
