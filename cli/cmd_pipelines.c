/* cmd_pipelines.c - `vkllm pipelines`: build every compute pipeline the device's tuning uses
 * (or every variant) on a compile-only context, which allocates no device memory and runs
 * nothing, and print what the driver made of each: registers, spills, scratch, shared memory,
 * occupancy, code size (VK_KHR_pipeline_executable_properties) and compile time. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm pipelines [--device N] [--all] [--op NAMES] [--json] [--validate]\n"
               "\n"
               "Builds every compute pipeline that the device's tuning uses -- the same shaders,\n"
               "specialization constants and required subgroup sizes as a model run, on every shape the\n"
               "selftest's cases cover -- without\n"
               "allocating device memory or running anything, and prints per pipeline what the driver\n"
               "reports (VK_KHR_pipeline_executable_properties): registers (VGPRs/SGPRs on AMD), spills,\n"
               "scratch, shared memory, occupancy, code size, and the compile time. Works on devices\n"
               "without memory (RADV's null hardware: RADV_FORCE_FAMILY=navi21). Where the driver offers\n"
               "no statistics only the pipelines and compile times are listed (lavapipe, SwiftShader).\n"
               "\n"
               "  --device N   device index (see `vkllm devices`; default VKLLM_DEVICE or the best)\n"
               "  --all        every variant the selftest knows (other work splits, reductions, paths),\n"
               "               not only the ones this device's tuning picks\n"
               "  --op NAMES   only the pipelines of these ops (comma-separated, as `vkllm selftest --op`)\n"
               "  --json       {\"device\": ..., \"pipelines\": [{\"shader\", \"spec\", \"registers\", \"vgpr\",\n"
               "               \"spills\", \"scratch\", ..., \"stats\": {the driver's own names}}]}\n"
               "  --validate   enable the Khronos validation layer (as VKLLM_VALIDATE=1); any message fails\n"
               "\n"
               "A pipeline's shape comes from the selftest's cases (runtime/check/cases.c): shaders whose\n"
               "constants follow the model's shape may be built with other values by a real model.\n");
}

/* What the drivers call the numbers that matter, by substring of the statistic's name (lower case):
 * RADV "VGPRs", "Spilled VGPRs", "Scratch size", "LDS size", "Subgroups per SIMD", "Code size";
 * ANV "Scratch Memory Size", "Workgroup Memory Size", "Spill count"; NVIDIA "Register Count",
 * "Binary Size". -1: the driver does not say. */
struct norm {
    double vgpr, sgpr, registers, spills, scratch, shared, occupancy, code, instructions;
};

static int has(const char *name, const char *part) {
    char low[48];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof low; i++) low[i] = (char)tolower((unsigned char)name[i]);
    low[i] = 0;
    return strstr(low, part) != NULL;
}

static void normalize(const struct vkllm_pipeline_info *p, struct norm *n) {
    *n = (struct norm){-1, -1, -1, -1, -1, -1, -1, -1, -1};
    for (uint32_t i = 0; i < p->n_stats; i++) {
        const char *s = p->stats[i].name;
        double v = p->stats[i].value;
        if (has(s, "pre-sched") || has(s, "half")) continue;
        if (has(s, "spill")) n->spills = (n->spills < 0 ? 0 : n->spills) + v;
        else if (has(s, "scratch") || has(s, "local memory")) n->scratch = v;
        else if (!strcmp(s, "VGPRs")) n->vgpr = v;
        else if (!strcmp(s, "SGPRs")) n->sgpr = v;
        else if ((has(s, "register") || has(s, "gpr")) && n->registers < 0) n->registers = v;
        else if (has(s, "lds") || has(s, "shared") || has(s, "workgroup memory")) n->shared = v;
        else if (has(s, "per simd") || has(s, "waves") || has(s, "occupancy")) n->occupancy = v;
        else if (has(s, "code size") || has(s, "binary size")) n->code = v;
        else if (!strcmp(s, "Instructions") || has(s, "instruction count")) n->instructions = v;
    }
    if (n->registers < 0) n->registers = n->vgpr;
}

