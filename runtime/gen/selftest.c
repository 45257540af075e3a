/* selftest.c - the public selftest (vkllm.h): the short (or full) case list of every op of the
 * op-case registry (runtime/check), run on the context's device. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "context.h"

struct vkllm_selftest_params vkllm_selftest_params_default(void) {
    struct vkllm_selftest_params p = {
        .full = 0, .profile = 0, .ops = NULL, .defaults_only = 0, .list_only = 0, .unchecked = 0};
    return p;
}

/* 1 if op is named in the comma-separated list (NULL or "": every op). */
static int selected(const char *list, const char *op) {
    if (!list || !*list) return 1;
    size_t n = strlen(op);
    for (const char *p = list; *p;) {
        const char *end = p + strcspn(p, ",");
        if ((size_t)(end - p) == n && !strncmp(p, op, n)) return 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static void to_public(const struct vkllm__op_case *c, const struct vkllm__op_result *r, struct vkllm_selftest_case *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->op, sizeof o->op, "%s", vkllm__op_name(c->op));
    snprintf(o->variant, sizeof o->variant, "%s", c->tuning);
    vkllm__op_case_shape(c, o->shape, sizeof o->shape);
    snprintf(o->measure, sizeof o->measure, "%s", vkllm__op_measure(c->op));
    o->err = r->err, o->bound = r->bound, o->max_abs = r->max_abs, o->ok = r->ok, o->skipped = r->skipped;
    snprintf(o->detail, sizeof o->detail, "%s", r->detail);
    snprintf(o->kernel, sizeof o->kernel, "%s", r->kernel);
    o->gpu_ms = r->gpu_ns / 1e6, o->gbytes = r->bytes / 1e9, o->gflops = r->flops / 1e9;
}

/* Whether case c exists to force one kernel, a split or a weight layout the device does not take
 * by default (through its flags: its tuning string may be empty). */
static int forces_path(struct vkllm__gpu *gpu, const struct vkllm__op_case *c) {
    if (c->flags & (VKLLM__CASE_X8 | VKLLM__CASE_COOPMAT | VKLLM__CASE_SPLIT | VKLLM__CASE_PARTS)) return 1;
    return (c->flags & VKLLM__CASE_RP) && !vkllm__dtensor_rp_row_bytes(gpu, c->type, c->cols);
}

/* defaults_only: case i of l with the device's own tuning (its variant dropped), unless a case
 * before it has the same op, shape and flags, or it exists to force one kernel, a split or a weight
 * layout the device does not take by default (the 16-byte layout on CPU devices). */
static int as_device(struct vkllm__gpu *gpu, struct vkllm__case_list *l, size_t i) {
    struct vkllm__op_case *c = &l->v[i];
    if (forces_path(gpu, c)) return 0;
    c->tuning[0] = 0;
    char a[96], b[96];
    vkllm__op_case_shape(c, a, sizeof a);
    for (size_t j = 0; j < i; j++) {
        const struct vkllm__op_case *o = &l->v[j];
        if (o->op != c->op || o->flags != c->flags || o->tuning[0]) continue; /* o: an earlier one kept */
        vkllm__op_case_shape(o, b, sizeof b);
        if (!strcmp(a, b)) return 0;
    }
    return 1;
}

vkllm_status vkllm_selftest(vkllm_ctx_t ctx, const struct vkllm_selftest_params *params, vkllm_selftest_fn fn,
                            void *user_data, uint32_t *n_ok, uint32_t *n_failed, uint32_t *n_skipped) {
    if (!ctx) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "vkllm_selftest: ctx is NULL");
    struct vkllm_selftest_params p = params ? *params : vkllm_selftest_params_default();
    /* nothing a compile-only context computes can be compared */
    int unchecked = p.unchecked || vkllm__gpu_compile_only(ctx->gpu);
    uint32_t ok = 0, failed = 0, skipped = 0, any = 0;
    int stop = 0;
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm__op_memo memo = {0};
    for (int op = 0; op < VKLLM__OP_COUNT_ && !st && !stop; op++) {
        if (!selected(p.ops, vkllm__op_name((enum vkllm__op)op))) continue;
        any = 1;
        struct vkllm__case_list l = {0};
        vkllm__op_cases((enum vkllm__op)op, p.full, &l);
        st = l.st;
        for (size_t i = 0; i < l.n && !st && !stop; i++) {
            if (p.defaults_only && !as_device(ctx->gpu, &l, i)) continue;
            struct vkllm__op_result r;
            if (p.list_only) {
                memset(&r, 0, sizeof r);
                r.bound = vkllm__op_bound(l.v[i].op);
                struct vkllm_selftest_case pc;
                to_public(&l.v[i], &r, &pc);
                stop = fn && fn(&pc, user_data);
                continue;
            }
            if ((st = vkllm__op_check(ctx->gpu, &l.v[i], i + 1, p.profile, &memo, &r))) {
                /* a variant this device cannot run (a limit or path its knobs force) is skipped,
                 * saying why; a case with the device's own tuning that the op refuses is a shape
                 * a model run could not take there: failed. A device or host failure ends the
                 * selftest. */
                if (st != VKLLM_STATUS_UNSUPPORTED && st != VKLLM_STATUS_INVALID_ARGUMENT) break;
                int own = !l.v[i].tuning[0] && !forces_path(ctx->gpu, &l.v[i]);
                memset(&r, 0, sizeof r);
                r.bound = vkllm__op_bound(l.v[i].op), r.skipped = !own;
                snprintf(r.detail, sizeof r.detail, "refused%s: %s", own ? " with the device's own tuning" : "",
                         vkllm_last_error());
                st = VKLLM_STATUS_OK;
            } else if (unchecked && !r.skipped) { /* recorded and submitted: that is all it says */
                r.ok = 1, r.err = 0;
                snprintf(r.detail, sizeof r.detail, "not checked: recorded and submitted only");
            }
            ok += r.ok, skipped += r.skipped, failed += !r.ok && !r.skipped;
            struct vkllm_selftest_case pc;
            to_public(&l.v[i], &r, &pc);
            stop = fn && fn(&pc, user_data);
        }
        vkllm__case_list_free(&l);
    }
    vkllm__op_memo_free(&memo);
    if (!st && !any) st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "selftest: no op named in '%s'", p.ops);
    if (n_ok) *n_ok = ok;
    if (n_failed) *n_failed = failed;
    if (n_skipped) *n_skipped = skipped;
    return st;
}
