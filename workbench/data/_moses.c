/* The Moses rules of workbench/data/moses.py (English, no escaping), compiled: the same output, each sentence in
 * a few linear passes over its code points instead of Python regular expressions over the whole batch, and the
 * sentences shared out among threads that run without the interpreter's lock.
 *
 * Each pass below is one of sacremoses' substitutions, applied as Python's re.sub applies it (leftmost match first,
 * matches never overlap, scanning goes on after the consumed characters), so the consuming comma and apostrophe
 * rules need no special case here. moses.py configures the character classes and non-breaking prefixes from
 * moses_en.json once (configure), then calls tokenise(sentences, lower, threads).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifndef _WIN32
#include <pthread.h>
#endif

enum { ALNUM, NUMBER, ALPHA, LOWER, N_CLASSES };
#define N_CODES 0x110000
static uint8_t *classes[N_CLASSES]; /* one bit per code point */

/* the non-breaking prefixes one after another, where each ends, and whether it is numeric-only (Moses keeps the
 * period of those only before a number) */
static Py_UCS4 *prefix_text;
static Py_ssize_t *prefix_end, n_prefixes;
static uint8_t *prefix_numeric;
#define LONGEST_PREFIX 31
static uint64_t starts_prefix[LONGEST_PREFIX + 1][2]; /* [length][c >> 6] bit c & 63: a prefix of that length starts
                                                         with ASCII c (most tokens ending in a period need no lookup) */

static inline int in(int cls, Py_UCS4 c) { return (classes[cls][c >> 3] >> (c & 7)) & 1; }

typedef struct { Py_UCS4 *s; Py_ssize_t n, cap; } Buffer;

/* room for `size` code points in `b` (its content is dropped; -1: no memory): the raw allocator, which needs no
 * interpreter lock */
static int reserve(Buffer *b, Py_ssize_t size) {
    if (size > b->cap) {
        Py_UCS4 *s = PyMem_RawRealloc(b->s, (size_t)size * sizeof(Py_UCS4));
        if (s == NULL) return -1;
        b->s = s, b->cap = size;
    }
    b->n = 0;
    return 0;
}

static inline void put(Buffer *b, Py_UCS4 c) { b->s[b->n++] = c; }
static inline void puts4(Buffer *b, const char *text) { while (*text) put(b, (Py_UCS4)*text++); }
static inline int space(Py_UCS4 c) { return c == ' '; }

static inline int starts(const Py_UCS4 *s, Py_ssize_t n, const char *word) {
    Py_ssize_t k = 0;
    for (; word[k]; k++) if (k >= n || s[k] != (Py_UCS4)word[k]) return 0;
    return 1;
}

/* ([^IsAlnum\s.'`,-]) -> " \1 " */
static void pad_not_alnum(const Py_UCS4 *s, Py_ssize_t n, Buffer *out) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = s[i];
        if (space(c) || in(ALNUM, c) || c == '.' || c == '\'' || c == '`' || c == ',' || c == '-') put(out, c);
        else put(out, ' '), put(out, c), put(out, ' ');
    }
}

/* a run of k >= 2 dots -> " " + "DOT" * k + "MULTI", and a space after unless the run ends the text */
static void multidots(const Py_UCS4 *s, Py_ssize_t n, Buffer *out) {
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t end = i;
        while (end < n && s[end] == '.') end++;
        if (end - i < 2) { put(out, s[i++]); continue; }
        put(out, ' ');
        for (Py_ssize_t k = i; k < end; k++) puts4(out, "DOT");
        puts4(out, "MULTI");
        if (end < n) put(out, ' ');
        i = end;
    }
}

/* ([^IsN]), -> "\1 , "  then  ,([^IsN]) -> " , \1"  then  ([IsN]),$ -> "\1 , " */
static void commas_after(const Py_UCS4 *s, Py_ssize_t n, Buffer *out) {
    for (Py_ssize_t i = 0; i < n; i++) {
        put(out, s[i]);
        if (i + 1 < n && s[i + 1] == ',' && !in(NUMBER, s[i])) puts4(out, " , "), i++;
    }
}

static void commas_before(const Py_UCS4 *s, Py_ssize_t n, Buffer *out) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] == ',' && i + 1 < n && !in(NUMBER, s[i + 1])) puts4(out, " , "), put(out, s[++i]);
        else put(out, s[i]);
    }
}

