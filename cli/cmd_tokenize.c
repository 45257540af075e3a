/* cmd_tokenize.c - `vkllm tokenize` and `vkllm detokenize`.
 *
 *   vkllm tokenize -m FILE [--ids] [--no-bos] [--parse-special] (-f TEXTFILE | TEXT)
 *     default: one line per token, "id<TAB>piece" (the piece with \n, \t, \r, \\ and bytes
 *     that are not printable UTF-8 escaped); --ids: the ids on one line, space-separated.
 *     BOS (and EOS/SEP) are added as the model asks unless --no-bos. Control-token text is
 *     plain text unless --parse-special.
 *   vkllm detokenize -m FILE [--special] IDS...
 *     prints the text (exact bytes; a newline only when stdout is a terminal). IDS may be
 *     separate arguments or one argument with ids separated by spaces or commas.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage_tokenize(void) {
    fprintf(stderr, "usage: vkllm tokenize -m FILE [--ids] [--no-bos] [--parse-special] (-f TEXTFILE | TEXT)\n"
                    "  -m FILE          GGUF model or vocabulary file\n"
                    "  -f TEXTFILE      read the text from a file (exact bytes)\n"
                    "  --ids            print only the ids, space-separated, on one line\n"
                    "  --no-bos         do not add BOS/EOS/SEP even when the model asks for them\n"
                    "  --parse-special  recognize special-token text such as <|im_start|>\n");
}

static void usage_detokenize(void) {
    fprintf(stderr, "usage: vkllm detokenize -m FILE [--special] IDS...\n"
                    "  --special  print control tokens (<s>, <|im_end|>, ...) as text\n");
}

/* Read a whole file, NUL-terminated; *len gets its size. On failure a line was printed; returns the
 * exit code. */
static int read_file(const char *path, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "vkllm: tokenize: cannot open %s: %s\n", path, strerror(errno));
        return 3;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            buf[n] = 0; /* NUL-terminated: an empty file is "" (vkllm_tokenizer_encode's len 0 means strlen) */
            break;
        }
        char *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        fprintf(stderr, "vkllm: tokenize: %s: %s\n", path, buf ? "read error" : "out of memory");
        free(buf);
        return buf ? 3 : 5;
    }
    *out = buf;
    *len = n;
    return 0;
}

/* Print a piece on one line: escape what would break the "id<TAB>piece" format. */
static void print_piece(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else if (c < 0x20 || c == 0x7F) printf("\\x%02x", c);
        else if (c < 0x80) putchar(c);
        else { /* keep valid UTF-8, escape stray bytes */
            size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
            int ok = need && i + need <= n;
            for (size_t k = 1; ok && k < need; k++) ok = ((unsigned char)p[i + k] & 0xC0) == 0x80;
            if (ok) {
                fwrite(p + i, 1, need, stdout);
                i += need - 1;
            } else {
                printf("\\x%02x", c);
            }
        }
    }
}

int cli_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *text = NULL;
    int ids_only = 0, no_bos = 0, parse_special = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) model = argv[++i];
        else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && i + 1 < argc) file = argv[++i];
        else if (!strcmp(a, "--ids")) ids_only = 1;
        else if (!strcmp(a, "--no-bos")) no_bos = 1;
        else if (!strcmp(a, "--parse-special")) parse_special = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage_tokenize();
            return 0;
        } else if (!strcmp(a, "--")) {
            if (i + 2 == argc && !text) text = argv[++i];
            else {
                usage_tokenize();
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "vkllm: tokenize: unknown option %s\n", a);
            usage_tokenize();
            return 2;
        } else if (!text) text = a;
        else {
            fprintf(stderr, "vkllm: tokenize: give one TEXT (quote it) or -f TEXTFILE\n");
            usage_tokenize();
            return 2;
        }
    }
    if (!model || (!file == !text)) {
        usage_tokenize();
        return 2;
    }
    char *buf = NULL;
    size_t len = 0;
    vkllm_status st;
    int rc = file ? read_file(file, &buf, &len) : 0;
    if (rc) return rc;
    if (!file) len = strlen(text);
    vkllm_tokenizer_t tok = NULL;
    if ((st = vkllm_tokenizer_load(model, &tok)) != VKLLM_STATUS_OK) {
        free(buf);
        return cli_fail(st, model);
    }
    /* the ids (a second call when the first guess of their count was short) */
    size_t n = 0, cap = len + 16;
    int32_t *ids = malloc(cap * sizeof *ids);
    st = ids ? vkllm_tokenizer_encode(tok, file ? buf : text, len, no_bos ? 0 : -1, parse_special, ids, cap, &n)
             : VKLLM_STATUS_OOM;
    if (!st && n > cap) {
        int32_t *more = realloc(ids, n * sizeof *ids);
        st = more ? vkllm_tokenizer_encode(tok, file ? buf : text, len, no_bos ? 0 : -1, parse_special, more, n, &n)
                  : VKLLM_STATUS_OOM;
        ids = more ? more : ids;
    }
    free(buf);
    if (st != VKLLM_STATUS_OK) {
        free(ids);
        vkllm_tokenizer_free(tok);
        return cli_fail(st, "tokenize");
    }
    for (size_t i = 0; i < n; i++) {
        if (ids_only) {
            printf(i ? " %d" : "%d", ids[i]);
            continue;
        }
        const char *p;
        size_t pn;
        if (vkllm_tokenizer_piece(tok, ids[i], 1, &p, &pn)) p = "", pn = 0;
        printf("%d\t", ids[i]);
        print_piece(p, pn);
        putchar('\n');
    }
    if (ids_only) putchar('\n');
    free(ids);
    vkllm_tokenizer_free(tok);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Parse ids from an argument: numbers separated by spaces or commas. */
static int parse_ids(const char *s, int32_t **ids, size_t *n, size_t *cap) {
    while (*s) {
        while (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n' || *s == '[' || *s == ']') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX) return -1;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            int32_t *p = realloc(*ids, nc * sizeof *p);
            if (!p) return -2;
            *ids = p;
            *cap = nc;
        }
        (*ids)[(*n)++] = (int32_t)v;
        s = end;
    }
    return 0;
}

int cli_cmd_detokenize(int argc, char **argv) {
    const char *model = NULL;
    int special = 0;
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) model = argv[++i];
        else if (!strcmp(a, "--special")) special = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage_detokenize();
            free(ids);
            return 0;
        } else {
            int rc = parse_ids(a, &ids, &n, &cap);
            if (rc) {
                if (rc == -1) fprintf(stderr, "vkllm: detokenize: not a token id: %s\n", a);
                else fprintf(stderr, "vkllm: detokenize: out of memory\n");
                if (rc == -1) usage_detokenize();
                free(ids);
                return rc == -1 ? 2 : 5;
            }
        }
    }
    if (!model) {
        usage_detokenize();
        free(ids);
        return 2;
    }
    vkllm_tokenizer_t tok = NULL;
    vkllm_status st = vkllm_tokenizer_load(model, &tok);
    if (st != VKLLM_STATUS_OK) {
        free(ids);
        return cli_fail(st, model);
    }
    char *text = NULL;
    size_t len = 0;
    st = vkllm_tokenizer_decode(tok, ids, n, special, &text, &len);
    free(ids);
    vkllm_tokenizer_free(tok);
    if (st != VKLLM_STATUS_OK) return cli_fail(st, "detokenize");
    fwrite(text, 1, len, stdout);
    if (isatty(STDOUT_FILENO)) putchar('\n');
    vkllm_free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}
