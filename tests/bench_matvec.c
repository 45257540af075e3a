/* bench_matvec.c - decode matvec speed: GB/s of weights read, per weight type and shape.
 *
 *   bench_matvec [-t type[,type...]] [-s MxK[,MxK...]] [-r seconds] [-p storage,texel]
 *
 * Defaults: every type; 2048x2048, 5632x2048 and 32000x2048; ~0.3 s per case. Each case is
 * warmed up first (lavapipe compiles a pipeline at its first dispatch), then a command list of
 * back-to-back matvecs (a barrier between each, as in decode) is replayed and timed. The work
 * split can be changed with VKLLM_MATVEC_{WG,NT,NR,SG} (storage path) and VKLLM_MATVEC_TB_{WG,NR}
 * (texel path). -p picks the paths, side by side: `storage` (shaders/matvec.comp, the GGUF layout)
 * and `texel` (shaders/matvec_tb.comp, the repacked copy; F32, F16, Q8_0 and Q4_0 only).
 * GB/s count the GGUF bytes of W in both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "gpu.h"
#include "bench.h"
#include "ops_gpu.h"
#include "types.h"

static const uint32_t k_types[] = {
    VKLLM__TYPE_F32,  VKLLM__TYPE_F16,  VKLLM__TYPE_BF16, VKLLM__TYPE_Q8_0, VKLLM__TYPE_Q4_0, VKLLM__TYPE_Q4_1,
    VKLLM__TYPE_Q5_0, VKLLM__TYPE_Q5_1, VKLLM__TYPE_Q4_K, VKLLM__TYPE_Q5_K, VKLLM__TYPE_Q6_K,
};

/* CPU seconds used by this process (all threads, lavapipe's workers included). */
static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

static float frand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
}

static int type_selected(const char *list, uint32_t type) {
    if (!list) return 1;
    const char *name = vkllm__type_name(type);
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncasecmp(p, name, n) == 0) return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

/* One case: returns GB/s (weight bytes per second). */
static double bench(struct vkllm__gpu *gpu, uint32_t type, uint32_t m, uint32_t k, double seconds, int texel,
                    double *us_per_op, double *cpu_us_per_op) {
    uint64_t row_bytes;
    CHECK(vkllm__row_size(type, k, &row_bytes));
    /* Quantize 64 distinct rows and repeat them (quantizing 65M K-quant weights takes long). */
    enum { DISTINCT = 64 };
    uint8_t *rows = malloc(row_bytes * DISTINCT), *all = malloc(row_bytes * m + 4);
    float *tmp = malloc(sizeof(float) * k);
    uint64_t s = 42;
    for (int r = 0; r < DISTINCT; r++) {
        for (uint32_t j = 0; j < k; j++) tmp[j] = frand(&s);
        vkllm__quantize_row(type, tmp, rows + r * row_bytes, k);
    }
    for (uint32_t r = 0; r < m; r++) memcpy(all + r * row_bytes, rows + (r % DISTINCT) * row_bytes, row_bytes);
    memset(all + row_bytes * m, 0, 4);
    struct vkllm__dtensor w = {.type = type, .k = k, .m = m, .row_bytes = row_bytes};
    CHECK(vkllm__buffer_alloc(gpu, (row_bytes * m + 3) & ~3ull, VKLLM__MEM_DEVICE, &w.buf));
    CHECK(vkllm__buffer_upload(w.buf, 0, all, row_bytes * m));
    tune(gpu, "matvec_texel", texel ? "1" : "0");          /* vkllm__op_matvec takes the texel path when */
    if (texel) CHECK(vkllm__dtensor_add_tb(gpu, &w, all)); /* there is a repacked copy */
    if (texel != vkllm__matvec_tb_applies(gpu, &w)) {
        fprintf(stderr, "bench_matvec: the %s path does not apply\n", texel ? "texel" : "storage");
        exit(1);
    }
    struct vkllm__buffer *x, *y;
    CHECK(vkllm__buffer_alloc(gpu, 4ull * k, VKLLM__MEM_DEVICE, &x));
    CHECK(vkllm__buffer_alloc(gpu, 4ull * m, VKLLM__MEM_DEVICE, &y));
    for (uint32_t j = 0; j < k; j++) tmp[j] = frand(&s);
    CHECK(vkllm__buffer_upload(x, 0, tmp, 4ull * k));

    struct vkllm__cmd *c;
    CHECK(vkllm__cmd_init(gpu, &c));
    /* warm-up: one op (pipeline compiled), timed to size the real run */
    CHECK(vkllm__cmd_begin(c));
    CHECK(vkllm__op_matvec(c, vkllm__view_of(y), &w, vkllm__view_of(x), 1));
    CHECK(vkllm__cmd_end(c));
    CHECK(vkllm__cmd_submit(c));
    uint64_t t0 = vkllm__now_ns();
    CHECK(vkllm__cmd_submit(c));
    double one = (double)(vkllm__now_ns() - t0) * 1e-9;
    int reps = (int)(seconds / (one > 1e-6 ? one : 1e-6));
    if (reps < 2) reps = 2;
    if (reps > 2000) reps = 2000;
    CHECK(vkllm__cmd_begin(c));
    for (int i = 0; i < reps; i++) CHECK(vkllm__op_matvec(c, vkllm__view_of(y), &w, vkllm__view_of(x), 1));
    CHECK(vkllm__cmd_end(c));
    CHECK(vkllm__cmd_submit(c)); /* warm */
    t0 = vkllm__now_ns();
    double c0 = cpu_seconds();
    CHECK(vkllm__cmd_submit(c));
    double dt = (double)(vkllm__now_ns() - t0) * 1e-9;
    *cpu_us_per_op = (cpu_seconds() - c0) / reps * 1e6;
    vkllm__cmd_free(c);
    vkllm__buffer_free(x);
    vkllm__buffer_free(y);
    vkllm__dtensor_free(&w);
    free(rows);
    free(all);
    free(tmp);
    *us_per_op = dt / reps * 1e6;
    return (double)row_bytes * m * reps / dt * 1e-9;
}

