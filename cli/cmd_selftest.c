/* cmd_selftest.c - `vkllm selftest`: every kernel and every variant of the device against the
 * scalar C reference (vkllm_selftest), as a table or JSON. The first thing to run on a new GPU
 * or driver. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm selftest [--device N] [--validate] [--json] [--profile] [--full] [--defaults]\n"
               "                      [--op NAMES] [--unchecked] [--list]\n"
               "\n"
               "Runs every compute kernel and each of its variants (work splits, reductions, texel and\n"
               "storage paths, chunked bindings) on the device with random inputs and compares it with the\n"
               "scalar C reference. Exit code 0 when every case is within its stated bound. A case\n"
               "for a feature the device lacks (cooperative matrices: their emulation runs wherever f16\n"
               "arithmetic and a required subgroup size do), or a variant whose forced path or limit the\n"
               "device cannot take, is reported skipped, not failed. A case run with the device's own\n"
               "tuning that an op refuses fails: a model run would meet the same refusal.\n"
               "\n"
               "  --device N   device index (see `vkllm devices`; default VKLLM_DEVICE or the best)\n"
               "  --validate   enable the Khronos validation layer (as VKLLM_VALIDATE=1); any message fails\n"
               "  --json       one JSON document: the device and one object per case (op, variant, shape,\n"
               "               measure, err, max_abs, bound, ok, ...)\n"
               "  --profile    also time each case: device ms, GB/s and GFLOP/s of what it declares\n"
               "  --full       the test suite's long case lists (thousands of cases, minutes)\n"
               "  --defaults   what a model run takes on this device: each case's shape once, with the\n"
               "               device's own tuning (no variants that force other work splits and paths)\n"
               "  --op NAMES   only these ops, comma-separated (the first column of --list)\n"
               "  --unchecked  record and submit every case but compare nothing: for a device that executes\n"
               "               nothing (a simulated GPU, such as Mesa's amdgpu noop DRM shim); a case passes\n"
               "               when it records and submits without an error or a validation message\n"
               "  --list       print the cases that would run (op, shape, variant), running nothing\n");
}

struct out {
    cJSON *cases; /* --json: the cases so far */
    int profile;
    int list; /* --list: the cases, not run */
    uint32_t n;
};

static double per_s(double amount, double ms) { return ms > 0 ? amount / (ms / 1e3) : 0; }

static int print_case(const struct vkllm_selftest_case *c, void *user) {
    struct out *o = user;
    o->n++;
    if (o->cases) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "op", c->op);
        cJSON_AddStringToObject(j, "variant", c->variant[0] ? c->variant : "default");
        cJSON_AddStringToObject(j, "shape", c->shape);
        cJSON_AddStringToObject(j, "measure", c->measure);
        if (o->list) {
            cJSON_AddNumberToObject(j, "bound", c->bound);
            cJSON_AddItemToArray(o->cases, j);
            return 0;
        }
        cJSON_AddNumberToObject(j, "err", c->err);
        cJSON_AddNumberToObject(j, "max_abs", c->max_abs);
        cJSON_AddNumberToObject(j, "bound", c->bound);
        cJSON_AddBoolToObject(j, "ok", c->ok);
        if (c->skipped) cJSON_AddBoolToObject(j, "skipped", 1);
        if (c->detail[0]) cJSON_AddStringToObject(j, "detail", c->detail);
        cJSON_AddStringToObject(j, "kernel", c->kernel);
        if (o->profile) {
            cJSON_AddNumberToObject(j, "gpu_ms", c->gpu_ms);
            cJSON_AddNumberToObject(j, "gb_per_s", per_s(c->gbytes, c->gpu_ms));
            cJSON_AddNumberToObject(j, "gflop_per_s", per_s(c->gflops, c->gpu_ms));
        }
        cJSON_AddItemToArray(o->cases, j);
        return 0;
    }
    if (o->list) {
        printf("%-11s %-30s %-7s %7.0e  %s\n", c->op, c->shape, c->measure, c->bound,
               c->variant[0] ? c->variant : "default");
        return 0;
    }
    printf("%-11s %-30s %-7s %9.3g %7.0e  %-4s", c->op, c->shape, c->measure, c->err, c->bound,
           c->skipped ? "skip"
           : c->ok    ? "ok"
                      : "FAIL");
    if (o->profile) printf(" %9.3f %7.2f %8.2f", c->gpu_ms, per_s(c->gbytes, c->gpu_ms), per_s(c->gflops, c->gpu_ms));
    printf("  %s", c->variant[0] ? c->variant : "default");
    if (c->detail[0]) printf("  (%s)", c->detail);
    printf("\n");
    fflush(stdout);
    return 0;
}

