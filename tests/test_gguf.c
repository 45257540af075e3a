/* test_gguf.c - the GGUF reader on the real model files, and writer -> reader round trips. */
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "gguf_write.h"
#include "harness.h"
#include "types.h"

static void check_str(struct vkllm__str s, const char *want) {
    if (!vkllm__str_eq(s, want)) FAILF("string '%.*s' != '%s'", (int)(s.len > 200 ? 200 : s.len), s.ptr, want);
}

// --- real files ----------------------------------------------------------------------------

static void test_stories260k(void) {
    struct vkllm__gguf *g;
    ASSERT_OK(vkllm__gguf_open(vkllm_test_model("stories260K.gguf"), &g));
    ASSERT_EQ(g->version, 3);
    ASSERT_EQ(g->n_kv, 19);
    ASSERT_EQ(g->n_tensors, 48);
    ASSERT_EQ(g->alignment, 32);
    ASSERT_EQ(g->size, 1185376);
    ASSERT_EQ(g->data_offset % 32, 0);

    uint64_t u;
    int64_t i;
    double f;
    struct vkllm__str s;
    ASSERT_OK(vkllm__gguf_get_u64(g, "llama.context_length", &u));
    ASSERT_EQ(u, 2048);
    ASSERT_OK(vkllm__gguf_get_u64(g, "llama.embedding_length", &u));
    ASSERT_EQ(u, 64);
    ASSERT_OK(vkllm__gguf_get_u64(g, "llama.block_count", &u));
    ASSERT_EQ(u, 5);
    ASSERT_OK(vkllm__gguf_get_u64(g, "llama.attention.head_count_kv", &u));
    ASSERT_EQ(u, 4);
    ASSERT_OK(vkllm__gguf_get_u64(g, "llama.feed_forward_length", &u));
    ASSERT_EQ(u, 172);
    ASSERT_OK(vkllm__gguf_get_i64(g, "tokenizer.ggml.seperator_token_id", &i));
    ASSERT_EQ(i, 4294967295LL);
    ASSERT_OK(vkllm__gguf_get_f64(g, "llama.attention.layer_norm_rms_epsilon", &f));
    ASSERT_NEAR(f, 1e-5, 1e-12);
    ASSERT_OK(vkllm__gguf_get_str(g, "general.architecture", &s));
    check_str(s, "llama");
    ASSERT_OK(vkllm__gguf_get_str(g, "tokenizer.ggml.model", &s));
    check_str(s, "llama");

    /* Absent: NOT_FOUND and no error text. Wrong type: BAD_FORMAT naming the key. */
    vkllm__err(VKLLM_STATUS_OK, "%s", "");
    ASSERT_STATUS(vkllm__gguf_get_u64(g, "general.alignment", &u), VKLLM_STATUS_NOT_FOUND);
    ASSERT_STREQ(vkllm_last_error(), "");
    ASSERT_STATUS(vkllm__gguf_get_str(g, "llama.block_count", &s), VKLLM_STATUS_BAD_FORMAT);
    ASSERT(strstr(vkllm_last_error(), "llama.block_count") != NULL);
    int b;
    ASSERT_STATUS(vkllm__gguf_get_bool(g, "general.name", &b), VKLLM_STATUS_BAD_FORMAT);
    ASSERT_STATUS(vkllm__gguf_get_u64(g, "general.name", &u), VKLLM_STATUS_BAD_FORMAT);

    const struct vkllm__gguf_kv *kv;
    ASSERT_OK(vkllm__gguf_get_arr(g, "tokenizer.ggml.tokens", VKLLM__GGUF_STRING, &kv));
    ASSERT_EQ(kv->arr_n, 512);
    ASSERT_STATUS(vkllm__gguf_get_arr(g, "tokenizer.ggml.tokens", VKLLM__GGUF_F32, &kv), VKLLM_STATUS_BAD_FORMAT);
    ASSERT_OK(vkllm__gguf_get_arr(g, "tokenizer.ggml.tokens", VKLLM__GGUF_VTYPE_COUNT_, &kv));
    struct vkllm__str *toks;
    ASSERT_OK(vkllm__gguf_arr_strings(kv, &toks));
    check_str(toks[0], "<unk>");
    check_str(toks[1], "<s>");
    check_str(toks[2], "</s>");
    check_str(toks[3], "<0x00>");
    /* The iterator walks the same strings. */
    struct vkllm__gguf_arr_iter it;
    struct vkllm__gguf_kv e;
    uint64_t n = 0;
    vkllm__gguf_arr_iter_init(&it, kv);
    while (vkllm__gguf_arr_iter_next(&it, &e)) {
        ASSERT_EQ(e.type, VKLLM__GGUF_STRING);
        ASSERT(e.v.s.ptr == toks[n].ptr && e.v.s.len == toks[n].len);
        n++;
    }
    ASSERT_EQ(n, 512);
    vkllm__free(toks);
    ASSERT_OK(vkllm__gguf_get_arr(g, "tokenizer.ggml.scores", VKLLM__GGUF_F32, &kv));
    ASSERT_EQ(kv->arr_n, 512);
    ASSERT_NEAR(vkllm__gguf_arr_f64(kv, 300), -41.0, 0);
    ASSERT_OK(vkllm__gguf_get_arr(g, "tokenizer.ggml.token_type", VKLLM__GGUF_I32, &kv));
    ASSERT_EQ(vkllm__gguf_arr_i64(kv, 0), 2); /* <unk> is UNKNOWN (2) */
    ASSERT_EQ(vkllm__gguf_arr_i64(kv, 1), 3); /* <s> is CONTROL (3) */

    /* Tensors: all F32, in the file, aligned; the embedding equals the llama2.c checkpoint's
     * first table (stories260K.bin was built from this file: 28-byte header, then the table). */
    uint64_t total = 0;
    for (uint64_t k = 0; k < g->n_tensors; k++) {
        const struct vkllm__gguf_tensor *t = &g->tensors[k];
        ASSERT_EQ(t->type, VKLLM__TYPE_F32);
        ASSERT_EQ(t->offset % 32, 0);
        ASSERT_EQ(t->nbytes, 4 * t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        ASSERT((const uint8_t *)t->data + t->nbytes <= g->base + g->size);
        total += t->nbytes;
    }
    ASSERT(total <= g->size - g->data_offset);
    const struct vkllm__gguf_tensor *t = vkllm__gguf_find_tensor(g, "token_embd.weight");
    ASSERT(t != NULL);
    ASSERT_EQ(t->n_dims, 2);
    ASSERT_EQ(t->ne[0], 64);
    ASSERT_EQ(t->ne[1], 512);
    ASSERT_EQ(t->nbytes, 131072);
    t = vkllm__gguf_find_tensor(g, "blk.4.ffn_down.weight");
    ASSERT(t != NULL);
    ASSERT_EQ(t->ne[0], 172);
    ASSERT_EQ(t->ne[1], 64);
    ASSERT(vkllm__gguf_find_tensor(g, "blk.5.ffn_down.weight") == NULL);
    ASSERT(vkllm__gguf_find_tensor(g, "output.weight") != NULL);

    const char *bin = vkllm_test_model("stories260K.bin");
    size_t blen;
    char *bdata = vkllm_test_read_file(bin, &blen);
    t = vkllm__gguf_find_tensor(g, "token_embd.weight");
    ASSERT(blen > 28 + t->nbytes);
    ASSERT(memcmp(bdata + 28, t->data, (size_t)t->nbytes) == 0);
    free(bdata);
    vkllm__gguf_close(g);
}

static void test_vocab_files(void) {
    static const struct {
        const char *file, *model;
        uint64_t n_tokens, n_merges;
        const char *tok0;
    } v[] = {
        {"ggml-vocab-bert-bge.gguf", "bert", 30522, 0, "[PAD]"},
        {"ggml-vocab-gpt-2.gguf", "gpt2", 50257, 50000, "!"},
        {"ggml-vocab-gpt-neox.gguf", "gpt2", 50432, 50009, NULL},
        {"ggml-vocab-llama-spm.gguf", "llama", 32000, 0, "<unk>"},
        {"ggml-vocab-mpt.gguf", "gpt2", 50432, 50009, NULL},
        {"ggml-vocab-phi-3.gguf", "llama", 32064, 0, "<unk>"},
        {"ggml-vocab-refact.gguf", "gpt2", 49216, 0, NULL},
        {"ggml-vocab-starcoder.gguf", "gpt2", 49152, 0, NULL},
    };
    int unpadded = 0;
    for (size_t k = 0; k < VKLLM_ARRAY_LEN(v); k++) {
        struct vkllm__gguf *g;
        ASSERT_OK(vkllm__gguf_open(vkllm_test_model(v[k].file), &g));
        ASSERT_EQ(g->n_tensors, 0);
        ASSERT(g->data_offset <= g->size);
        unpadded += g->size % 32 != 0;
        struct vkllm__str s;
        ASSERT_OK(vkllm__gguf_get_str(g, "tokenizer.ggml.model", &s));
        check_str(s, v[k].model);
        const struct vkllm__gguf_kv *kv;
        ASSERT_OK(vkllm__gguf_get_arr(g, "tokenizer.ggml.tokens", VKLLM__GGUF_STRING, &kv));
        ASSERT_EQ(kv->arr_n, v[k].n_tokens);
        struct vkllm__str *toks;
        ASSERT_OK(vkllm__gguf_arr_strings(kv, &toks));
        if (v[k].tok0) check_str(toks[0], v[k].tok0);
        vkllm__free(toks);
        if (v[k].n_merges) {
            ASSERT_OK(vkllm__gguf_get_arr(g, "tokenizer.ggml.merges", VKLLM__GGUF_STRING, &kv));
            ASSERT_EQ(kv->arr_n, v[k].n_merges);
        }
        ASSERT_OK(vkllm__gguf_get_arr(g, "tokenizer.ggml.token_type", VKLLM__GGUF_I32, &kv));
        ASSERT_EQ(kv->arr_n, v[k].n_tokens);
        vkllm__gguf_close(g);
    }
    ASSERT(unpadded > 0); /* the point: files that end right after the metadata load */
}

static void test_open_errors(void) {
    struct vkllm__gguf *g = (struct vkllm__gguf *)1;
    ASSERT_STATUS(vkllm__gguf_open("/nonexistent/x.gguf", &g), VKLLM_STATUS_NOT_FOUND);
    ASSERT(g == NULL);
    ASSERT(strstr(vkllm_last_error(), "/nonexistent/x.gguf") != NULL);
    ASSERT_STATUS(vkllm__gguf_open("/", &g), VKLLM_STATUS_IO);
    ASSERT_STATUS(vkllm__gguf_open("/dev/null", &g), VKLLM_STATUS_IO);
    ASSERT_STATUS(vkllm__gguf_open_memory("", 0, "empty", &g), VKLLM_STATUS_BAD_FORMAT);
    ASSERT(strstr(vkllm_last_error(), "empty") != NULL);
    vkllm__gguf_close(NULL);
}

// --- writer round trip ---------------------------------------------------------------------

struct blob {
    const void *p;
    uint64_t n;
};

static vkllm_status fill_blob(void *user, void *dst, uint64_t nbytes) {
    const struct blob *b = user;
    ASSERT_EQ(nbytes, b->n);
    memcpy(dst, b->p, (size_t)nbytes);
    return VKLLM_STATUS_OK;
}

static vkllm_status fill_fail(void *user, void *dst, uint64_t nbytes) {
    (void)user, (void)dst, (void)nbytes;
    return vkllm__err(VKLLM_STATUS_CANCELLED, "fill failed on purpose");
}

/* Encoded nested arrays (what follows the ARRAY type of a kv): [[1, -2], [], [3]] of i32 and
 * [[["a"], ["bc", ""]], [[]]] of strings (depth 3). */
static size_t put32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, 4);
    return 4;
}
static size_t put64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
    return 8;
}
static size_t putstr(uint8_t *p, const char *s) {
    size_t n = strlen(s);
    put64(p, n);
    memcpy(p + 8, s, n);
    return 8 + n;
}
static size_t enc_nested_i32(uint8_t *p) {
    size_t o = 0;
    o += put32(p + o, VKLLM__GGUF_ARRAY), o += put64(p + o, 3);
    o += put32(p + o, VKLLM__GGUF_I32), o += put64(p + o, 2), o += put32(p + o, 1), o += put32(p + o, (uint32_t)-2);
    o += put32(p + o, VKLLM__GGUF_I32), o += put64(p + o, 0);
    o += put32(p + o, VKLLM__GGUF_I32), o += put64(p + o, 1), o += put32(p + o, 3);
    return o;
}
static size_t enc_nested_str(uint8_t *p) {
    size_t o = 0;
    o += put32(p + o, VKLLM__GGUF_ARRAY), o += put64(p + o, 2);
    o += put32(p + o, VKLLM__GGUF_ARRAY), o += put64(p + o, 2);
    o += put32(p + o, VKLLM__GGUF_STRING), o += put64(p + o, 1), o += putstr(p + o, "a");
    o += put32(p + o, VKLLM__GGUF_STRING), o += put64(p + o, 2), o += putstr(p + o, "bc"), o += putstr(p + o, "");
    o += put32(p + o, VKLLM__GGUF_ARRAY), o += put64(p + o, 1);
    o += put32(p + o, VKLLM__GGUF_STRING), o += put64(p + o, 0);
    return o;
}