static void comma_at_end(const Py_UCS4 *s, Py_ssize_t n, Buffer *out) {
    int split = n >= 2 && s[n - 1] == ',' && in(NUMBER, s[n - 2]);
    memcpy(out->s, s, (size_t)(split ? n - 1 : n) * sizeof(Py_UCS4));
    out->n = split ? n - 1 : n;
    if (split) puts4(out, " , ");
}

/* English apostrophes: (A)'(B) -> "\1" + middle + "\2", for the five (A, B, middle) of sacremoses, in order */
enum { NOT_ALPHA, NOT_ALPHA_NOR_NUMBER, IS_ALPHA, IS_NUMBER, IS_S };

static inline int holds(int test, Py_UCS4 c) {
    switch (test) {
    case NOT_ALPHA: return !in(ALPHA, c);
    case NOT_ALPHA_NOR_NUMBER: return !in(ALPHA, c) && !in(NUMBER, c);
    case IS_ALPHA: return in(ALPHA, c);
    case IS_NUMBER: return in(NUMBER, c);
    default: return c == 's';
    }
}

static void apostrophes(const Py_UCS4 *s, Py_ssize_t n, Buffer *out, int before, int after, const char *middle) {
    for (Py_ssize_t i = 0; i < n; i++) {
        put(out, s[i]);
        if (i + 2 < n && s[i + 1] == '\'' && holds(before, s[i]) && holds(after, s[i + 2]))
            puts4(out, middle), put(out, s[i + 2]), i += 2;
    }
}

/* whether s[0:n] is a non-breaking prefix, numeric-only (`numeric` 1) or not (0) */
static int is_prefix(const Py_UCS4 *s, Py_ssize_t n, int numeric) {
    if (n > LONGEST_PREFIX || (s[0] < 128 && !((starts_prefix[n][s[0] >> 6] >> (s[0] & 63)) & 1))) return 0;
    for (Py_ssize_t k = 0, start = 0; k < n_prefixes; start = prefix_end[k++])
        if (prefix_numeric[k] == numeric && prefix_end[k] - start == n &&
            !memcmp(prefix_text + start, s, (size_t)n * sizeof(Py_UCS4))) return 1;
    return 0;
}

/* Moses' non-breaking-prefix rule for a token prefix + "." followed by `next` (NULL at the end): whether the token
 * keeps its period */
static int keeps_period(const Py_UCS4 *prefix, Py_ssize_t n, const Py_UCS4 *next) {
    int dot = 0, alpha = 0;
    for (Py_ssize_t i = 0; i < n; i++) dot |= prefix[i] == '.', alpha |= in(ALPHA, prefix[i]);
    return (dot && alpha) || (next != NULL && in(LOWER, next[0])) || is_prefix(prefix, n, 0) ||
           (next != NULL && next[0] >= '0' && next[0] <= '9' && is_prefix(prefix, n, 1));
}

/* tokens (split at spaces) ending in a period keep it or get " ." per keeps_period; joined by single spaces */
static void split_periods(const Py_UCS4 *s, Py_ssize_t n, Buffer *out) {
    Py_ssize_t i = 0;
    while (i < n && space(s[i])) i++;
    while (i < n) {
        Py_ssize_t end = i, next;
        while (end < n && !space(s[end])) end++;
        for (next = end; next < n && space(s[next]); next++) {}
        if (out->n > 0) put(out, ' ');
        memcpy(out->s + out->n, s + i, (size_t)(end - i) * sizeof(Py_UCS4));
        out->n += end - i;
        if (end - i >= 2 && s[end - 1] == '.' && !keeps_period(s + i, end - i - 1, next < n ? s + next : NULL))
            out->s[out->n - 1] = ' ', put(out, '.');
        i = next;
    }
}

/* \.' ?$ -> " . ' " (the text has no space at its end here) */
static void trailing_dot_apostrophe(const Py_UCS4 *s, Py_ssize_t n, Buffer *out) {
    int split = n >= 2 && s[n - 2] == '.' && s[n - 1] == '\'';
    memcpy(out->s, s, (size_t)(split ? n - 2 : n) * sizeof(Py_UCS4));
    out->n = split ? n - 2 : n;
    if (split) puts4(out, " . ' ");
}

/* (?:DOT)+MULTI -> as many dots as DOTs */
static void restore_multidots(const Py_UCS4 *s, Py_ssize_t n, Buffer *out) {
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t k = i;
        while (starts(s + k, n - k, "DOT")) k += 3;
        if (k > i && starts(s + k, n - k, "MULTI")) {
            for (Py_ssize_t d = i; d < k; d += 3) put(out, '.');
            i = k + 5;
        } else put(out, s[i++]);
    }
}

