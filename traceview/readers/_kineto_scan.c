/* Scan the elements of a Kineto / Chrome trace ``traceEvents`` array straight into column buffers.
 *
 * One pass over the JSON text, no Python object per event: each element's fields that the
 * timeline schema reads are written into preallocated arrays, strings are interned per call
 * (each distinct token handed back once, as its raw JSON text), and everything else is skipped
 * while being checked against the JSON grammar. The scanner takes only what it is sure about;
 * anything unusual (malformed JSON, a value of an unexpected type, an escaped key, a number with
 * an exponent where a time belongs, an integer of more than 18 digits, invalid UTF-8, a
 * duplicated key) makes it decline, and the caller decodes the document the typed way instead,
 * which keeps every outcome of that path. The Python side (readers/kineto.py) turns each
 * distinct token into its value with the same typed decoder, so both decodings agree exactly.
 *
 * scan(buf, pos, end, mode, ints, doubles, flags) -> (status, pos, count, mode, tokens, message)
 *   buf      the text (any contiguous bytes-like object), read up to end
 *   pos      where to start, in the given mode (AT_ELEMENT, AT_ARRAY_START, AT_SEPARATOR); the
 *            returned pos and mode are where the next call goes on
 *   ints     int64[INT_ROWS, capacity], doubles float64[DOUBLE_ROWS, capacity], flags uint8[capacity]
 *   status   0 END (the array's "]" was read; pos is just after it), 1 FULL (capacity reached),
 *            2 MORE (the text ends before the next element is whole: pos is where to go on once
 *            more text is appended), 3 DECLINED (message says why)
 *   tokens   one list per interned field: the distinct raw tokens, in first-seen order; the
 *            field's column holds each event's index into it (-1: key absent)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Rows of the int64 output. */
enum {
    ROW_PH, ROW_CAT, ROW_NAME, ROW_PID, ROW_TID, /* interned-token codes */
    ROW_INPUT_TYPES, /* interned too: the raw text of args "Input type" (a list; torch record_shapes) */
    ROW_TS_NS,       /* exact ns of a plain ts: whole µs * 1000 + first three fraction digits */
    ROW_ELEMENTS,    /* elements of the largest "Input Dims" shape; -1 none */
    ROW_ARGS_START, ROW_ARGS_END, /* offsets of the args object in buf; -1 absent */
    ROW_FIRST_INTEGER_ARG, /* then one row per INTEGER_ARGS key: its integer value, -1 absent or null */
};

/* The args keys read as integers (the launch links, and torch's "[memory]" samples). Any other
 * value type sets FLAG_ARGS_OTHER and the caller decodes that args object the typed way. */
#define KEY(text) {text, sizeof(text) - 1}
static const struct {
    const char *text;
    Py_ssize_t length;
} INTEGER_ARGS[] = {
    KEY("device"), KEY("stream"), KEY("correlation"), KEY("bytes"),
    KEY("Bytes"), KEY("Total Allocated"), KEY("Total Reserved"), KEY("Device Type"), KEY("Device Id"),
};
enum { N_INTEGER_ARGS = sizeof(INTEGER_ARGS) / sizeof(INTEGER_ARGS[0]), INT_ROWS = ROW_FIRST_INTEGER_ARG + N_INTEGER_ARGS };
enum { ROW_TS, ROW_DUR, DOUBLE_ROWS };
enum { N_INTERNED = 6 };

/* Bits of the flags output. */
enum {
    FLAG_TS = 1,          /* ts present */
    FLAG_TS_PLAIN = 2,    /* ts is -?digits(1..16)[.digits] of at most 40 characters */
    FLAG_TS_BEYOND = 4,   /* plain ts whose whole µs are >= MAX_US (ROW_TS_NS holds the fraction only) */
    FLAG_ARGS_OTHER = 8,  /* an integer arg has another type: the caller decodes that args object */
};

enum { END = 0, FULL = 1, MORE = 2, DECLINED = 3 };
/* Where a call starts (and where the next one must): at an element (after a ','), just after the
 * array's '[' (an element or the ']' of an empty array), or after an element (',' or ']'). */