static cJSON *device_json(const struct vkllm_device_info *d) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "name", d->name);
    cJSON_AddStringToObject(j, "driver", d->driver_info);
    cJSON_AddStringToObject(j, "type", vkllm_device_type_str(d->type));
    return j;
}

int cli_cmd_selftest(int argc, char **argv) {
    struct vkllm_ctx_params cp = vkllm_ctx_params_default();
    struct vkllm_selftest_params sp = vkllm_selftest_params_default();
    int json = 0;
    for (int i = 1; i < argc; i++) {
        double d;
        if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_number("selftest", "--device", argv[++i], 0, 1e4, &d)) return 2;
            cp.device = (int)d;
        } else if (!strcmp(argv[i], "--validate")) cp.validate = 1;
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--profile")) sp.profile = 1;
        else if (!strcmp(argv[i], "--full")) sp.full = 1;
        else if (!strcmp(argv[i], "--defaults")) sp.defaults_only = 1;
        else if (!strcmp(argv[i], "--unchecked")) sp.unchecked = 1;
        else if (!strcmp(argv[i], "--list")) sp.list_only = 1;
        else if (!strcmp(argv[i], "--op") && i + 1 < argc) sp.ops = argv[++i];
        else return cli_other_option("selftest", argv[i], usage);
    }
    vkllm_ctx_t ctx;
    vkllm_status st = vkllm_ctx_init(&cp, &ctx);
    if (st) return cli_fail(st, "cannot open the Vulkan device");
    const struct vkllm_device_info *dev = vkllm_ctx_device(ctx);
    struct out o = {json ? cJSON_CreateArray() : NULL, sp.profile, sp.list_only, 0};
    if (!json && sp.list_only) {
        printf("%-11s %-30s %-7s %7s  variant\n", "op", "shape", "measure", "bound");
    } else if (!json) {
        printf("device: %s (%s)\n", dev->name, dev->driver_info);
        printf("%-11s %-30s %-7s %9s %7s  %-4s", "op", "shape", "measure", "err", "bound", "ok");
        if (sp.profile) printf(" %9s %7s %8s", "gpu ms", "GB/s", "GFLOP/s");
        printf("  variant\n");
    }
    uint32_t n_ok = 0, n_failed = 0, n_skipped = 0;
    st = vkllm_selftest(ctx, &sp, print_case, &o, &n_ok, &n_failed, &n_skipped);
    uint64_t vmsg = vkllm_ctx_validation_messages(ctx);
    cJSON *doc = json ? cJSON_CreateObject() : NULL;
    if (doc) {
        cJSON_AddItemToObject(doc, "device", device_json(dev));
        cJSON_AddItemToObject(doc, "cases", o.cases);
        cJSON_AddNumberToObject(doc, "ok", n_ok);
        cJSON_AddNumberToObject(doc, "failed", n_failed);
        cJSON_AddNumberToObject(doc, "skipped", n_skipped);
        cJSON_AddNumberToObject(doc, "validation_messages", (double)vmsg);
    }
    vkllm_ctx_free(ctx);
    if (st) {
        cJSON_Delete(doc);
        return cli_fail(st, "selftest");
    }
    if (doc) {
        char *s = cJSON_Print(doc);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(doc);
    } else if (sp.list_only) {
        printf("%u cases\n", o.n);
    } else {
        printf("%s: %u of %u cases %s, %u failed, %u skipped\n", n_failed ? "FAILED" : "passed", n_ok,
               n_ok + n_failed + n_skipped, sp.unchecked ? "recorded and submitted (not checked)" : "within bounds",
               n_failed, n_skipped);
    }
    if (vmsg) fprintf(stderr, "vkllm: selftest: %llu validation message(s)\n", (unsigned long long)vmsg);
    return n_failed || vmsg ? 1 : 0;
}