/* what a sentence holds that some pass acts on (a pass that would find nothing is skipped) */
enum { PAD = 1, DOTS = 2, COMMA = 4, APOSTROPHE = 8, MULTI = 16 };

/* the rules on one sentence: from `a` (holding it) through `b` and back; the result ends in `a` (-1: no memory).
 * None of the passes makes a comma, an apostrophe, a run of dots or "MULTI" where the sentence had none, so the
 * flags of the sentence hold throughout. */
static int rules(Buffer *a, Buffer *b, int flags) {
    Buffer t;
#define STEP(growth, call) \
    do { if (reserve(b, (growth) * a->n + 8) < 0) return -1; call; t = *a, *a = *b, *b = t; } while (0)
    if (flags & PAD) STEP(3, pad_not_alnum(a->s, a->n, b));
    if (flags & DOTS) STEP(7, multidots(a->s, a->n, b));
    if (flags & COMMA) {
        STEP(2, commas_after(a->s, a->n, b));
        STEP(2, commas_before(a->s, a->n, b));
        STEP(1, comma_at_end(a->s, a->n, b));
    }
    static const struct { int before, after; const char *middle; } rule[] = {
        {NOT_ALPHA, NOT_ALPHA, " ' "}, {NOT_ALPHA_NOR_NUMBER, IS_ALPHA, " ' "}, {IS_ALPHA, NOT_ALPHA, " ' "},
        {IS_ALPHA, IS_ALPHA, " '"}, {IS_NUMBER, IS_S, " '"}};
    for (size_t r = 0; (flags & APOSTROPHE) && r < sizeof rule / sizeof rule[0]; r++)
        STEP(2, apostrophes(a->s, a->n, b, rule[r].before, rule[r].after, rule[r].middle));
    STEP(2, split_periods(a->s, a->n, b));  /* always: it also makes the spaces single */
    if (flags & APOSTROPHE) STEP(1, trailing_dot_apostrophe(a->s, a->n, b));
    if (flags & (DOTS | MULTI)) STEP(1, restore_multidots(a->s, a->n, b));
#undef STEP
    return 0;
}

/* a sentence's code points into `a` as Moses first makes them (each run of whitespace one space, then the control
 * characters below U+0020 dropped, no space at either end), and its flags (-1: no memory) */
static int load(int kind, const void *data, Py_ssize_t n, Buffer *a) {
    if (reserve(a, n + 1) < 0) return -1;
    Py_UCS4 *s = a->s;
    Py_ssize_t j = 0;
    int flags = 0, gap = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (Py_UNICODE_ISSPACE(c)) { gap = 1; continue; }
        if (c < 0x20) continue;
        if (gap && j > 0) s[j++] = ' ';
        gap = 0, s[j++] = c;  /* the flags from what is written (Moses drops a control character between dots) */
        if (c == '.') flags |= j > 1 && s[j - 2] == '.' ? DOTS : 0;
        else if (c == ',') flags |= COMMA;
        else if (c == '\'') flags |= APOSTROPHE;
        else if (c == 'I') flags |= j >= 5 && starts(s + j - 5, 5, "MULTI") ? MULTI : 0;
        else if (!in(ALNUM, c) && c != '`' && c != '-') flags |= PAD;
    }
    a->n = j;
    return flags;
}

/* Latin-1 lower-cased in place as str.lower does (one code point for one there); 0 where the text holds others
 * (str.lower does those: its special cases, final sigma) */
static int lower_latin1(Py_UCS4 *s, Py_ssize_t n) {
    Py_UCS4 high = 0;
    for (Py_ssize_t i = 0; i < n; i++) high |= s[i];
    if (high >= 0x100) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 0xC0 && s[i] <= 0xDE && s[i] != 0xD7)) s[i] += 32;
    return 1;
}

/* one thread's share: sentences [first, last) of `items`, their results one after another in `text` */
typedef struct {
    PyObject **items;
    Py_ssize_t first, last, *ends;
    uint8_t *unlowered; /* 1: str.lower still to do */
    int lower, failed;
    Buffer text;
} Share;

