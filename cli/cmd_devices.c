/* cmd_devices.c - `vkllm devices [--json]`: every Vulkan device and the capabilities that matter
 * for inference. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vkllm devices [--json] [--tuning]\n"
               "\n"
               "Lists every Vulkan device: a summary table, then each device's capabilities.\n"
               "The index in the first column is what --device N and VKLLM_DEVICE=N take.\n"
               "\n"
               "  --json     one JSON document with every field, for machines\n"
               "  --tuning   the tuning knobs instead: each VKLLM_* variable, its default, the values\n"
               "             it takes and the value the environment sets. VKLLM_DEVICE_PROFILE=NAME\n"
               "             clamps what a device reports to a published GPU's features and limits\n");
}

static void api_str(uint32_t v, char *buf, size_t n) {
    snprintf(buf, n, "%u.%u.%u", (v >> 22) & 0x7f, (v >> 12) & 0x3ff, v & 0xfff);
}

static const char *subgroup_ops_str(uint32_t ops, char *buf, size_t n) {
    static const char *names[] = {"basic",     "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative",
                                  "clustered", "quad"};
    buf[0] = 0;
    for (int i = 0; i < 8; i++)
        if (ops & (1u << i)) {
            size_t l = strlen(buf);
            snprintf(buf + l, n - l, "%s%s", l ? " " : "", names[i]);
        }
    return buf;
}

static uint64_t device_local_bytes(const struct vkllm_device_info *d) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < d->heap_count; i++)
        if (d->heap_device_local[i]) s += d->heap_size[i];
    return s;
}

static void print_table(const struct vkllm_device_info *devs, uint32_t n) {
    printf("%-3s %-36s %-15s %-8s %-8s %9s %4s %4s %4s %5s %10s\n", "#", "name", "type", "vendor", "api", "memory",
           "sg", "fp16", "int8", "coop", "max-bind");
    for (uint32_t i = 0; i < n; i++) {
        const struct vkllm_device_info *d = &devs[i];
        char api[32];
        api_str(d->api_version, api, sizeof api);
        printf("%-3u %-36.36s %-15s %-8s %-8s %6.1fGiB %4u %4s %4s %5s %7lluMiB\n", d->index, d->name,
               vkllm_device_type_str(d->type), d->vendor, api, device_local_bytes(d) / 1073741824.0, d->subgroup_size,
               d->fp16_arith ? "yes" : "no", d->int8_arith ? "yes" : "no", d->cooperative_matrix ? "yes" : "no",
               (unsigned long long)(d->max_storage_buffer_range >> 20));
    }
}

static void print_details(const struct vkllm_device_info *d) {
    char api[32], ops[160];
    api_str(d->api_version, api, sizeof api);
    printf("\ndevice %u: %s\n", d->index, d->name);
    printf("  vendor                  %s (0x%04x), device id 0x%04x\n", d->vendor, d->vendor_id, d->device_id);
    printf("  type                    %s\n", vkllm_device_type_str(d->type));
    if (d->profile[0])
        printf("  device profile          %s (VKLLM_DEVICE_PROFILE: features and limits below clamped to it)\n",
               d->profile);
    printf("  driver                  %s, %s (version 0x%08x)\n", d->driver_name, d->driver_info, d->driver_version);
    printf("  Vulkan API              %s\n", api);
    for (uint32_t h = 0; h < d->heap_count; h++) {
        printf("  memory heap %u           %llu bytes (%.2f GiB)%s", h, (unsigned long long)d->heap_size[h],
               d->heap_size[h] / 1073741824.0, d->heap_device_local[h] ? ", device-local" : "");
        if (d->memory_budget)
            printf(", budget %.2f GiB, %.2f GiB in use (VK_EXT_memory_budget)", d->heap_budget[h] / 1073741824.0,
                   d->heap_usage[h] / 1073741824.0);
        printf("\n");
    }
    for (uint32_t t = 0; t < d->memory_type_count; t++) {
        uint32_t f = d->memory_types[t].flags;
        printf(
            "  memory type %-2u          heap %u:%s%s%s%s\n", t, d->memory_types[t].heap,
            f & VKLLM_MEMORY_DEVICE_LOCAL ? " device-local" : "", f & VKLLM_MEMORY_HOST_VISIBLE ? " host-visible" : "",
            f & VKLLM_MEMORY_HOST_COHERENT ? " host-coherent" : "", f & VKLLM_MEMORY_HOST_CACHED ? " host-cached" : "");
    }
    printf("  unified memory          %s\n", d->unified_memory ? "yes" : "no");
    printf("  subgroup size           %u", d->subgroup_size);
    if (d->subgroup_size_min) printf(" (range %u..%u)", d->subgroup_size_min, d->subgroup_size_max);
    printf("%s", d->subgroup_size_control ? ", size control with full subgroups" : "");
    printf("\n  subgroup operations     %s\n", subgroup_ops_str(d->subgroup_ops, ops, sizeof ops));
    printf("  fp16 / int8 / int64     %s / %s / %s\n", d->fp16_arith ? "yes" : "no", d->int8_arith ? "yes" : "no",
           d->int64_arith ? "yes" : "no");
    printf("  16-bit / 8-bit storage  %s / %s\n", d->storage_16bit ? "yes" : "no", d->storage_8bit ? "yes" : "no");
    printf("  integer dot product     %s%s\n", d->integer_dot_product ? "yes" : "no",
           d->integer_dot_product ? (d->integer_dot_product_accel ? " (accelerated)" : " (not accelerated)") : "");
    printf("  buffer device address   %s\n", d->buffer_device_address ? "yes" : "no");
    printf("  cooperative matrix      %s\n", d->cooperative_matrix ? "yes" : "no");
    for (uint32_t i = 0; i < d->coopmat_shape_count; i++) {
        const struct vkllm_coopmat_shape *s = &d->coopmat_shapes[i];
        printf("    %ux%ux%u  A %u B %u C %u R %u\n", s->m, s->n, s->k, s->a_type, s->b_type, s->c_type,
               s->result_type);
    }
    printf("  maxStorageBufferRange   %llu\n", (unsigned long long)d->max_storage_buffer_range);
    printf("  maxMemoryAllocationSize %llu\n", (unsigned long long)d->max_memory_allocation_size);
    printf("  storage offset align    %llu\n", (unsigned long long)d->min_storage_buffer_offset_alignment);
    printf("  texel offset align      %llu\n", (unsigned long long)d->min_texel_buffer_offset_alignment);
    printf("  uniform offset align    %llu\n", (unsigned long long)d->min_uniform_buffer_offset_alignment);
    printf("  shared memory           %u bytes\n", d->max_shared_memory);
    printf("  workgroup invocations   %u\n", d->max_workgroup_invocations);
    printf("  workgroup size          %u x %u x %u\n", d->max_workgroup_size[0], d->max_workgroup_size[1],
           d->max_workgroup_size[2]);
    printf("  workgroup count         %u x %u x %u\n", d->max_workgroup_count[0], d->max_workgroup_count[1],
           d->max_workgroup_count[2]);
    printf("  push constants          %u bytes\n", d->max_push_constants);
    printf("  timestamps              %s", d->timestamps ? "yes" : "no");
    if (d->timestamps) printf(" (period %g ns, %u valid bits)", d->timestamp_period_ns, d->timestamp_valid_bits);
    printf("\n  usable by vkllm         %s\n", d->usable ? "yes" : "no");
}

static cJSON *device_json(const struct vkllm_device_info *d) {
    char api[32], ops[160];
    api_str(d->api_version, api, sizeof api);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", d->index);
    cJSON_AddStringToObject(o, "name", d->name);
    cJSON_AddStringToObject(o, "vendor", d->vendor);
    cJSON_AddNumberToObject(o, "vendor_id", d->vendor_id);
    cJSON_AddNumberToObject(o, "device_id", d->device_id);
    cJSON_AddStringToObject(o, "type", vkllm_device_type_str(d->type));
    cJSON_AddStringToObject(o, "driver_name", d->driver_name);
    cJSON_AddStringToObject(o, "driver_info", d->driver_info);
    cJSON_AddNumberToObject(o, "driver_version", d->driver_version);
    cJSON_AddStringToObject(o, "api_version", api);
    if (d->profile[0]) cJSON_AddStringToObject(o, "profile", d->profile);
    else cJSON_AddNullToObject(o, "profile");
    cJSON_AddBoolToObject(o, "memory_budget", d->memory_budget);
    cJSON *heaps = cJSON_AddArrayToObject(o, "memory_heaps");
    for (uint32_t h = 0; h < d->heap_count; h++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "size", (double)d->heap_size[h]);
        cJSON_AddBoolToObject(x, "device_local", d->heap_device_local[h]);
        if (d->memory_budget) {
            cJSON_AddNumberToObject(x, "budget", (double)d->heap_budget[h]);
            cJSON_AddNumberToObject(x, "usage", (double)d->heap_usage[h]);
        } else {
            cJSON_AddNullToObject(x, "budget");
            cJSON_AddNullToObject(x, "usage");
        }
        cJSON_AddItemToArray(heaps, x);
    }
    cJSON *types = cJSON_AddArrayToObject(o, "memory_types");
    for (uint32_t t = 0; t < d->memory_type_count; t++) {
        cJSON *x = cJSON_CreateObject();
        uint32_t f = d->memory_types[t].flags;
        cJSON_AddNumberToObject(x, "heap", d->memory_types[t].heap);
        cJSON_AddBoolToObject(x, "device_local", !!(f & VKLLM_MEMORY_DEVICE_LOCAL));
        cJSON_AddBoolToObject(x, "host_visible", !!(f & VKLLM_MEMORY_HOST_VISIBLE));
        cJSON_AddBoolToObject(x, "host_coherent", !!(f & VKLLM_MEMORY_HOST_COHERENT));
        cJSON_AddBoolToObject(x, "host_cached", !!(f & VKLLM_MEMORY_HOST_CACHED));
        cJSON_AddItemToArray(types, x);
    }
    CLI_JSON_ADD(o, CLI_BOOL("unified_memory", d->unified_memory), CLI_NUM("subgroup_size", d->subgroup_size),
                 CLI_NUM("subgroup_size_min", d->subgroup_size_min), CLI_NUM("subgroup_size_max", d->subgroup_size_max),
                 CLI_BOOL("subgroup_size_control", d->subgroup_size_control));
    cJSON_AddStringToObject(o, "subgroup_operations", subgroup_ops_str(d->subgroup_ops, ops, sizeof ops));
    CLI_JSON_ADD(o, CLI_BOOL("fp16_arith", d->fp16_arith), CLI_BOOL("int8_arith", d->int8_arith),
                 CLI_BOOL("int64_arith", d->int64_arith), CLI_BOOL("storage_16bit", d->storage_16bit),
                 CLI_BOOL("storage_8bit", d->storage_8bit), CLI_BOOL("integer_dot_product", d->integer_dot_product),
                 CLI_BOOL("integer_dot_product_accelerated", d->integer_dot_product_accel),
                 CLI_BOOL("buffer_device_address", d->buffer_device_address),
                 CLI_BOOL("cooperative_matrix", d->cooperative_matrix));
    cJSON *shapes = cJSON_AddArrayToObject(o, "cooperative_matrix_shapes");
    for (uint32_t i = 0; i < d->coopmat_shape_count; i++) {
        const struct vkllm_coopmat_shape *s = &d->coopmat_shapes[i];
        cJSON *x = cJSON_CreateObject();
        CLI_JSON_ADD(x, CLI_NUM("m", s->m), CLI_NUM("n", s->n), CLI_NUM("k", s->k), CLI_NUM("a_type", s->a_type),
                     CLI_NUM("b_type", s->b_type), CLI_NUM("c_type", s->c_type),
                     CLI_NUM("result_type", s->result_type));
        cJSON_AddItemToArray(shapes, x);
    }
    CLI_JSON_ADD(o, CLI_NUM("max_storage_buffer_range", d->max_storage_buffer_range),
                 CLI_NUM("max_memory_allocation_size", d->max_memory_allocation_size),
                 CLI_NUM("min_storage_buffer_offset_alignment", d->min_storage_buffer_offset_alignment),
                 CLI_NUM("min_texel_buffer_offset_alignment", d->min_texel_buffer_offset_alignment),
                 CLI_NUM("min_uniform_buffer_offset_alignment", d->min_uniform_buffer_offset_alignment),
                 CLI_NUM("max_shared_memory", d->max_shared_memory),
                 CLI_NUM("max_workgroup_invocations", d->max_workgroup_invocations),
                 CLI_NUM("max_texel_buffer_elements", d->max_texel_buffer_elements),
                 CLI_NUM("max_uniform_buffer_range", d->max_uniform_buffer_range));
    cJSON *ws = cJSON_AddArrayToObject(o, "max_workgroup_size");
    cJSON *wc = cJSON_AddArrayToObject(o, "max_workgroup_count");
    for (int i = 0; i < 3; i++) {
        cJSON_AddItemToArray(ws, cJSON_CreateNumber(d->max_workgroup_size[i]));
        cJSON_AddItemToArray(wc, cJSON_CreateNumber(d->max_workgroup_count[i]));
    }
    CLI_JSON_ADD(o, CLI_NUM("max_push_constants", d->max_push_constants), CLI_BOOL("timestamps", d->timestamps),
                 CLI_NUM("timestamp_period_ns", d->timestamp_period_ns),
                 CLI_NUM("timestamp_valid_bits", d->timestamp_valid_bits),
                 CLI_BOOL("compute_queue", d->has_compute_queue), CLI_BOOL("usable", d->usable));
    return o;
}

/* The knobs of vkllm_tuning_knob, and what the environment sets them to. */
static int print_tuning(int json) {
    cJSON *root = json ? cJSON_CreateObject() : NULL, *arr = json ? cJSON_AddArrayToObject(root, "tuning") : NULL;
    if (!json) printf("%-20s %-26s %8s  %s\n", "knob", "variable", "default", "set to");
    struct vkllm_tuning_knob k;
    for (size_t i = 0; vkllm_tuning_knob(i, &k); i++) {
        const char *v = getenv(k.env);
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", k.name);
            cJSON_AddStringToObject(o, "env", k.env);
            cJSON_AddNumberToObject(o, "default", (double)k.default_value);
            cJSON *names = cJSON_AddArrayToObject(o, "value_names");
            for (const char *p = k.value_names; p && *p;) {
                size_t len = strcspn(p, ",");
                char buf[64];
                snprintf(buf, sizeof buf, "%.*s", (int)len, p);
                cJSON_AddItemToArray(names, cJSON_CreateString(buf));
                p += len + (p[len] == ',');
            }
            cJSON_AddStringToObject(o, "help", k.help);
            if (v && *v) cJSON_AddStringToObject(o, "set_to", v);
            else cJSON_AddNullToObject(o, "set_to");
            cJSON_AddItemToArray(arr, o);
            continue;
        }
        printf("%-20s %-26s %8ld  %s\n", k.name, k.env, k.default_value, v && *v ? v : "-");
        printf("    %s\n", k.help);
        if (k.value_names) printf("    values: %s (or their positions 0, 1, ...)\n", k.value_names);
    }
    if (json) {
        char *s = cJSON_Print(root);
        if (s) printf("%s\n", s);
        cJSON_free(s);
        cJSON_Delete(root);
    }
    return 0;
}

int cli_cmd_devices(int argc, char **argv) {
    int json = 0, tuning = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--tuning")) tuning = 1;
        else return cli_other_option("devices", argv[i], usage);
    }
    if (tuning) return print_tuning(json);
    struct vkllm_device_info *devs = NULL;
    uint32_t n = 0;
    vkllm_status st = vkllm_devices_list(&devs, &n);
    if (st) return cli_fail(st, "cannot list Vulkan devices");
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "vkllm_version", vkllm_version());
        cJSON *arr = cJSON_AddArrayToObject(root, "devices");
        for (uint32_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, device_json(&devs[i]));
        char *s = cJSON_Print(root);
        if (s) printf("%s\n", s);
        cJSON_free(s);
        cJSON_Delete(root);
    } else if (n == 0) {
        printf("no Vulkan devices found\n");
    } else {
        print_table(devs, n);
        for (uint32_t i = 0; i < n; i++) print_details(&devs[i]);
    }
    vkllm_devices_free(devs);
    return 0;
}