enum { AT_ELEMENT = 0, AT_ARRAY_START = 1, AT_SEPARATOR = 2 };

#define MAX_DEPTH 200
#define MAX_INT_DIGITS 18
#define MAX_ELEMENTS ((int64_t)1 << 62)
/* 2**62 / 1000 µs: timestamps beyond it do not fit int64 ns with room for sums. */
#define MAX_US_WHOLE ((int64_t)4611686018427387LL)

typedef struct {
    const unsigned char *base, *p, *end;
    const char *why; /* set when declining */
    int more;        /* set when the text ended inside a value */
} Cursor;

/* ----------------------------------------------------------------------------------------- */
/* Interning: open addressing on the raw token bytes. No Python object is touched while the text
 * is scanned (the GIL is released then); the distinct tokens become bytes objects afterwards. */

typedef struct {
    Py_ssize_t *slots; /* token index + 1, 0 empty */
    uint64_t *hashes;
    const unsigned char **starts;
    Py_ssize_t *lengths;
    Py_ssize_t mask, used, cap_tokens;
} Interner;

static uint64_t hash_bytes(const unsigned char *s, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, (size_t)n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 32;
    return h;
}

static int interner_init(Interner *t) {
    t->mask = 1023;
    t->used = 0;
    t->cap_tokens = 64;
    t->slots = PyMem_RawCalloc((size_t)(t->mask + 1), sizeof(Py_ssize_t));
    t->hashes = PyMem_RawMalloc((size_t)t->cap_tokens * sizeof(uint64_t));
    t->starts = PyMem_RawMalloc((size_t)t->cap_tokens * sizeof(unsigned char *));
    t->lengths = PyMem_RawMalloc((size_t)t->cap_tokens * sizeof(Py_ssize_t));
    return t->slots && t->hashes && t->starts && t->lengths ? 0 : -1;
}

static void interner_free(Interner *t) {
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->hashes);
    PyMem_RawFree(t->starts);
    PyMem_RawFree(t->lengths);
}

static int interner_grow(Interner *t) {
    Py_ssize_t size = (t->mask + 1) * 2;
    Py_ssize_t *slots = PyMem_RawCalloc((size_t)size, sizeof(Py_ssize_t));
    if (!slots) return -1;
    for (Py_ssize_t i = 0; i < t->used; i++) {
        Py_ssize_t at = (Py_ssize_t)(t->hashes[i] & (uint64_t)(size - 1));
        while (slots[at]) at = (at + 1) & (size - 1);
        slots[at] = i + 1;
    }
    PyMem_RawFree(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    return 0;
}

/* The token's index, adding it when new; -1 when memory runs out. */
static Py_ssize_t intern(Interner *t, const unsigned char *s, Py_ssize_t n) {
    uint64_t h = hash_bytes(s, n);
    Py_ssize_t at = (Py_ssize_t)(h & (uint64_t)t->mask);
    for (;;) {
        Py_ssize_t slot = t->slots[at];
        if (!slot) break;
        Py_ssize_t i = slot - 1;
        if (t->hashes[i] == h && t->lengths[i] == n && memcmp(t->starts[i], s, (size_t)n) == 0) return i;
        at = (at + 1) & t->mask;
    }
    if (t->used == t->cap_tokens) {
        Py_ssize_t cap = t->cap_tokens * 2;
        uint64_t *hashes = PyMem_RawRealloc(t->hashes, (size_t)cap * sizeof(uint64_t));
        if (hashes) t->hashes = hashes;
        const unsigned char **starts = PyMem_RawRealloc(t->starts, (size_t)cap * sizeof(unsigned char *));
        if (starts) t->starts = starts;
        Py_ssize_t *lengths = PyMem_RawRealloc(t->lengths, (size_t)cap * sizeof(Py_ssize_t));
        if (lengths) t->lengths = lengths;
        if (!hashes || !starts || !lengths) return -1;
        t->cap_tokens = cap;
    }
    Py_ssize_t i = t->used++;
    t->hashes[i] = h;
    t->starts[i] = s;
    t->lengths[i] = n;
    t->slots[at] = i + 1;
    if (t->used * 2 > t->mask + 1 && interner_grow(t) < 0) return -1;
    return i;
}

/* The distinct tokens as a list of bytes, in first-seen order (needs the GIL). */
static PyObject *interner_tokens(const Interner *t) {
    PyObject *list = PyList_New(t->used);
    if (!list) return NULL;
    for (Py_ssize_t i = 0; i < t->used; i++) {
        PyObject *token = PyBytes_FromStringAndSize((const char *)t->starts[i], t->lengths[i]);
        if (!token) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, token);
    }
    return list;
}

