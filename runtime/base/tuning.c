/* tuning.c - the tuning table (see tuning.h): defaults, the environment, settings by name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os.h"
#include "tuning.h"

static const struct vkllm__tuning_knob k_knobs[] = {
#define VKLLM__TUNING_KNOB_(field, env, def, names, help) {#field, env, def, names, help},
    VKLLM__TUNING_MAP(VKLLM__TUNING_KNOB_)
#undef VKLLM__TUNING_KNOB_
};

/* Where knob i lives in the struct, in table order. */
static long *field_of(struct vkllm__tuning *t, size_t i) {
    long *fields[] = {
#define VKLLM__TUNING_PTR_(field, env, def, names, help) &t->field,
        VKLLM__TUNING_MAP(VKLLM__TUNING_PTR_)
#undef VKLLM__TUNING_PTR_
    };
    return i < VKLLM_ARRAY_LEN(fields) ? fields[i] : NULL;
}

const struct vkllm__tuning_knob *vkllm__tuning_knob(size_t i) {
    return i < VKLLM_ARRAY_LEN(k_knobs) ? &k_knobs[i] : NULL;
}

long vkllm__tuning_get(const struct vkllm__tuning *t, size_t i) {
    const long *f = field_of((struct vkllm__tuning *)t, i);
    return f ? *f : 0;
}

void vkllm__tuning_default(struct vkllm__tuning *t) {
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(k_knobs); i++) *field_of(t, i) = k_knobs[i].def;
}

/* The value of text v for knob k: a decimal integer, or the position of v in k's value names. */
static int parse_value(const struct vkllm__tuning_knob *k, const char *v, long *out) {
    if (!v || !*v) return 0;
    char *end;
    errno = 0;
    long r = strtol(v, &end, 10);
    if (!*end && !errno) {
        *out = r;
        return 1;
    }
    size_t n = strlen(v);
    long idx = 0;
    for (const char *p = k->names; p && *p; idx++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) {
            *out = idx;
            return 1;
        }
        p = comma ? comma + 1 : p + len;
    }
    return 0;
}

static int find_knob(const char *name, size_t len) {
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(k_knobs); i++)
        if ((strlen(k_knobs[i].name) == len && !strncmp(k_knobs[i].name, name, len)) ||
            (strlen(k_knobs[i].env) == len && !strncmp(k_knobs[i].env, name, len)))
            return (int)i;
    return -1;
}

vkllm_status vkllm__tuning_from_env(struct vkllm__tuning *t) {
    vkllm_status st = VKLLM_STATUS_OK;
    vkllm__tuning_default(t);
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(k_knobs); i++) {
        const char *v = getenv(k_knobs[i].env);
        if (!v || !*v || parse_value(&k_knobs[i], v, field_of(t, i))) continue;
        if (!st)
            st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "%s='%.64s' is not a valid value (%s%s%s)", k_knobs[i].env,
                            v, k_knobs[i].help, k_knobs[i].names ? "; one of " : "",
                            k_knobs[i].names ? k_knobs[i].names : "");
    }
    return st;
}

vkllm_status vkllm__tuning_set(struct vkllm__tuning *t, const char *name, const char *value) {
    int i = name ? find_knob(name, strlen(name)) : -1;
    if (i < 0) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "unknown tuning knob '%s'", name ? name : "(null)");
    if (!value) {
        *field_of(t, (size_t)i) = k_knobs[i].def;
        return VKLLM_STATUS_OK;
    }
    if (!parse_value(&k_knobs[i], value, field_of(t, (size_t)i)))
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tuning knob %s: '%s' is not a valid value (%s%s%s)",
                          k_knobs[i].name, value ? value : "(null)", k_knobs[i].help,
                          k_knobs[i].names ? "; one of " : "", k_knobs[i].names ? k_knobs[i].names : "");
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__tuning_parse(struct vkllm__tuning *t, const char *spec) {
    for (const char *p = spec; p && *p;) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        const char *end = p + strcspn(p, ",");
        const char *eq = memchr(p, '=', (size_t)(end - p));
        char name[64], value[64];
        size_t nl = eq ? (size_t)(eq - p) : 0, vl = eq ? (size_t)(end - eq - 1) : 0;
        while (nl && p[nl - 1] == ' ') nl--;
        const char *v = eq ? eq + 1 : NULL;
        while (v && vl && *v == ' ') v++, vl--;
        while (v && vl && v[vl - 1] == ' ') vl--;
        if (!eq || nl == 0 || nl >= sizeof name || vl >= sizeof value)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "tuning '%.*s': expected name=value", (int)(end - p), p);
        memcpy(name, p, nl), name[nl] = 0;
        memcpy(value, v, vl), value[vl] = 0;
        vkllm_status st = vkllm__tuning_set(t, name, value);
        if (st) return st;
        p = end;
    }
    return VKLLM_STATUS_OK;
}

const char *vkllm__env_vulkan_library(void) {
    const char *lib = getenv("VKLLM_VULKAN_LIBRARY");
    return lib && *lib ? lib : NULL;
}

uint32_t vkllm__env_cpu_device_threads(void) {
    const char *lp = getenv("LP_NUM_THREADS");
    long nt = lp && *lp ? strtol(lp, NULL, 10) : vkllm__os_cpu_count();
    return nt > 0 ? (uint32_t)VKLLM_MIN(nt, 1024l) : 1;
}

int vkllm__env_cache_dir(char *buf, size_t n) {
    return vkllm__os_cache_dir(getenv("XDG_CACHE_HOME"), getenv("HOME"), buf, n);
}
