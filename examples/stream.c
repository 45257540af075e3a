/* stream.c - embedding vkllm in an application: pick a GPU by name, load a GGUF model and stream
 * a reply through the text callback as it is generated.
 *
 *   stream MODEL [-p PROMPT] [-n TOKENS] [--temp T] [--device NAME]
 *
 * --device NAME picks the first Vulkan device whose name contains NAME (ignoring case: "radeon",
 * "intel", "llvmpipe"); without it vkllm chooses (a discrete GPU first). The devices are listed on
 * stderr. The reply goes to stdout as it comes, then a newline (as `vkllm run` prints it).
 *
 * Portable C11 and the public header alone: it builds on Linux, macOS and Windows (MinGW, MSVC).
 * Build against an installed vkllm with examples/CMakeLists.txt (find_package) or the Makefile
 * beside it (pkg-config). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vkllm.h>

/* 1 when hay contains needle, ignoring ASCII case (strcasestr is not in C11). */
static int contains_nocase(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

/* The index of the first usable device whose name contains name; -1 (and the list on stderr)
 * when none does. */
static int pick_device(const char *name) {
    struct vkllm_device_info *devs = NULL;
    uint32_t n = 0;
    if (vkllm_devices_list(&devs, &n) != VKLLM_STATUS_OK) {
        fprintf(stderr, "stream: cannot list Vulkan devices: %s\n", vkllm_last_error());
        return -1;
    }
    int found = -1;
    for (uint32_t i = 0; i < n; i++) {
        fprintf(stderr, "device %u: %s (%s, %s)%s\n", devs[i].index, devs[i].name, vkllm_device_type_str(devs[i].type),
                devs[i].driver_info, devs[i].usable ? "" : " [not usable]");
        if (found < 0 && devs[i].usable && name && contains_nocase(devs[i].name, name)) found = (int)devs[i].index;
    }
    vkllm_devices_free(devs);
    if (name && found < 0) fprintf(stderr, "stream: no usable device's name contains \"%s\"\n", name);
    return found;
}

/* The text callback: called on the thread that called vkllm_generate, with whole UTF-8
 * characters. A GUI would append to its text view here (or post to its UI thread). Return
 * nonzero to stop the generation. */
static int on_text(const char *text, size_t len, void *user_data) {
    size_t *bytes = user_data;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    *bytes += len;
    return 0;
}

static int fail(const char *what, vkllm_status st) {
    fprintf(stderr, "stream: %s: %s: %s\n", what, vkllm_status_str(st), vkllm_last_error());
    return 1;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *prompt = "Once upon a time", *device_name = NULL;
    long n_predict = 64;
    double temp = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "-p") && has_value) prompt = argv[++i];
        else if (!strcmp(a, "-n") && has_value) n_predict = strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--temp") && has_value) temp = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--device") && has_value) device_name = argv[++i];
        else if (a[0] != '-' && !model_path) model_path = a;
        else {
            fprintf(stderr, "usage: stream MODEL [-p PROMPT] [-n TOKENS] [--temp T] [--device NAME]\n");
            return 2;
        }
    }
    if (!model_path) {
        fprintf(stderr, "usage: stream MODEL [-p PROMPT] [-n TOKENS] [--temp T] [--device NAME]\n");
        return 2;
    }

    int device = pick_device(device_name);
    if (device_name && device < 0) return 1;

    /* Handles are made in this order and freed in the reverse one: context, model, session. */
    struct vkllm_ctx_params cp = vkllm_ctx_params_default();
    cp.device = device; /* -1: VKLLM_DEVICE or the best device */
    vkllm_ctx_t ctx = NULL;
    vkllm_model_t model = NULL;
    vkllm_session_t session = NULL;
    vkllm_status st;
    int code = 1;
    if ((st = vkllm_ctx_init(&cp, &ctx))) return fail("opening the device", st);
    fprintf(stderr, "using %s\n", vkllm_ctx_device(ctx)->name);
    struct vkllm_model_params mp = vkllm_model_params_default();
    if ((st = vkllm_model_load(ctx, model_path, &mp, &model))) {
        fail(model_path, st);
        goto done;
    }
    struct vkllm_session_params sp = vkllm_session_params_default();
    if ((st = vkllm_session_init(model, &sp, &session))) {
        fail("creating a session", st);
        goto done;
    }

    struct vkllm_generate_params gp = vkllm_generate_params_default();
    gp.prompt = prompt;
    gp.n_predict = (int32_t)n_predict;
    gp.sampling.temperature = (float)temp; /* 0: greedy */
    size_t bytes = 0;
    struct vkllm_generate_stats stats;
    st = vkllm_generate(session, &gp, on_text, &bytes, &stats);
    printf("\n");
    fflush(stdout);
    if (st) {
        fail("generating", st);
        goto done;
    }
    fprintf(stderr, "%u tokens (%zu bytes), %.1f tokens/s, stopped by %s\n", stats.n_generated, bytes, stats.decode_tps,
            vkllm_stop_reason_str(stats.stop_reason));
    code = 0;
done:
    vkllm_session_free(session);
    vkllm_model_free(model);
    vkllm_ctx_free(ctx);
    return code;
}