struct list {
    cJSON *arr; /* --json */
    uint32_t n, n_stats, n_spilling;
    double compile_ms, max_registers;
};

static void add_num(cJSON *o, const char *key, double v) {
    if (v < 0) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}

static void print_num(double v, int width) {
    if (v < 0) printf(" %*s", width, "-");
    else printf(" %*.0f", width, v);
}

static int each(const struct vkllm_pipeline_info *p, void *user) {
    struct list *l = user;
    struct norm n;
    normalize(p, &n);
    l->n++;
    l->compile_ms += p->compile_ms;
    if (p->n_stats) l->n_stats++;
    if (n.spills > 0 || n.scratch > 0) l->n_spilling++;
    if (n.registers > l->max_registers) l->max_registers = n.registers;
    char spec[96] = "";
    for (uint32_t i = 1, o = 0; i < p->n_spec && o < sizeof spec - 12; i++)
        o += (uint32_t)snprintf(spec + o, sizeof spec - o, "%s%u", i > 1 ? "," : "", p->spec[i]);
    if (l->arr) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "shader", p->shader);
        cJSON *sp = cJSON_AddArrayToObject(j, "spec");
        for (uint32_t i = 0; i < p->n_spec; i++) cJSON_AddItemToArray(sp, cJSON_CreateNumber(p->spec[i]));
        cJSON_AddNumberToObject(j, "workgroup", p->n_spec ? p->spec[0] : 1);
        cJSON_AddNumberToObject(j, "required_subgroup", p->required_subgroup);
        add_num(j, "subgroup_size", p->subgroup_size ? (double)p->subgroup_size : -1);
        cJSON_AddNumberToObject(j, "compile_ms", p->compile_ms);
        if (p->cache_hit >= 0) cJSON_AddBoolToObject(j, "cache_hit", p->cache_hit);
        else cJSON_AddNullToObject(j, "cache_hit");
        add_num(j, "registers", n.registers);
        add_num(j, "vgpr", n.vgpr);
        add_num(j, "sgpr", n.sgpr);
        add_num(j, "spills", n.spills);
        add_num(j, "scratch", n.scratch);
        add_num(j, "shared_bytes", n.shared);
        add_num(j, "occupancy", n.occupancy);
        add_num(j, "code_bytes", n.code);
        add_num(j, "instructions", n.instructions);
        cJSON *st = cJSON_AddObjectToObject(j, "stats");
        for (uint32_t i = 0; i < p->n_stats; i++) /* hashes are no quantity (and lose digits as doubles) */
            if (!has(p->stats[i].name, "hash") && !cJSON_GetObjectItemCaseSensitive(st, p->stats[i].name))
                cJSON_AddNumberToObject(st, p->stats[i].name, p->stats[i].value);
        cJSON_AddItemToArray(l->arr, j);
        return 0;
    }
    char sg[16];
    if (p->required_subgroup) snprintf(sg, sizeof sg, "%u!", p->required_subgroup);
    else if (p->subgroup_size) snprintf(sg, sizeof sg, "%u", p->subgroup_size);
    else snprintf(sg, sizeof sg, "-");
    printf("%-26s %5u %4s %-18s %8.1f", p->shader, p->n_spec ? p->spec[0] : 1, sg, spec[0] ? spec : "-", p->compile_ms);
    print_num(n.registers, 5);
    print_num(n.sgpr, 5);
    print_num(n.spills, 6);
    print_num(n.scratch, 7);
    print_num(n.shared, 7);
    print_num(n.occupancy, 4);
    print_num(n.code, 7);
    printf("\n");
    return 0;
}