static void next(struct vkllm__gguf_arr_iter *it, struct vkllm__gguf_kv *e, uint32_t type) {
    ASSERT(vkllm__gguf_arr_iter_next(it, e));
    ASSERT_EQ(e->type, type);
}

static void check_nested(const struct vkllm__gguf *g) {
    const struct vkllm__gguf_kv *kv;
    struct vkllm__gguf_arr_iter it, it2, it3;
    struct vkllm__gguf_kv e, e2, e3;
    ASSERT_OK(vkllm__gguf_get_arr(g, "nested.i32", VKLLM__GGUF_ARRAY, &kv));
    ASSERT_EQ(kv->arr_n, 3);
    vkllm__gguf_arr_iter_init(&it, kv);
    next(&it, &e, VKLLM__GGUF_ARRAY);
    ASSERT_EQ(e.arr_type, VKLLM__GGUF_I32);
    ASSERT_EQ(e.arr_n, 2);
    ASSERT_EQ(vkllm__gguf_arr_i64(&e, 0), 1);
    ASSERT_EQ(vkllm__gguf_arr_i64(&e, 1), -2);
    next(&it, &e, VKLLM__GGUF_ARRAY);
    ASSERT_EQ(e.arr_n, 0);
    next(&it, &e, VKLLM__GGUF_ARRAY);
    ASSERT_EQ(e.arr_n, 1);
    ASSERT_EQ(vkllm__gguf_arr_i64(&e, 0), 3);
    ASSERT(!vkllm__gguf_arr_iter_next(&it, &e));

    ASSERT_OK(vkllm__gguf_get_arr(g, "nested.str", VKLLM__GGUF_ARRAY, &kv));
    vkllm__gguf_arr_iter_init(&it, kv);
    next(&it, &e, VKLLM__GGUF_ARRAY);
    ASSERT_EQ(e.arr_type, VKLLM__GGUF_ARRAY);
    ASSERT_EQ(e.arr_n, 2);
    vkllm__gguf_arr_iter_init(&it2, &e);
    next(&it2, &e2, VKLLM__GGUF_ARRAY);
    vkllm__gguf_arr_iter_init(&it3, &e2);
    next(&it3, &e3, VKLLM__GGUF_STRING);
    check_str(e3.v.s, "a");
    ASSERT(!vkllm__gguf_arr_iter_next(&it3, &e3));
    next(&it2, &e2, VKLLM__GGUF_ARRAY);
    struct vkllm__str *ss;
    ASSERT_OK(vkllm__gguf_arr_strings(&e2, &ss));
    check_str(ss[0], "bc");
    check_str(ss[1], "");
    vkllm__free(ss);
    ASSERT(!vkllm__gguf_arr_iter_next(&it2, &e2));
    next(&it, &e, VKLLM__GGUF_ARRAY);
    ASSERT_EQ(e.arr_n, 1);
    vkllm__gguf_arr_iter_init(&it2, &e);
    next(&it2, &e2, VKLLM__GGUF_ARRAY);
    ASSERT_EQ(e2.arr_type, VKLLM__GGUF_STRING);
    ASSERT_EQ(e2.arr_n, 0);
    ASSERT(!vkllm__gguf_arr_iter_next(&it, &e));
}