/* ----------------------------------------------------------------------------------------- */
/* JSON grammar                                                                              */

/* Result of the scanning helpers: 0 ok, -1 stop (cursor says why: more text needed, or declined). */
static int decline(Cursor *c, const char *why) {
    c->why = why;
    return -1;
}

static int need_more(Cursor *c) {
    c->more = 1;
    return -1;
}

static inline void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

static inline int hex_value(unsigned char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* A string starting at the cursor's '"'; on success the cursor is after the closing quote and
 * *escaped tells whether it held a backslash. Invalid UTF-8, control characters, bad escapes and
 * escaped surrogates are declined (the typed decoding judges them). */
static int scan_string(Cursor *c, int *escaped) {
    const unsigned char *p = c->p + 1, *end = c->end;
    *escaped = 0;
    for (;;) {
#if defined(__SSE2__)
        /* 16 bytes at a time up to the first quote, backslash, control or non-ASCII byte (the
         * signed comparison with 0x20 catches both of the latter). */
        const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
        while (end - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            int stop = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                                      _mm_cmplt_epi8(v, space)));
            if (stop) {
                p += __builtin_ctz((unsigned)stop);
                break;
            }
            p += 16;
        }
#endif
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
        if (p >= end) return need_more(c);
        unsigned char ch = *p;
        if (ch == '"') {
            c->p = p + 1;
            return 0;
        }
        if (ch < 0x20) return decline(c, "control character in a string");
        if (ch == '\\') {
            *escaped = 1;
            if (p + 1 >= end) return need_more(c);
            unsigned char e = p[1];
            if (e == 'u') {
                if (p + 6 > end) return need_more(c);
                int v = 0;
                for (int k = 2; k < 6; k++) {
                    int h = hex_value(p[k]);
                    if (h < 0) return decline(c, "bad \\u escape");
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) return decline(c, "escaped surrogate");
                p += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
            } else {
                return decline(c, "bad escape");
            }
            continue;
        }
        /* UTF-8 sequence (RFC 3629: no overlongs, no surrogates, at most U+10FFFF). */
        int len;
        unsigned char lo = 0x80, hi = 0xBF;
        if (ch >= 0xC2 && ch <= 0xDF) len = 2;
        else if (ch >= 0xE0 && ch <= 0xEF) {
            len = 3;
            if (ch == 0xE0) lo = 0xA0;
            if (ch == 0xED) hi = 0x9F;
        } else if (ch >= 0xF0 && ch <= 0xF4) {
            len = 4;
            if (ch == 0xF0) lo = 0x90;
            if (ch == 0xF4) hi = 0x8F;
        } else return decline(c, "invalid UTF-8");
        if (p + len > end) return need_more(c);
        if (p[1] < lo || p[1] > hi) return decline(c, "invalid UTF-8");
        for (int k = 2; k < len; k++)
            if (p[k] < 0x80 || p[k] > 0xBF) return decline(c, "invalid UTF-8");
        p += len;
    }
}

typedef struct {
    const unsigned char *start;
    Py_ssize_t length;
    int negative, int_digits, frac_digits, exponent;
    int64_t whole; /* the integer part when int_digits <= MAX_INT_DIGITS */
    int frac3;     /* the first three fraction digits, truncated, as 0..999 */
    uint64_t mantissa; /* all digits when int_digits + frac_digits <= 19 */
} Number;

/* A JSON number at the cursor. The text must go on after it (an element never ends in a number),
 * so reaching the end of the text means more is needed. */
