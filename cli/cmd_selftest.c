/* cmd_selftest.c - `vkllm selftest [--device N]`: run every shader on the chosen device against
 * the scalar reference and report each op's error and bound. A quick check of a new GPU/driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpu.h"
#include "selftest.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: vkllm selftest [--device N] [--validate]\n"
            "\n"
            "Runs each compute shader on the device with random inputs and compares it with the\n"
            "scalar C reference. Exit code 0 when every op is within its stated bound.\n"
            "\n"
            "  --device N   device index (see `vkllm devices`; default VKLLM_DEVICE or the best)\n"
            "  --validate   enable the Khronos validation layer (as VKLLM_VALIDATE=1)\n");
}

int vkllm_cmd_selftest(int argc, char **argv) {
    struct vkllm__gpu_params gp = {.device = -1, .validate = -1};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0) {
                fprintf(stderr, "vkllm: selftest: --device takes a device index, not '%s'\n", argv[i]);
                return 2;
            }
            gp.device = (int)v;
        } else if (!strcmp(argv[i], "--validate")) {
            gp.validate = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "vkllm: selftest: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    struct vkllm__gpu *gpu;
    vkllm_status st = vkllm__gpu_open(&gp, &gpu);
    if (st) return vkllm_cli_fail(st, "cannot open the Vulkan device");
    printf("device: %s (%s)\n", vkllm__gpu_info(gpu)->name, vkllm__gpu_info(gpu)->driver_info);
    printf("%-10s %-14s %-6s %12s %12s %10s  %s\n", "op", "shape", "wg", "max_abs", "max_rel", "bound", "result");
    int failed = 0;
    for (uint32_t i = 0; i < vkllm__selftest_n_cases; i++) {
        const struct vkllm__check_case *c = &vkllm__selftest_cases[i];
        struct vkllm__check_result r;
        st = vkllm__check_run(gpu, c, i + 1, &r);
        if (st) {
            int code = vkllm_cli_fail(st, vkllm__check_op_name(c->op));
            vkllm__gpu_close(gpu);
            return code;
        }
        char shape[32];
        snprintf(shape, sizeof shape, "%ux%u", c->nrows, c->ncols);
        printf("%-10s %-14s %-6u %12.3g %12.3g %10.0e  %s\n", vkllm__check_op_name(c->op), shape, c->wg,
               r.max_abs, r.max_rel, r.bound, r.pass ? "ok" : "FAIL");
        failed += !r.pass;
    }
    uint64_t vmsg = vkllm__gpu_validation_count(gpu);
    vkllm__gpu_close(gpu);
    if (vmsg) {
        fprintf(stderr, "vkllm: selftest: %llu validation message(s)\n", (unsigned long long)vmsg);
        return 1;
    }
    printf("%s: %u of %u ops within bounds\n", failed ? "FAILED" : "passed", vkllm__selftest_n_cases - failed,
           vkllm__selftest_n_cases);
    return failed ? 1 : 0;
}
