/* main.c - `vkllm-spv-embed NAME IN.spv OUT.c`: the build step that writes a SPIR-V module as C,
 * `const uint32_t vkllm_spv_NAME[]` (its little-endian words) and `vkllm_spv_NAME_size` (bytes).
 * A process of its own per module, a millisecond each (the CMake script it replaces took 75 ms:
 * 26 s of CPU per build of the 351 modules). */
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *path, const char *what) {
    fprintf(stderr, "vkllm-spv-embed: %s: %s\n", path, what);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s NAME IN.spv OUT.c\n", argv[0]);
        return 2;
    }
    const char *name = argv[1], *in = argv[2], *out = argv[3];
    FILE *f = fopen(in, "rb");
    if (!f) return fail(in, "cannot be read");
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            unsigned char *p = realloc(buf, cap);
            if (!p) {
                fclose(f);
                free(buf);
                return fail(in, "out of memory");
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int read_error = ferror(f);
    fclose(f);
    if (read_error || n == 0 || n % 4) {
        free(buf);
        return fail(in, read_error ? "read error" : "not a SPIR-V module (size not a multiple of 4)");
    }
    FILE *o = fopen(out, "w");
    if (!o) {
        free(buf);
        return fail(out, "cannot be written");
    }
    fprintf(o, "/* Generated from %s.spv. Do not edit. */\n#include <stddef.h>\n#include <stdint.h>\n", name);
    fprintf(o, "const uint32_t vkllm_spv_%s[] = {\n", name);
    for (size_t i = 0; i < n; i += 4) {
        unsigned long w = (unsigned long)buf[i] | (unsigned long)buf[i + 1] << 8 | (unsigned long)buf[i + 2] << 16 |
                          (unsigned long)buf[i + 3] << 24;
        fprintf(o, "%s0x%08lx,%s", i % 32 == 0 ? "    " : "", w, i % 32 == 28 || i + 4 == n ? "\n" : "");
    }
    fprintf(o, "};\nconst size_t vkllm_spv_%s_size = %zu;\n", name, n);
    free(buf);
    if (ferror(o) | fclose(o)) {
        remove(out);
        return fail(out, "write error");
    }
    return 0;
}