static int scan_number(Cursor *c, Number *n) {
    const unsigned char *p = c->p, *end = c->end;
    memset(n, 0, sizeof(*n));
    n->start = p;
    if (*p == '-') {
        n->negative = 1;
        p++;
    }
    if (p >= end) return need_more(c);
    if (*p == '0') {
        n->int_digits = 1;
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            if (n->int_digits < MAX_INT_DIGITS) n->whole = n->whole * 10 + (*p - '0');
            if (n->int_digits + n->frac_digits < 19) n->mantissa = n->mantissa * 10 + (uint64_t)(*p - '0');
            n->int_digits++;
            p++;
        }
    } else return decline(c, "bad number");
    if (p >= end) return need_more(c);
    if (*p == '.') {
        p++;
        if (p >= end) return need_more(c);
        if (!(*p >= '0' && *p <= '9')) return decline(c, "bad number");
        while (p < end && *p >= '0' && *p <= '9') {
            if (n->frac_digits < 3) n->frac3 = n->frac3 * 10 + (*p - '0');
            if (n->int_digits + n->frac_digits < 19) n->mantissa = n->mantissa * 10 + (uint64_t)(*p - '0');
            n->frac_digits++;
            p++;
        }
        if (n->frac_digits == 1) n->frac3 *= 100;
        else if (n->frac_digits == 2) n->frac3 *= 10;
    }
    if (p >= end) return need_more(c);
    if (*p == 'e' || *p == 'E') {
        n->exponent = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end) return need_more(c);
        if (!(*p >= '0' && *p <= '9')) return decline(c, "bad number");
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p >= end) return need_more(c);
    }
    n->length = p - n->start;
    /* A number beyond a double's range (1e400; an integer part of over 308 digits) is declined
     * wherever it stands, read or skipped: the decodings after this one refuse the document for
     * it (orjson: "number is infinity when parsed as double"), and both paths must agree. Only
     * numbers with an exponent or that many digits can be, so the rest cost nothing here. */
    if (n->exponent || n->int_digits > 308) {
        char text[512];
        if (n->length >= (Py_ssize_t)sizeof(text)) return decline(c, "number text too long");
        memcpy(text, n->start, (size_t)n->length);
        text[n->length] = 0;
        if (isinf(strtod(text, NULL))) return decline(c, "number beyond a double's range");
    }
    c->p = p;
    return 0;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Integers up to this are exact doubles (2**53). */
#define EXACT_DOUBLE_INTEGER ((uint64_t)1 << 53)

/* The number's value as the nearest double (what a JSON decoder gives). When all its digits,
 * read as one integer, are an exact double (at most 2**53: every 15-digit number, and Kineto's
 * 16-digit timestamps of µs with three decimals), that integer and the power of ten (exact up to
 * 1e22) are exact doubles and one IEEE division rounds correctly (Clinger's fast path); other
 * numbers go through strtod. */
static int number_value(Cursor *c, const Number *n, double *out) {
    int digits = n->int_digits + n->frac_digits;
    if (!n->exponent && digits <= 19 && n->mantissa <= EXACT_DOUBLE_INTEGER) {
        double v = (double)n->mantissa / POW10[n->frac_digits];
        *out = n->negative ? -v : v;
        return 0;
    }
    char text[512];
    if (n->length >= (Py_ssize_t)sizeof(text)) return decline(c, "number text too long");
    memcpy(text, n->start, (size_t)n->length);
    text[n->length] = 0;
    *out = strtod(text, NULL);
    return 0;
}

static int skip_value(Cursor *c, int depth);

/* The cursor at a container's opener: past it and any white space. 1 when a member follows, 0
 * when the container closes at once (the cursor then past the closer). */
static int container_open(Cursor *c, unsigned char close) {
    c->p++;
    skip_ws(c);
    if (c->p >= c->end) return need_more(c);
    if (*c->p == close) {
        c->p++;
        return 0;
    }
    return 1;
}

/* After a member's value: 1 when a ',' follows (the cursor then at the next member), 0 when the
 * container closes (the cursor past the closer). */