int cli_cmd_pipelines(int argc, char **argv) {
    struct vkllm_ctx_params cp = vkllm_ctx_params_default();
    struct vkllm_selftest_params sp = vkllm_selftest_params_default();
    sp.defaults_only = 1; /* every case's shape, as this device's tuning runs it */
    sp.unchecked = 1;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        double d;
        if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (cli_number("pipelines", "--device", argv[++i], 0, 1e4, &d)) return 2;
            cp.device = (int)d;
        } else if (!strcmp(argv[i], "--all")) sp.defaults_only = 0;
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--validate")) cp.validate = 1;
        else if (!strcmp(argv[i], "--op") && i + 1 < argc) sp.ops = argv[++i];
        else return cli_other_option("pipelines", argv[i], usage);
    }
    cp.compile_only = 1;
    vkllm_ctx_t ctx;
    vkllm_status st = vkllm_ctx_init(&cp, &ctx);
    if (st) return cli_fail(st, "cannot open the Vulkan device");
    const struct vkllm_device_info *dev = vkllm_ctx_device(ctx);
    uint32_t n_ok = 0, n_failed = 0, n_skipped = 0;
    st = vkllm_selftest(ctx, &sp, NULL, NULL, &n_ok, &n_failed, &n_skipped);
    if (st) {
        vkllm_ctx_free(ctx);
        return cli_fail(st, "pipelines");
    }
    struct list l = {.arr = json ? cJSON_CreateArray() : NULL};
    if (!json) {
        printf("device: %s (%s)%s\n", dev->name, dev->driver_info,
               dev->pipeline_statistics ? "" : ": the driver offers no pipeline statistics");
        printf("%-26s %5s %4s %-18s %8s %5s %5s %6s %7s %7s %4s %7s\n", "shader", "wg", "sg", "spec", "ms", "regs",
               "sgpr", "spills", "scratch", "shared", "occ", "code");
    }
    st = vkllm_ctx_pipelines(ctx, each, &l, NULL);
    uint64_t vmsg = vkllm_ctx_validation_messages(ctx);
    uint64_t mem = vkllm_ctx_device_memory_used(ctx); /* 0: compile-only allocates nothing */
    if (st) {
        cJSON_Delete(l.arr);
        vkllm_ctx_free(ctx);
        return cli_fail(st, "pipelines");
    }
    if (json) {
        cJSON *doc = cJSON_CreateObject();
        cJSON *d = cJSON_AddObjectToObject(doc, "device");
        cJSON_AddStringToObject(d, "name", dev->name);
        cJSON_AddStringToObject(d, "driver", dev->driver_info);
        cJSON_AddStringToObject(d, "type", vkllm_device_type_str(dev->type));
        cJSON_AddBoolToObject(d, "pipeline_statistics", dev->pipeline_statistics);
        cJSON_AddStringToObject(doc, "variants", sp.defaults_only ? "defaults" : "all");
        cJSON_AddNumberToObject(doc, "cases", n_ok + n_failed + n_skipped);
        cJSON_AddNumberToObject(doc, "cases_skipped", n_skipped);
        cJSON_AddNumberToObject(doc, "compile_ms", l.compile_ms);
        cJSON_AddNumberToObject(doc, "validation_messages", (double)vmsg);
        cJSON_AddNumberToObject(doc, "device_memory_bytes", (double)mem);
        cJSON_AddItemToObject(doc, "pipelines", l.arr);
        char *s = cJSON_Print(doc);
        if (s) printf("%s\n", s);
        free(s);
        cJSON_Delete(doc);
    } else {
        printf("%u pipelines from %u cases (%u skipped: the device cannot run them), %.0f ms compiling, %llu bytes "
               "of device memory",
               l.n, n_ok + n_failed + n_skipped, n_skipped, l.compile_ms, (unsigned long long)mem);
        if (l.n_stats) printf("; at most %.0f registers; %u with spills or scratch", l.max_registers, l.n_spilling);
        printf("\n");
    }
    vkllm_ctx_free(ctx);
    if (vmsg) fprintf(stderr, "vkllm: pipelines: %llu validation message(s)\n", (unsigned long long)vmsg);
    return vmsg ? 1 : 0;
}