static char g_dir[64];

static const char *tmp_path(const char *name) {
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return p;
}

/* No leftover temporary files in the test folder. */
static int count_files(void) {
    DIR *d = opendir(g_dir);
    ASSERT(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* Tensor payloads of several types. */
static uint8_t g_data[5][4096];

static void add_tensors(struct vkllm__gguf_writer *w, struct blob *blobs) {
    static const struct {
        const char *name;
        uint32_t type, n_dims;
        uint64_t ne[4];
    } ts[] = {
        {"t.f32", VKLLM__TYPE_F32, 2, {7, 3, 1, 1}},     /* 84 bytes: not aligned */
        {"t.f16", VKLLM__TYPE_F16, 1, {5, 1, 1, 1}},     /* 10 bytes */
        {"t.q8_0", VKLLM__TYPE_Q8_0, 2, {64, 2, 1, 1}},  /* 136 bytes */
        {"t.q4_K", VKLLM__TYPE_Q4_K, 3, {256, 1, 2, 1}}, /* 288 bytes */
        {"t.i32", VKLLM__TYPE_I32, 4, {3, 2, 2, 2}},     /* 96 bytes */
    };
    uint64_t state = 7;
    for (size_t k = 0; k < VKLLM_ARRAY_LEN(ts); k++) {
        uint64_t bytes;
        ASSERT_OK(vkllm__row_size(ts[k].type, ts[k].ne[0], &bytes));
        bytes *= ts[k].ne[1] * ts[k].ne[2] * ts[k].ne[3];
        ASSERT(bytes <= sizeof g_data[k]);
        for (uint64_t j = 0; j < bytes; j++) g_data[k][j] = (uint8_t)(vkllm_test_randf(&state) * 127);
        blobs[k] = (struct blob){g_data[k], bytes};
        ASSERT_OK(
            vkllm__gguf_writer_add_tensor(w, ts[k].name, ts[k].type, ts[k].n_dims, ts[k].ne, fill_blob, &blobs[k]));
    }
}

static void test_roundtrip(uint32_t alignment) {
    struct vkllm__gguf_writer *w;
    ASSERT_OK(vkllm__gguf_writer_init(&w));
    ASSERT_OK(vkllm__gguf_writer_set_str(w, "general.architecture", "llama"));
    if (alignment) ASSERT_OK(vkllm__gguf_writer_set_u32(w, "general.alignment", alignment));
    uint8_t u8 = 250;
    int8_t i8 = -100;
    uint16_t u16 = 65000;
    int16_t i16 = -32000;
    int64_t i64 = -(1LL << 60);
    double f64 = 3.141592653589793;
    ASSERT_OK(vkllm__gguf_writer_set_val(w, "v.u8", VKLLM__GGUF_U8, &u8));
    ASSERT_OK(vkllm__gguf_writer_set_val(w, "v.i8", VKLLM__GGUF_I8, &i8));
    ASSERT_OK(vkllm__gguf_writer_set_val(w, "v.u16", VKLLM__GGUF_U16, &u16));
    ASSERT_OK(vkllm__gguf_writer_set_val(w, "v.i16", VKLLM__GGUF_I16, &i16));
    ASSERT_OK(vkllm__gguf_writer_set_u32(w, "v.u32", 4000000000u));
    ASSERT_OK(vkllm__gguf_writer_set_i32(w, "v.i32", -2000000000));
    ASSERT_OK(vkllm__gguf_writer_set_f32(w, "v.f32", 0.1f));
    ASSERT_OK(vkllm__gguf_writer_set_bool(w, "v.bool", 7));
    ASSERT_OK(vkllm__gguf_writer_set_str(w, "v.str", "h\xc3\xa9llo"));
    ASSERT_OK(vkllm__gguf_writer_set_u64(w, "v.u64", UINT64_MAX));
    ASSERT_OK(vkllm__gguf_writer_set_val(w, "v.i64", VKLLM__GGUF_I64, &i64));
    ASSERT_OK(vkllm__gguf_writer_set_val(w, "v.f64", VKLLM__GGUF_F64, &f64));
    ASSERT_OK(vkllm__gguf_writer_set_str(w, "v.empty", ""));
    /* Replacing keeps the position and takes the new type. */
    ASSERT_OK(vkllm__gguf_writer_set_u32(w, "v.replaced", 1));
    ASSERT_OK(vkllm__gguf_writer_set_str(w, "v.after", "x"));
    ASSERT_OK(vkllm__gguf_writer_set_i32(w, "v.replaced", -5));

    const uint8_t a_u8[] = {0, 1, 255};
    const int8_t a_i8[] = {-128, 0, 127};
    const uint16_t a_u16[] = {1, 65535};
    const int16_t a_i16[] = {-32768, 32767};
    const uint32_t a_u32[] = {0, 4294967295u, 12345};
    const int32_t a_i32[] = {-2147483647 - 1, 0, 2147483647};
    const float a_f32[] = {1.5f, -0.25f, 1e-30f};
    const uint8_t a_bool[] = {1, 0, 9};
    const uint64_t a_u64[] = {UINT64_MAX, 0};
    const int64_t a_i64[] = {INT64_MIN, INT64_MAX};
    const double a_f64[] = {-1e300, 2.5};
    const char *a_str[] = {"<unk>", "", "\xe2\x96\x81the", "a b"};
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.u8", VKLLM__GGUF_U8, a_u8, 3));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.i8", VKLLM__GGUF_I8, a_i8, 3));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.u16", VKLLM__GGUF_U16, a_u16, 2));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.i16", VKLLM__GGUF_I16, a_i16, 2));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.u32", VKLLM__GGUF_U32, a_u32, 3));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.i32", VKLLM__GGUF_I32, a_i32, 3));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.f32", VKLLM__GGUF_F32, a_f32, 3));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.bool", VKLLM__GGUF_BOOL, a_bool, 3));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.u64", VKLLM__GGUF_U64, a_u64, 2));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.i64", VKLLM__GGUF_I64, a_i64, 2));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.f64", VKLLM__GGUF_F64, a_f64, 2));
    ASSERT_OK(vkllm__gguf_writer_set_arr(w, "a.empty", VKLLM__GGUF_I32, NULL, 0));
    ASSERT_OK(vkllm__gguf_writer_set_arr_str(w, "a.str", a_str, 4));
    uint8_t enc[512];
    ASSERT_OK(vkllm__gguf_writer_set_raw(w, "nested.i32", VKLLM__GGUF_ARRAY, enc, enc_nested_i32(enc)));
    ASSERT_OK(vkllm__gguf_writer_set_raw(w, "nested.str", VKLLM__GGUF_ARRAY, enc, enc_nested_str(enc)));

    /* Bad arguments are refused and change nothing. */
    size_t nenc = enc_nested_str(enc);
    ASSERT_STATUS(vkllm__gguf_writer_set_raw(w, "bad", VKLLM__GGUF_ARRAY, enc, nenc - 1),
                  VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_set_raw(w, "bad", VKLLM__GGUF_ARRAY, enc, nenc + 1),
                  VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_set_raw(w, "bad", 13, enc, 4), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_set_u32(w, "", 1), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_set_str(w, "general.alignment", "32"), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_set_u32(w, "general.alignment", 48), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_set_arr(w, "bad", VKLLM__GGUF_STRING, a_u8, 1), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_set_val(w, "bad", VKLLM__GGUF_ARRAY, a_u8), VKLLM_STATUS_INVALID_ARGUMENT);

    /* Copy a real kv (a vocab) through set_kv. */
    struct vkllm__gguf *src;
    ASSERT_OK(vkllm__gguf_open(vkllm_test_model("stories260K.gguf"), &src));
    ASSERT_OK(vkllm__gguf_writer_set_kv(w, "copy.tokens", vkllm__gguf_find(src, "tokenizer.ggml.tokens")));
    ASSERT_OK(
        vkllm__gguf_writer_set_kv(w, "copy.eps", vkllm__gguf_find(src, "llama.attention.layer_norm_rms_epsilon")));
    ASSERT_OK(vkllm__gguf_writer_set_kv(w, "copy.name", vkllm__gguf_find(src, "general.name")));

    struct blob blobs[5];
    add_tensors(w, blobs);
    const uint64_t ne_bad[] = {31, 1};
    const uint64_t ne0[] = {0};
    ASSERT_STATUS(vkllm__gguf_writer_add_tensor(w, "t.f32", VKLLM__TYPE_F32, 1, ne0 + 0, fill_blob, blobs),
                  VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_add_tensor(w, "t.q4", VKLLM__TYPE_Q4_0, 2, ne_bad, fill_blob, blobs),
                  VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_add_tensor(w, "t.zero", VKLLM__TYPE_F32, 1, ne0, fill_blob, blobs),
                  VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_add_tensor(w, "t.bad", 99, 1, ne_bad, fill_blob, blobs),
                  VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_add_tensor(w, "t.5d", VKLLM__TYPE_F32, 5, ne_bad, fill_blob, blobs),
                  VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(vkllm__gguf_writer_add_tensor(w, "0123456789012345678901234567890123456789012345678901234567890123",
                                                VKLLM__TYPE_F32, 1, ne_bad, fill_blob, blobs),
                  VKLLM_STATUS_INVALID_ARGUMENT);

    const char *path = tmp_path("rt.gguf");
    ASSERT_OK(vkllm__gguf_writer_write(w, path));
    ASSERT_EQ(count_files(), 1);

    struct vkllm__gguf *g;
    ASSERT_OK(vkllm__gguf_open(path, &g));
    uint32_t a = alignment ? alignment : 32;
    ASSERT_EQ(g->version, 3);
    ASSERT_EQ(g->alignment, a);
    ASSERT_EQ(g->data_offset % a, 0);
    /* Insertion order; general.alignment is last when it was not set. */
    static const char *order[] = {"general.architecture",
                                  "v.u8",
                                  "v.i8",
                                  "v.u16",
                                  "v.i16",
                                  "v.u32",
                                  "v.i32",
                                  "v.f32",
                                  "v.bool",
                                  "v.str",
                                  "v.u64",
                                  "v.i64",
                                  "v.f64",
                                  "v.empty",
                                  "v.replaced",
                                  "v.after"};
    uint64_t k0 = alignment ? 2 : 1;
    check_str(g->kv[0].key, "general.architecture");
    if (alignment) check_str(g->kv[1].key, "general.alignment");
    for (size_t k = 1; k < VKLLM_ARRAY_LEN(order); k++) check_str(g->kv[k0 + k - 1].key, order[k]);
    check_str(g->kv[g->n_kv - 1].key, alignment ? "copy.name" : "general.alignment");

    uint64_t u;
    int64_t i;
    double f;
    int b;
    struct vkllm__str s;
    ASSERT_OK(vkllm__gguf_get_u64(g, "general.alignment", &u));
    ASSERT_EQ(u, a);
    const struct vkllm__gguf_kv *kv = vkllm__gguf_find(g, "v.u8");
    ASSERT(kv && kv->type == VKLLM__GGUF_U8 && kv->v.u == 250);
    kv = vkllm__gguf_find(g, "v.i8");
    ASSERT(kv && kv->type == VKLLM__GGUF_I8 && kv->v.i == -100);
    kv = vkllm__gguf_find(g, "v.u16");
    ASSERT(kv && kv->type == VKLLM__GGUF_U16 && kv->v.u == 65000);
    kv = vkllm__gguf_find(g, "v.i16");
    ASSERT(kv && kv->type == VKLLM__GGUF_I16 && kv->v.i == -32000);
    ASSERT_OK(vkllm__gguf_get_u64(g, "v.u32", &u));
    ASSERT_EQ(u, 4000000000u);
    ASSERT_OK(vkllm__gguf_get_i64(g, "v.i32", &i));
    ASSERT_EQ(i, -2000000000);
    ASSERT_STATUS(vkllm__gguf_get_u64(g, "v.i32", &u), VKLLM_STATUS_BAD_FORMAT);
    ASSERT_OK(vkllm__gguf_get_f64(g, "v.f32", &f));
    ASSERT(f == (double)0.1f);
    ASSERT_OK(vkllm__gguf_get_bool(g, "v.bool", &b));
    ASSERT_EQ(b, 1);
    ASSERT_OK(vkllm__gguf_get_str(g, "v.str", &s));
    check_str(s, "h\xc3\xa9llo");
    ASSERT_OK(vkllm__gguf_get_u64(g, "v.u64", &u));
    ASSERT(u == UINT64_MAX);
    ASSERT_STATUS(vkllm__gguf_get_i64(g, "v.u64", &i), VKLLM_STATUS_BAD_FORMAT);
    ASSERT_OK(vkllm__gguf_get_i64(g, "v.i64", &i));
    ASSERT(i == i64);
    ASSERT_OK(vkllm__gguf_get_f64(g, "v.f64", &f));
    ASSERT(f == f64);
    ASSERT_OK(vkllm__gguf_get_str(g, "v.empty", &s));
    ASSERT_EQ(s.len, 0);
    kv = vkllm__gguf_find(g, "v.replaced");
    ASSERT(kv && kv->type == VKLLM__GGUF_I32 && kv->v.i == -5);
    ASSERT(vkllm__gguf_find(g, "bad") == NULL);

#define CHECK_ARR(key, et, arr, get)                                             \
    do {                                                                         \
        ASSERT_OK(vkllm__gguf_get_arr(g, key, et, &kv));                         \
        ASSERT_EQ(kv->arr_n, VKLLM_ARRAY_LEN(arr));                              \
        for (uint64_t j = 0; j < kv->arr_n; j++) ASSERT(get(kv, j) == (arr)[j]); \
    } while (0)
    CHECK_ARR("a.u8", VKLLM__GGUF_U8, a_u8, vkllm__gguf_arr_i64);
    CHECK_ARR("a.i8", VKLLM__GGUF_I8, a_i8, vkllm__gguf_arr_i64);
    CHECK_ARR("a.u16", VKLLM__GGUF_U16, a_u16, vkllm__gguf_arr_i64);
    CHECK_ARR("a.i16", VKLLM__GGUF_I16, a_i16, vkllm__gguf_arr_i64);
    CHECK_ARR("a.u32", VKLLM__GGUF_U32, a_u32, vkllm__gguf_arr_i64);
    CHECK_ARR("a.i32", VKLLM__GGUF_I32, a_i32, vkllm__gguf_arr_i64);
    CHECK_ARR("a.f32", VKLLM__GGUF_F32, a_f32, vkllm__gguf_arr_f64);
    CHECK_ARR("a.i64", VKLLM__GGUF_I64, a_i64, vkllm__gguf_arr_i64);
    CHECK_ARR("a.f64", VKLLM__GGUF_F64, a_f64, vkllm__gguf_arr_f64);
    ASSERT_OK(vkllm__gguf_get_arr(g, "a.u64", VKLLM__GGUF_U64, &kv));
    ASSERT((uint64_t)vkllm__gguf_arr_i64(kv, 0) == UINT64_MAX);
    ASSERT_OK(vkllm__gguf_get_arr(g, "a.bool", VKLLM__GGUF_BOOL, &kv));
    ASSERT(vkllm__gguf_arr_i64(kv, 0) == 1 && vkllm__gguf_arr_i64(kv, 1) == 0 && vkllm__gguf_arr_i64(kv, 2) == 1);
    ASSERT_OK(vkllm__gguf_get_arr(g, "a.empty", VKLLM__GGUF_I32, &kv));
    ASSERT_EQ(kv->arr_n, 0);
    ASSERT_OK(vkllm__gguf_get_arr(g, "a.str", VKLLM__GGUF_STRING, &kv));
    struct vkllm__str *ss;
    ASSERT_OK(vkllm__gguf_arr_strings(kv, &ss));
    ASSERT_EQ(kv->arr_n, 4);
    for (int j = 0; j < 4; j++) check_str(ss[j], a_str[j]);
    vkllm__free(ss);
    check_nested(g);

    /* The copied kvs equal their source, byte for byte. */
    const struct vkllm__gguf_kv *sk = vkllm__gguf_find(src, "tokenizer.ggml.tokens");
    ASSERT_OK(vkllm__gguf_get_arr(g, "copy.tokens", VKLLM__GGUF_STRING, &kv));
    ASSERT(kv->arr_n == sk->arr_n && kv->arr_bytes == sk->arr_bytes);
    ASSERT(memcmp(kv->arr_data, sk->arr_data, (size_t)kv->arr_bytes) == 0);
    ASSERT_OK(vkllm__gguf_get_f64(g, "copy.eps", &f));
    ASSERT(f == vkllm__gguf_find(src, "llama.attention.layer_norm_rms_epsilon")->v.f);
    ASSERT_OK(vkllm__gguf_get_str(g, "copy.name", &s));
    check_str(s, "llama");
    vkllm__gguf_close(src);

    /* Tensors: order, shapes, aligned offsets, data. */
    ASSERT_EQ(g->n_tensors, 5);
    static const char *names[] = {"t.f32", "t.f16", "t.q8_0", "t.q4_K", "t.i32"};
    for (int k = 0; k < 5; k++) {
        const struct vkllm__gguf_tensor *t = &g->tensors[k];
        check_str(t->name, names[k]);
        ASSERT_EQ(t->offset % a, 0);
        ASSERT_EQ(t->nbytes, blobs[k].n);
        ASSERT(memcmp(t->data, blobs[k].p, (size_t)t->nbytes) == 0);
    }
    ASSERT_EQ(g->tensors[3].type, VKLLM__TYPE_Q4_K);
    ASSERT_EQ(g->tensors[3].n_dims, 3);
    ASSERT_EQ(g->tensors[3].ne[2], 2);
    ASSERT_EQ(g->tensors[4].ne[3], 2);
    /* The last tensor is padded to the alignment, like ggml writes it. */
    ASSERT_EQ(g->size % a, 0);
    vkllm__gguf_close(g);

    /* Writing again replaces the file atomically. */
    ASSERT_OK(vkllm__gguf_writer_write(w, path));
    ASSERT_EQ(count_files(), 1);
    vkllm__gguf_writer_free(w);
}