static int container_next(Cursor *c, unsigned char close) {
    skip_ws(c);
    if (c->p >= c->end) return need_more(c);
    if (*c->p == ',') {
        c->p++;
        skip_ws(c);
        if (c->p >= c->end) return need_more(c);
        return 1;
    }
    if (*c->p == close) {
        c->p++;
        return 0;
    }
    return decline(c, "expected ',' or a closing bracket");
}

/* An object member's key and the ':' after it; the cursor lands on the value. With ``key`` the
 * key must be unescaped (an escaped key could spell any key) and is returned. */
static int member_key(Cursor *c, const unsigned char **key, Py_ssize_t *length) {
    int escaped;
    if (*c->p != '"') return decline(c, "object key is not a string");
    const unsigned char *start = c->p + 1;
    if (scan_string(c, &escaped) < 0) return -1;
    if (key) {
        if (escaped) return decline(c, "escaped key");
        *key = start;
        *length = c->p - 1 - start;
    }
    skip_ws(c);
    if (c->p >= c->end) return need_more(c);
    if (*c->p != ':') return decline(c, "missing ':'");
    c->p++;
    skip_ws(c);
    if (c->p >= c->end) return need_more(c);
    return 0;
}

static int skip_container(Cursor *c, int depth, unsigned char close) {
    if (depth > MAX_DEPTH) return decline(c, "nesting too deep");
    int more = container_open(c, close);
    while (more > 0) {
        if (close == '}' && member_key(c, NULL, NULL) < 0) return -1;
        if (skip_value(c, depth + 1) < 0) return -1;
        more = container_next(c, close);
    }
    return more;
}

static int skip_literal(Cursor *c, const char *word, Py_ssize_t n) {
    if (c->end - c->p < n) {
        if (memcmp(c->p, word, (size_t)(c->end - c->p)) == 0) return need_more(c);
        return decline(c, "bad literal");
    }
    if (memcmp(c->p, word, (size_t)n) != 0) return decline(c, "bad literal");
    c->p += n;
    return 0;
}

/* Any JSON value at the cursor (which is at its first byte). */
static int skip_value(Cursor *c, int depth) {
    int escaped;
    Number n;
    switch (*c->p) {
        case '{': return skip_container(c, depth, '}');
        case '[': return skip_container(c, depth, ']');
        case '"': return scan_string(c, &escaped);
        case 't': return skip_literal(c, "true", 4);
        case 'f': return skip_literal(c, "false", 5);
        case 'n': return skip_literal(c, "null", 4);
        default:
            if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) return scan_number(c, &n);
            return decline(c, "unexpected character");
    }
}

/* ----------------------------------------------------------------------------------------- */
/* The fields                                                                                */

/* An integer arg: int64 for integer tokens, -1 for null; *other set for any other value. */
static int integer_arg(Cursor *c, int64_t *out, int *other) {
    if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) {
        Number n;
        if (scan_number(c, &n) < 0) return -1;
        if (n.frac_digits || n.exponent) {
            *other = 1;
            return 0;
        }
        if (n.int_digits > MAX_INT_DIGITS) return decline(c, "integer of more than 18 digits");
        *out = n.negative ? -n.whole : n.whole;
        return 0;
    }
    if (*c->p == 'n') return skip_literal(c, "null", 4);
    *other = 1;
    return skip_value(c, 1);
}

/* Elements of the largest shape of an "Input Dims" value ([[1000, 10], [50], []]): the product
 * of a shape's non-negative integers, clamped at 2**62; a shape holding anything else counts -1;
 * values that are not lists are ignored; -1 when there is no shape. */
