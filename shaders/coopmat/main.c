/* main.c - `vkllm-spv-coopmat IN.spv OUT.spv`: the build step that turns a module compiled from
 * GL_NV_cooperative_matrix into one using SPV_KHR_cooperative_matrix (spv_coopmat.h). */
#include <stdio.h>
#include <stdlib.h>

#include "spv_coopmat.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IN.spv OUT.spv\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    uint32_t *in = NULL, *out = NULL;
    size_t n = 0, cap = 0, n_out = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            uint32_t *p = realloc(in, cap * 4);
            if (!p) {
                fprintf(stderr, "%s: out of memory\n", argv[1]);
                return 1;
            }
            in = p;
        }
        size_t got = fread(in + n, 4, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    char err[256];
    if (spv_coopmat_nv_to_khr(in, n, &out, &n_out, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 1;
    }
    f = fopen(argv[2], "wb");
    if (!f || fwrite(out, 4, n_out, f) != n_out || fclose(f)) {
        perror(argv[2]);
        return 1;
    }
    free(in);
    free(out);
    return 0;
}