/* A fill callback failing, an unwritable folder and a file-size limit (the disk-full path):
 * each gives its status, and neither a temporary file nor a changed target is left. */
static void test_write_errors(void) {
    const char *path = tmp_path("err.gguf");
    struct vkllm__gguf_writer *w;
    ASSERT_OK(vkllm__gguf_writer_init(&w));
    ASSERT_OK(vkllm__gguf_writer_set_str(w, "general.architecture", "llama"));
    ASSERT_OK(vkllm__gguf_writer_write(w, path)); /* the old file, 0 tensors */
    size_t old_len;
    char *old = vkllm_test_read_file(path, &old_len);
    const uint64_t ne[] = {16};
    ASSERT_OK(vkllm__gguf_writer_add_tensor(w, "t", VKLLM__TYPE_F32, 1, ne, fill_fail, NULL));
    int before = count_files();
    ASSERT_STATUS(vkllm__gguf_writer_write(w, path), VKLLM_STATUS_CANCELLED);
    ASSERT_EQ(count_files(), before);
    ASSERT_STATUS(vkllm__gguf_writer_write(w, "/nonexistent-dir/x.gguf"), VKLLM_STATUS_IO);
    ASSERT(strstr(vkllm_last_error(), "/nonexistent-dir/x.gguf") != NULL);
    vkllm__gguf_writer_free(w);

    /* A big tensor under RLIMIT_FSIZE: the write fails with EFBIG, as it would with ENOSPC. */
    static uint8_t big[1 << 20];
    struct blob bb = {big, sizeof big};
    ASSERT_OK(vkllm__gguf_writer_init(&w));
    const uint64_t ne_big[] = {sizeof big / 4};
    ASSERT_OK(vkllm__gguf_writer_add_tensor(w, "big", VKLLM__TYPE_F32, 1, ne_big, fill_blob, &bb));
    struct rlimit old_lim, lim;
    ASSERT(getrlimit(RLIMIT_FSIZE, &old_lim) == 0);
    lim = old_lim;
    lim.rlim_cur = 64 * 1024;
    signal(SIGXFSZ, SIG_IGN);
    ASSERT(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    vkllm_status st = vkllm__gguf_writer_write(w, path);
    ASSERT(setrlimit(RLIMIT_FSIZE, &old_lim) == 0);
    ASSERT_EQ(st, VKLLM_STATUS_IO);
    ASSERT(strstr(vkllm_last_error(), "err.gguf") != NULL);
    fprintf(stderr, "disk-full message: %s\n", vkllm_last_error());
    ASSERT_EQ(count_files(), before);
    size_t now_len;
    char *now = vkllm_test_read_file(path, &now_len);
    ASSERT(now_len == old_len && memcmp(now, old, old_len) == 0);
    free(now);
    free(old);
    vkllm__gguf_writer_free(w);
}

/* Every host allocation of open and of a write can fail: OOM, nothing leaked (ASan build). */
static void test_oom(void) {
    const char *model = vkllm_test_model("stories260K.gguf");
    int hit = 0;
    for (uint64_t n = 1; n < 100; n++) {
        struct vkllm__gguf *g = NULL;
        vkllm__fault_inject(VKLLM__FAULT_HOST, n);
        vkllm_status st = vkllm__gguf_open(model, &g);
        vkllm__fault_inject(VKLLM__FAULT_HOST, 0);
        if (st == VKLLM_STATUS_OK) {
            vkllm__gguf_close(g);
            break;
        }
        ASSERT_EQ(st, VKLLM_STATUS_OOM);
        ASSERT(g == NULL);
        hit++;
    }
    ASSERT(hit >= 3);
    static const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct blob bl = {data, sizeof data};
    const uint64_t ne[] = {8};
    const char *strs[] = {"a", "b"};
    hit = 0;
    for (uint64_t n = 1; n < 200; n++) {
        struct vkllm__gguf_writer *w = NULL;
        vkllm__fault_inject(VKLLM__FAULT_HOST, n);
        vkllm_status st = vkllm__gguf_writer_init(&w);
        if (st == VKLLM_STATUS_OK) st = vkllm__gguf_writer_set_str(w, "general.architecture", "x");
        if (st == VKLLM_STATUS_OK) st = vkllm__gguf_writer_set_arr_str(w, "s", strs, 2);
        if (st == VKLLM_STATUS_OK) st = vkllm__gguf_writer_add_tensor(w, "t", VKLLM__TYPE_F32, 1, ne, fill_blob, &bl);
        if (st == VKLLM_STATUS_OK) st = vkllm__gguf_writer_write(w, tmp_path("oom.gguf"));
        vkllm__fault_inject(VKLLM__FAULT_HOST, 0);
        vkllm__gguf_writer_free(w);
        if (st == VKLLM_STATUS_OK) break;
        ASSERT_EQ(st, VKLLM_STATUS_OOM);
        hit++;
    }
    ASSERT(hit >= 5);
    unlink(tmp_path("oom.gguf"));
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/vkllm-test-gguf-XXXXXX");
    ASSERT(mkdtemp(g_dir) != NULL);
    test_open_errors();
    test_stories260k();
    test_vocab_files();
    test_roundtrip(0);
    unlink(tmp_path("rt.gguf"));
    test_roundtrip(64);
    unlink(tmp_path("rt.gguf"));
    test_write_errors();
    test_oom();
    unlink(tmp_path("err.gguf"));
    ASSERT(rmdir(g_dir) == 0);
    printf("test_gguf: ok\n");
    return 0;
}