static int input_dims(Cursor *c, int64_t *out) {
    *out = -1;
    if (*c->p != '[') return skip_value(c, 1);
    int64_t largest = -1;
    int more = container_open(c, ']');
    while (more > 0) {
        if (*c->p != '[') {
            if (skip_value(c, 2) < 0) return -1;
        } else {
            int64_t count = 1;
            int in_shape = container_open(c, ']');
            if (in_shape == 0) count = -1; /* an empty shape is no input */
            while (in_shape > 0) {
                int is_int = 0;
                Number n;
                if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) {
                    if (scan_number(c, &n) < 0) return -1;
                    if (!n.frac_digits && !n.exponent) {
                        if (n.int_digits > MAX_INT_DIGITS) return decline(c, "integer of more than 18 digits");
                        is_int = 1;
                    }
                } else if (skip_value(c, 3) < 0) {
                    return -1;
                }
                if (count >= 0) {
                    if (!is_int || (n.negative && n.whole != 0)) count = -1;
                    else if (n.whole != 0 && count > MAX_ELEMENTS / n.whole) count = MAX_ELEMENTS;
                    else count *= n.whole;
                }
                in_shape = container_next(c, ']');
            }
            if (in_shape < 0) return -1;
            if (count > largest) largest = count;
        }
        more = container_next(c, ']');
    }
    if (more < 0) return -1;
    *out = largest;
    return 0;
}

#define KEY_IS(s, n, lit) ((n) == (Py_ssize_t)sizeof(lit) - 1 && memcmp((s), (lit), sizeof(lit) - 1) == 0)

typedef struct {
    int64_t *ints;
    double *doubles;
    unsigned char *flags;
    Py_ssize_t capacity;
} Columns;

#define INT_AT(cols, row, i) ((cols)->ints[(Py_ssize_t)(row) * (cols)->capacity + (i)])
#define DOUBLE_AT(cols, row, i) ((cols)->doubles[(Py_ssize_t)(row) * (cols)->capacity + (i)])

/* The args object at the cursor: the integer args, "Input Dims", "Input type" (its raw text,
 * interned by the caller through ``type_start`` / ``type_length``), and where the object lies. */
static int scan_args(Cursor *c, Columns *cols, Py_ssize_t i, const unsigned char **type_start,
                     Py_ssize_t *type_length) {
    if (*c->p != '{') return decline(c, "args is not an object");
    INT_AT(cols, ROW_ARGS_START, i) = c->p - c->base;
    unsigned seen = 0;
    int other = 0;
    int more = container_open(c, '}');
    while (more > 0) {
        const unsigned char *key;
        Py_ssize_t klen;
        if (member_key(c, &key, &klen) < 0) return -1;
        int row = -1;
        unsigned bit = 0;
        if (KEY_IS(key, klen, "Input Dims")) row = ROW_ELEMENTS, bit = 1u << N_INTEGER_ARGS;
        else if (KEY_IS(key, klen, "Input type")) row = ROW_INPUT_TYPES, bit = 1u << (N_INTEGER_ARGS + 1);
        else
            for (int k = 0; k < N_INTEGER_ARGS; k++)
                if (klen == INTEGER_ARGS[k].length && memcmp(key, INTEGER_ARGS[k].text, (size_t)klen) == 0) {
                    row = ROW_FIRST_INTEGER_ARG + k;
                    bit = 1u << k;
                    break;
                }
        if (bit) {
            if (seen & bit) return decline(c, "duplicated key");
            seen |= bit;
        }
        if (row == ROW_ELEMENTS) {
            if (input_dims(c, &INT_AT(cols, ROW_ELEMENTS, i)) < 0) return -1;
        } else if (row == ROW_INPUT_TYPES) {
            const unsigned char *start = c->p;
            if (skip_value(c, 2) < 0) return -1;
            *type_start = start;
            *type_length = c->p - start;
        } else if (row >= 0) {
            if (integer_arg(c, &INT_AT(cols, row, i), &other) < 0) return -1;
        } else if (skip_value(c, 2) < 0) {
            return -1;
        }
        more = container_next(c, '}');
    }
    if (more < 0) return -1;
    INT_AT(cols, ROW_ARGS_END, i) = c->p - c->base;
    if (other) cols->flags[i] |= FLAG_ARGS_OTHER;
    return 0;
}