static void *work(void *arg) {
    Share *share = arg;
    Buffer a = {NULL, 0, 0}, b = {NULL, 0, 0};
    Py_ssize_t size = 0;
    for (Py_ssize_t i = share->first; i < share->last && !share->failed; i++) {
        PyObject *item = share->items[i];
        int flags = load(PyUnicode_KIND(item), PyUnicode_DATA(item), PyUnicode_GET_LENGTH(item), &a);
        if (flags < 0 || rules(&a, &b, flags) < 0) { share->failed = 1; break; }
        share->unlowered[i - share->first] = share->lower && !lower_latin1(a.s, a.n);
        if (size + a.n > share->text.cap) {
            Py_ssize_t cap = 2 * (size + a.n) + 1024;
            Py_UCS4 *grown = PyMem_RawRealloc(share->text.s, (size_t)cap * sizeof(Py_UCS4));
            if (grown == NULL) { share->failed = 1; break; }
            share->text.s = grown, share->text.cap = cap;
        }
        memcpy(share->text.s + size, a.s, (size_t)a.n * sizeof(Py_UCS4));
        share->ends[i - share->first] = size += a.n;
    }
    PyMem_RawFree(a.s), PyMem_RawFree(b.s);
    return NULL;
}

/* run the shares, all but the first in threads of their own (none on Windows: there the first does them all) */
static void run(Share *shares, int count) {
#ifndef _WIN32
    pthread_t threads[64];
    int started[64] = {0};
    for (int t = 1; t < count; t++) started[t] = pthread_create(&threads[t], NULL, work, &shares[t]) == 0;
    work(&shares[0]);
    for (int t = 1; t < count; t++) {
        if (started[t]) pthread_join(threads[t], NULL);
        else work(&shares[t]);
    }
#else
    for (int t = 0; t < count; t++) work(&shares[t]);
#endif
}

/* the results as a list of str (NULL: error) */
static PyObject *results(Share *shares, int count, Py_ssize_t total) {
    PyObject *list = PyList_New(total);
    for (int t = 0; list != NULL && t < count; t++) {
        Share *share = &shares[t];
        for (Py_ssize_t i = share->first, start = 0; i < share->last; start = share->ends[i++ - share->first]) {
            Py_ssize_t k = i - share->first;
            PyObject *text = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, share->text.s + start,
                                                       share->ends[k] - start);
            if (text != NULL && share->unlowered[k]) Py_SETREF(text, PyObject_CallMethod(text, "lower", NULL));
            if (text == NULL) { Py_CLEAR(list); break; }
            PyList_SET_ITEM(list, i, text);
        }
    }
    return list;
}

static PyObject *tokenise(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *names[] = {"sentences", "lower", "threads", NULL};
    PyObject *sentences, *list = NULL;
    int lower = 0, threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pi:tokenise", names, &sentences, &lower, &threads))
        return NULL;
    if (classes[0] == NULL) return PyErr_Format(PyExc_RuntimeError, "_moses.configure() was not called");
    PyObject *seq = PySequence_Fast(sentences, "tokenise takes a sequence of str");
    if (seq == NULL) return NULL;
    Py_ssize_t total = PySequence_Fast_GET_SIZE(seq), held = 0;
    int count = threads < 1 ? 1 : threads > 64 ? 64 : threads;
    if (count > total / 256) count = total >= 512 ? (int)(total / 256) : 1;  /* 256 sentences a thread at least */
    /* the sentences, each held (another thread may change a list while the rules run without the lock) */
    PyObject **items = PyMem_Malloc(((size_t)total + 1) * sizeof(PyObject *));
    Py_ssize_t *ends = PyMem_Malloc(((size_t)total + 1) * sizeof(Py_ssize_t));
    uint8_t *unlowered = PyMem_Malloc((size_t)total + 1);
    Share shares[64];
    memset(shares, 0, sizeof shares);
    if (items == NULL || ends == NULL || unlowered == NULL) { PyErr_NoMemory(); goto done; }
    for (; held < total; held++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, held);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "tokenise takes str sentences; item %zd is %.80s", held,
                         Py_TYPE(item)->tp_name);
            goto done;
        }
        Py_INCREF(item);
        items[held] = item;
    }
    for (int t = 0; t < count; t++)
        shares[t] = (Share){items, total * t / count, total * (t + 1) / count, ends + total * t / count,
                            unlowered + total * t / count, lower, 0, {NULL, 0, 0}};
    Py_BEGIN_ALLOW_THREADS
    run(shares, count);
    Py_END_ALLOW_THREADS
    int failed = 0;
    for (int t = 0; t < count; t++) failed |= shares[t].failed;
    list = failed ? PyErr_NoMemory() : results(shares, count, total);