int main(int argc, char **argv) {
    const char *types = NULL, *shapes = "2048x2048,5632x2048,32000x2048", *paths = "storage";
    double seconds = 0.3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) shapes = argv[++i];
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) paths = argv[++i];
        else {
            fprintf(stderr, "usage: bench_matvec [-t type,...] [-s MxK,...] [-r seconds] [-p storage,texel]\n");
            return 2;
        }
    }
    struct vkllm__gpu_params p = {.device = -1, .validate = 0};
    struct vkllm__gpu *gpu;
    CHECK(vkllm__gpu_open(&p, &gpu));
    printf("device: %s; memory read bandwidth of this machine for comparison: ~49 GB/s (2 threads)\n",
           vkllm__gpu_info(gpu)->name);
    printf("%-7s %-6s %12s %10s %10s %8s %10s %10s\n", "path", "type", "shape", "us/op", "GB/s", "% of 49", "cpu-us/op",
           "GB/s@2cpu");
    for (size_t t = 0; t < sizeof k_types / sizeof k_types[0]; t++) {
        if (!type_selected(types, k_types[t])) continue;
        for (const char *sp = shapes; *sp;) {
            unsigned m, k;
            if (sscanf(sp, "%ux%u", &m, &k) != 2) {
                fprintf(stderr, "bad shape %s\n", sp);
                return 2;
            }
            for (int texel = 0; texel < 2; texel++) {
                if (!strstr(paths, texel ? "texel" : "storage")) continue;
                tune(gpu, "matvec_texel", "1");
                if (texel && !vkllm__matvec_tb_bytes(gpu, k_types[t], k, m)) continue; /* no texel path */
                double us, cpu_us, gbs = bench(gpu, k_types[t], m, k, seconds, texel, &us, &cpu_us);
                uint64_t row_bytes;
                CHECK(vkllm__row_size(k_types[t], k, &row_bytes));
                /* with the CPU to ourselves: the CPU time spread over 2 worker threads */
                double gbs_cpu = (double)row_bytes * m / (cpu_us * 1e-6 / 2) * 1e-9;
                char shape[32];
                snprintf(shape, sizeof shape, "%ux%u", m, k);
                printf("%-7s %-6s %12s %10.1f %10.2f %7.1f%% %10.1f %10.2f\n", texel ? "texel" : "storage",
                       vkllm__type_name(k_types[t]), shape, us, gbs, gbs / 49.0 * 100, cpu_us, gbs_cpu);
                fflush(stdout);
            }
            const char *e = strchr(sp, ',');
            sp = e ? e + 1 : sp + strlen(sp);
        }
    }
    vkllm__gpu_close(gpu);
    return 0;
}