/* The ts value at the cursor (a number without exponent). */
static int scan_ts(Cursor *c, Columns *cols, Py_ssize_t i) {
    if (!(*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) return decline(c, "ts is not a number");
    Number n;
    if (scan_number(c, &n) < 0) return -1;
    if (n.exponent) return decline(c, "ts with an exponent");
    if (n.int_digits > MAX_INT_DIGITS) return decline(c, "ts of more than 18 digits");
    double v;
    if (number_value(c, &n, &v) < 0) return -1;
    DOUBLE_AT(cols, ROW_TS, i) = v;
    unsigned char flags = FLAG_TS;
    if (n.int_digits <= 16 && n.length <= 40) {
        flags |= FLAG_TS_PLAIN;
        int64_t whole = n.whole;
        if (whole >= MAX_US_WHOLE) {
            flags |= FLAG_TS_BEYOND;
            whole = 0;
        }
        int64_t ns = whole * 1000 + n.frac3;
        INT_AT(cols, ROW_TS_NS, i) = n.negative ? -ns : ns;
    }
    cols->flags[i] |= flags;
    return 0;
}

/* The dur value at the cursor (a number without exponent, or null). */
static int scan_dur(Cursor *c, Columns *cols, Py_ssize_t i) {
    if (*c->p == 'n') return skip_literal(c, "null", 4);
    if (!(*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) return decline(c, "dur is not a number");
    Number n;
    if (scan_number(c, &n) < 0) return -1;
    if (n.exponent) return decline(c, "dur with an exponent");
    if (n.int_digits > MAX_INT_DIGITS) return decline(c, "dur of more than 18 digits");
    return number_value(c, &n, &DOUBLE_AT(cols, ROW_DUR, i));
}

/* One array element (the cursor at its '{'). */
static int scan_event(Cursor *c, Columns *cols, Py_ssize_t i, Interner *tables) {
    const unsigned char *token_start[N_INTERNED] = {0};
    Py_ssize_t token_length[N_INTERNED] = {0};
    unsigned seen = 0;
    for (int row = 0; row < INT_ROWS; row++) INT_AT(cols, row, i) = -1;
    INT_AT(cols, ROW_TS_NS, i) = 0;
    DOUBLE_AT(cols, ROW_TS, i) = Py_NAN;
    DOUBLE_AT(cols, ROW_DUR, i) = 0.0;
    cols->flags[i] = 0;
    if (*c->p != '{') return decline(c, "an array element is not an object");
    int more = container_open(c, '}');
    while (more > 0) {
        const unsigned char *key;
        Py_ssize_t klen;
        if (member_key(c, &key, &klen) < 0) return -1;
        int field = -1;
        unsigned bit = 0;
        if (KEY_IS(key, klen, "ph")) field = ROW_PH, bit = 1;
        else if (KEY_IS(key, klen, "cat")) field = ROW_CAT, bit = 2;
        else if (KEY_IS(key, klen, "name")) field = ROW_NAME, bit = 4;
        else if (KEY_IS(key, klen, "pid")) field = ROW_PID, bit = 8;
        else if (KEY_IS(key, klen, "tid")) field = ROW_TID, bit = 16;
        else if (KEY_IS(key, klen, "ts")) bit = 32;
        else if (KEY_IS(key, klen, "dur")) bit = 64;
        else if (KEY_IS(key, klen, "args")) bit = 128;
        if (bit) {
            if (seen & bit) return decline(c, "duplicated key");
            seen |= bit;
        }
        if (field >= 0) {
            /* Interned as its raw text: strings, numbers and literals (the caller's typed decoding
             * accepts or refuses each distinct token); a container is refused here. */
            if (*c->p == '{' || *c->p == '[') return decline(c, "a container where a name or id belongs");
            const unsigned char *start = c->p;
            if (skip_value(c, 1) < 0) return -1;
            token_start[field] = start;
            token_length[field] = c->p - start;
        } else if (bit == 32) {
            if (scan_ts(c, cols, i) < 0) return -1;
        } else if (bit == 64) {
            if (scan_dur(c, cols, i) < 0) return -1;
        } else if (bit == 128) {
            if (scan_args(c, cols, i, &token_start[ROW_INPUT_TYPES], &token_length[ROW_INPUT_TYPES]) < 0) return -1;
        } else if (skip_value(c, 1) < 0) {
            return -1;
        }
        more = container_next(c, '}');
    }
    if (more < 0) return -1;
    for (int field = 0; field < N_INTERNED; field++) {
        if (!token_start[field]) continue;
        Py_ssize_t code = intern(&tables[field], token_start[field], token_length[field]);
        if (code < 0) return -2; /* out of memory */
        INT_AT(cols, field, i) = code;
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf, ints, doubles, flags;
    Py_ssize_t pos, end;
    int mode;
    if (!PyArg_ParseTuple(args, "y*nniw*w*w*", &buf, &pos, &end, &mode, &ints, &doubles, &flags)) return NULL;
    PyObject *result = NULL;
    Interner tables[N_INTERNED];
    int made = 0;
    Columns cols = {ints.buf, doubles.buf, flags.buf, flags.len};
    if (ints.len < (Py_ssize_t)(INT_ROWS * sizeof(int64_t)) * cols.capacity ||
        doubles.len < (Py_ssize_t)(DOUBLE_ROWS * sizeof(double)) * cols.capacity || end < 0 || end > buf.len ||
        pos < 0 || pos > end || mode < AT_ELEMENT || mode > AT_SEPARATOR) {
        PyErr_SetString(PyExc_ValueError, "scan: output buffers too small, or position or mode out of range");
        goto done;
    }
    for (; made < N_INTERNED; made++)
        if (interner_init(&tables[made]) < 0) {
            made++;
            PyErr_NoMemory();
            goto done;
        }
    Cursor c = {buf.buf, (const unsigned char *)buf.buf + pos, (const unsigned char *)buf.buf + end, NULL, 0};
    Py_ssize_t count = 0;
    int status, out_of_memory = 0;
    /* The text and the outputs are buffers held above (a bytearray cannot be resized meanwhile):
     * the scan needs no Python object, so other threads run while it does. */
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        skip_ws(&c);
        if (c.p >= c.end) {
            status = MORE;
            break;
        }
        if (mode == AT_SEPARATOR) {
            if (*c.p == ']') {
                c.p++;
                status = END;
                break;
            }
            if (*c.p != ',') {
                c.why = "expected ',' or ']' after an element";
                status = DECLINED;
                break;
            }
            c.p++;
            mode = AT_ELEMENT;
            continue;
        }
        if (mode == AT_ARRAY_START && *c.p == ']') {
            c.p++;
            status = END;
            break;
        }
        if (count == cols.capacity) {
            status = FULL;
            break;
        }
        const unsigned char *element = c.p;
        int rc = scan_event(&c, &cols, count, tables);
        if (rc == -2) {
            out_of_memory = 1;
            status = DECLINED;
            break;
        }
        if (rc < 0) {
            c.p = element;
            status = c.more ? MORE : DECLINED;
            break;
        }
        count++;
        mode = AT_SEPARATOR;
    }
    Py_END_ALLOW_THREADS
    if (out_of_memory) {
        PyErr_NoMemory();
        goto done;
    }
    {
        PyObject *tokens = PyTuple_New(N_INTERNED);
        if (!tokens) goto done;
        for (int k = 0; k < N_INTERNED; k++) {
            PyObject *list = interner_tokens(&tables[k]);
            if (!list) {
                Py_DECREF(tokens);
                goto done;
            }
            PyTuple_SET_ITEM(tokens, k, list);
        }
        result = Py_BuildValue("(inniNs)", status, (Py_ssize_t)(c.p - c.base), count, mode, tokens,
                               status == DECLINED ? c.why : "");
    }
done:
    for (int k = 0; k < made; k++) interner_free(&tables[k]);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&ints);
    PyBuffer_Release(&doubles);
    PyBuffer_Release(&flags);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Scan trace events into column buffers (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kineto_scan",
    "Compiled scanning of a Kineto trace's event array into columns.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kineto_scan(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "INT_ROWS", INT_ROWS) < 0 || PyModule_AddIntConstant(m, "DOUBLE_ROWS", DOUBLE_ROWS) < 0)
        return NULL;
    return m;
}