done:
    for (int t = 0; t < count; t++) PyMem_RawFree(shares[t].text.s);
    while (held > 0) Py_DECREF(items[--held]);
    PyMem_Free(items), PyMem_Free(ends), PyMem_Free(unlowered);
    Py_DECREF(seq);
    return list;
}

/* the prefixes of one set into the table (numeric: whether they are the numeric-only ones) */
static int add_prefixes(PyObject *set, int numeric, Py_ssize_t *size) {
    PyObject *it = PyObject_GetIter(set), *item;
    if (it == NULL) return -1;
    while ((item = PyIter_Next(it)) != NULL) {
        Py_ssize_t n = PyUnicode_Check(item) ? PyUnicode_GET_LENGTH(item) : 0;
        if (n == 0 || n > LONGEST_PREFIX) {
            Py_DECREF(item), Py_DECREF(it);
            PyErr_Format(PyExc_ValueError, "non-breaking prefixes are str of 1 to %d characters", LONGEST_PREFIX);
            return -1;
        }
        prefix_text = PyMem_Realloc(prefix_text, (size_t)(*size + n) * sizeof(Py_UCS4));
        prefix_end = PyMem_Realloc(prefix_end, (size_t)(n_prefixes + 1) * sizeof(Py_ssize_t));
        prefix_numeric = PyMem_Realloc(prefix_numeric, (size_t)(n_prefixes + 1));
        if (prefix_text == NULL || prefix_end == NULL || prefix_numeric == NULL) {
            Py_DECREF(item), Py_DECREF(it);
            PyErr_NoMemory();
            return -1;
        }
        PyUnicode_AsUCS4(item, prefix_text + *size, n, 0);
        Py_UCS4 first = prefix_text[*size];
        if (first < 128) starts_prefix[n][first >> 6] |= (uint64_t)1 << (first & 63);
        prefix_end[n_prefixes] = *size += n;
        prefix_numeric[n_prefixes++] = (uint8_t)numeric;
        Py_DECREF(item);
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* configure(ranges: {class name: [(first, last), ...]}, nonbreaking: frozenset, numeric_only: frozenset): before
 * any tokenise; a later call changes nothing */
static PyObject *configure(PyObject *Py_UNUSED(self), PyObject *args) {
    static const char *names[N_CLASSES] = {"IsAlnum", "IsN", "IsAlpha", "IsLower"};
    PyObject *ranges, *breaking, *numeric;
    if (!PyArg_ParseTuple(args, "O!O!O!:configure", &PyDict_Type, &ranges, &PyFrozenSet_Type, &breaking,
                          &PyFrozenSet_Type, &numeric)) return NULL;
    if (classes[0] != NULL) Py_RETURN_NONE;  /* the first tables stay: a reloaded moses.py gives the same, and
                                                a tokenise running without the lock may be reading them */
    for (int c = 0; c < N_CLASSES; c++) {
        PyObject *list = PyDict_GetItemString(ranges, names[c]);
        if (list == NULL || !PyList_Check(list)) return PyErr_Format(PyExc_ValueError, "no %s ranges", names[c]);
        uint8_t *bits = PyMem_Calloc(N_CODES / 8, 1);
        if (bits == NULL) return PyErr_NoMemory();
        for (Py_ssize_t r = 0; r < PyList_GET_SIZE(list); r++) {
            unsigned long first, last;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(list, r), "kk", &first, &last) || last >= N_CODES) {
                PyMem_Free(bits);
                if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "%s: a range beyond U+10FFFF", names[c]);
                return NULL;
            }
            for (unsigned long code = first; code <= last; code++) bits[code >> 3] |= (uint8_t)(1 << (code & 7));
        }
        classes[c] = bits;
    }
    Py_ssize_t size = 0;
    if (add_prefixes(breaking, 0, &size) < 0 || add_prefixes(numeric, 1, &size) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "Set the character classes and the non-breaking prefixes (the first call)."},
    {"tokenise", (PyCFunction)(void (*)(void))tokenise, METH_VARARGS | METH_KEYWORDS,
     "tokenise(sentences, lower=False, threads=1): the Moses-tokenised sentences (tokens joined by single spaces)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_moses", "The compiled Moses rules of moses.py.", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__moses(void) { return PyModule_Create(&module); }
