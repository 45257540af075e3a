/* test_gguf_hostile.c - the reader against hostile files: every file of tests/data/gguf-hostile
 * (made by tests/gen_hostile_gguf.py, plus inputs the fuzzer found) gives the status its name
 * asks for (ok-* loads, unsup-* UNSUPPORTED, the rest BAD_FORMAT) with a message naming the file;
 * every truncation prefix and single-byte mutation of small valid files fails cleanly or loads.
 * Built with VKLLM_SANITIZE=ON this is also the ASan/UBSan check. */
#include <dirent.h>

#include "fuzz/gguf_walk.h"
#include "gguf.h"
#include "harness.h"

/* A heap copy of exactly n bytes, so that ASan catches a read one past the end. */
static uint8_t *exact_copy(const void *p, size_t n) {
    uint8_t *c = malloc(n ? n : 1);
    ASSERT(c != NULL);
    if (n) memcpy(c, p, n);
    return c;
}

static vkllm_status open_mem_walk(const void *data, size_t n, const char *name) {
    uint8_t *c = exact_copy(data, n);
    struct vkllm__gguf *g = NULL;
    vkllm__err(VKLLM_STATUS_OK, "%s", "");
    vkllm_status st = vkllm__gguf_open_memory(c, n, name, &g);
    if (st == VKLLM_STATUS_OK) {
        (void)gguf_walk(g);
        vkllm__gguf_close(g);
    } else {
        ASSERT(g == NULL);
        if (vkllm_last_error()[0] == 0) FAILF("%s (%zu bytes): %s without a message", name, n, vkllm_status_name(st));
    }
    free(c);
    ASSERT_EQ(gguf_walk_bugs, 0);
    return st;
}

static vkllm_status want_for(const char *name) {
    if (strncmp(name, "ok-", 3) == 0) return VKLLM_STATUS_OK;
    if (strncmp(name, "unsup-", 6) == 0) return VKLLM_STATUS_UNSUPPORTED;
    return VKLLM_STATUS_BAD_FORMAT;
}

static int test_corpus(void) {
    const char *dir = vkllm_test_data("gguf-hostile");
    char dpath[4096];
    snprintf(dpath, sizeof dpath, "%s", dir);
    DIR *d = opendir(dpath);
    if (!d) FAILF("cannot open %s", dpath);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".gguf") != 0) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dpath, e->d_name);
        vkllm_status want = want_for(e->d_name);

        /* From the file (mmap) ... */
        struct vkllm__gguf *g = NULL;
        vkllm__err(VKLLM_STATUS_OK, "%s", "");
        vkllm_status st = vkllm__gguf_open(path, &g);
        if (st != want)
            FAILF("%s: got %s, want %s (%s)", e->d_name, vkllm_status_name(st), vkllm_status_name(want),
                  vkllm_last_error());
        if (st == VKLLM_STATUS_OK) {
            (void)gguf_walk(g);
            vkllm__gguf_close(g);
        } else {
            const char *msg = vkllm_last_error();
            if (!strstr(msg, e->d_name)) FAILF("%s: message does not name the file: '%s'", e->d_name, msg);
            if (strlen(msg) < strlen(path) + 12) FAILF("%s: message says too little: '%s'", e->d_name, msg);
            printf("%-40s %s\n", e->d_name, msg + strlen(dpath) + 1);
        }
        /* ... and from memory: the same answer. */
        size_t flen;
        char *data = vkllm_test_read_file(path, &flen);
        ASSERT_EQ(open_mem_walk(data, flen, e->d_name), want);
        free(data);
        n++;
    }
    closedir(d);
    ASSERT(n >= 100);
    ASSERT_EQ(gguf_walk_bugs, 0);
    return n;
}

/* Every prefix of a valid file: loads only once the last tensor's data is complete. */
static void test_prefixes(const char *file, uint64_t max_len) {
    char path[8192];
    snprintf(path, sizeof path, "%s", file);
    size_t n;
    char *data = vkllm_test_read_file(path, &n);
    struct vkllm__gguf *g;
    ASSERT_OK(vkllm__gguf_open_memory(data, n, file, &g));
    uint64_t need = g->n_tensors ? 0 : g->size; /* end of the last tensor's data */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        uint64_t end = (uint64_t)((const uint8_t *)g->tensors[i].data - g->base) + g->tensors[i].nbytes;
        if (end > need) need = end;
    }
    if (g->n_tensors == 0) {
        /* Without tensors the file must hold the whole metadata: find where it ends. */
        need = g->data_offset < g->size ? g->data_offset : g->size;
    }
    vkllm__gguf_close(g);
    uint64_t top = n < max_len ? n : max_len;
    int ok = 0;
    for (uint64_t len = 0; len <= top; len++) {
        vkllm_status st = open_mem_walk(data, (size_t)len, "prefix");
        if (len < need && len < n) {
            if (st != VKLLM_STATUS_BAD_FORMAT)
                FAILF("%s cut to %llu bytes (needs %llu): %s", file, (unsigned long long)len, (unsigned long long)need,
                      vkllm_status_name(st));
        } else {
            ok += st == VKLLM_STATUS_OK;
        }
    }
    free(data);
    printf("%s: %llu prefixes, %d load\n", file, (unsigned long long)top + 1, ok);
}

/* Every byte of a small valid file set to a few values: fails cleanly or loads and walks. */
static void test_mutations(const char *file) {
    size_t n;
    char *data = vkllm_test_read_file(file, &n);
    static const int vals[] = {0x00, 0xff, 0x80, 0x7f, 0x01, -1 /* xor 1 */, -2 /* +32 */};
    uint8_t *m = malloc(n);
    ASSERT(m != NULL);
    int loads = 0, fails = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < VKLLM_ARRAY_LEN(vals); k++) {
            memcpy(m, data, n);
            m[i] = vals[k] == -1 ? (uint8_t)(data[i] ^ 1) : vals[k] == -2 ? (uint8_t)(data[i] + 32) : (uint8_t)vals[k];
            vkllm_status st = open_mem_walk(m, n, "mutant");
            if (st == VKLLM_STATUS_OK) loads++;
            else if (st == VKLLM_STATUS_BAD_FORMAT || st == VKLLM_STATUS_UNSUPPORTED) fails++;
            else FAILF("%s byte %zu = %d: %s", file, i, vals[k], vkllm_status_name(st));
        }
    }
    printf("%s: %d mutants load, %d rejected\n", file, loads, fails);
    free(m);
    free(data);
}

int main(void) {
    int n = test_corpus();
    printf("%d hostile files checked\n", n);
    char p1[4096], p2[4096], p3[4096];
    snprintf(p1, sizeof p1, "%s", vkllm_test_data("gguf-hostile/ok-base.gguf"));
    snprintf(p2, sizeof p2, "%s", vkllm_test_data("gguf-hostile/ok-vocab-unpadded.gguf"));
    snprintf(p3, sizeof p3, "%s", vkllm_test_data("gguf-hostile/ok-alignment-1.gguf"));
    test_prefixes(p1, UINT64_MAX);
    test_prefixes(p2, UINT64_MAX);
    test_prefixes(p3, UINT64_MAX);
    test_mutations(p1);
    test_mutations(p3);
    /* The metadata of a real model, every prefix up to its first tensor data and a bit more. */
    const char *model = vkllm_test_model("stories260K.gguf");
    test_prefixes(model, 14176 + 4096);
    printf("test_gguf_hostile: ok\n");
    return 0;
}
