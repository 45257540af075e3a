/* main.c - `vkllm-glslc INCLUDE_DIR JOBFILE`: the build step that compiles many variants of the
 * compute shaders in one process through glslang's C interface (Debian: glslang-dev), each job
 * giving the same SPIR-V as
 *     glslangValidator -V --target-env vulkan1.1 --quiet -IINCLUDE_DIR -D... -o OUT.spv SRC.comp
 * (byte for byte with glslang 12). A glslangValidator process spends ~0.2 s of CPU setting up
 * glslang's built-in symbol tables before it compiles anything; here that is done once, and a
 * variant costs ~5 ms: the 350-odd modules of a build in ~2 CPU-seconds instead of ~80.
 *
 * JOBFILE: one job a line, `OUT.spv SRC.comp [-DNAME[=VALUE] ...]`, paths absolute or relative
 * to where the tool is started. Every job is tried; the exit status is 1 if any failed (its
 * output removed, glslang's log on stderr), 2 on a usage error.
 *
 * glslang 12's C interface takes no include callbacks: #include "x" is looked up relative to the
 * working directory (then to the including file's), so the tool changes to INCLUDE_DIR first. That
 * matches glslangValidator's -I as long as no header sits beside the .comp files (none does). The
 * -D defines go in the preamble as glslangValidator writes them: "#define NAME VALUE". */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>

#define MAX_ARGS 64

/* The whole file, NUL-terminated; NULL on failure. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t got = 1; buf && got;) {
        if (len + 1 == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) free(buf);
            buf = p;
            if (!buf) break;
        }
        got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    return buf;
}

/* Compile src with preamble (the defines) to out; 0 on success. */
static int compile(const char *out, const char *src, const char *preamble) {
    char *code = read_text(src);
    if (!code) {
        fprintf(stderr, "vkllm-glslc: %s: %s\n", src, strerror(errno));
        return 1;
    }
    const glslang_input_t input = {
        .language = GLSLANG_SOURCE_GLSL,
        .stage = GLSLANG_STAGE_COMPUTE,
        .client = GLSLANG_CLIENT_VULKAN,
        .client_version = GLSLANG_TARGET_VULKAN_1_1,
        .target_language = GLSLANG_TARGET_SPV,
        .target_language_version = GLSLANG_TARGET_SPV_1_3,
        .code = code,
        .default_version = 100, /* glslangValidator's, for sources and the client's input semantics */
        .default_profile = GLSLANG_NO_PROFILE,
        .messages = GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT,
        .resource = glslang_default_resource(),
    };
    int rc = 1;
    glslang_program_t *prog = NULL;
    glslang_shader_t *sh = glslang_shader_create(&input);
    if (!sh) goto done;
    if (preamble[0]) glslang_shader_set_preamble(sh, preamble);
    if (!glslang_shader_preprocess(sh, &input) || !glslang_shader_parse(sh, &input)) {
        fprintf(stderr, "%s:\n%s%s", src, glslang_shader_get_info_log(sh), glslang_shader_get_info_debug_log(sh));
        goto done;
    }
    prog = glslang_program_create();
    glslang_program_add_shader(prog, sh);
    if (!glslang_program_link(prog, input.messages) || !glslang_program_map_io(prog)) {
        fprintf(stderr, "%s:\n%s%s", src, glslang_program_get_info_log(prog), glslang_program_get_info_debug_log(prog));
        goto done;
    }
    glslang_spv_options_t opts = {0}; /* glslangValidator's without -g, -O or --spirv-val */
    glslang_program_SPIRV_generate_with_options(prog, GLSLANG_STAGE_COMPUTE, &opts);
    const char *msgs = glslang_program_SPIRV_get_messages(prog);
    if (msgs && msgs[0]) fprintf(stderr, "%s: %s", src, msgs);
    size_t words = glslang_program_SPIRV_get_size(prog);
    FILE *f = fopen(out, "wb");
    if (!f) {
        fprintf(stderr, "vkllm-glslc: %s: %s\n", out, strerror(errno));
        goto done;
    }
    size_t put = fwrite(glslang_program_SPIRV_get_ptr(prog), sizeof(unsigned int), words, f);
    if ((fclose(f) != 0) | (put != words)) {
        fprintf(stderr, "vkllm-glslc: %s: write error\n", out);
        remove(out);
        goto done;
    }
    rc = 0;
done:
    if (prog) glslang_program_delete(prog);
    if (sh) glslang_shader_delete(sh);
    free(code);
    return rc;
}

/* path made absolute against dir (the directory the tool started in); NULL when out of memory. */
static char *absolute(const char *dir, const char *path) {
    size_t n = strlen(dir) + strlen(path) + 2;
    char *r = malloc(n);
    if (r && path[0] == '/') snprintf(r, n, "%s", path);
    else if (r) snprintf(r, n, "%s/%s", dir, path);
    return r;
}

/* One job line (tokens split in place); 0 on success. */
static int job(const char *cwd, char *line) {
    char *tok[MAX_ARGS];
    int n = 0;
    for (char *t = strtok(line, " \t\r\n"); t; t = strtok(NULL, " \t\r\n")) {
        if (n == MAX_ARGS) {
            fprintf(stderr, "vkllm-glslc: a job of more than %d words\n", MAX_ARGS);
            return 1;
        }
        tok[n++] = t;
    }
    if (n == 0) return 0;
    if (n < 2) {
        fprintf(stderr, "vkllm-glslc: a job names OUT.spv and SRC.comp: %s\n", tok[0]);
        return 1;
    }
    size_t len = 1;
    for (int i = 2; i < n; i++) len += strlen(tok[i]) + 8;
    char *pre = malloc(len), *out = absolute(cwd, tok[0]), *src = absolute(cwd, tok[1]);
    int rc = !pre || !out || !src;
    if (rc) fprintf(stderr, "vkllm-glslc: out of memory\n");
    size_t at = 0;
    for (int i = 2; i < n && !rc; i++) {
        if (strncmp(tok[i], "-D", 2) || !tok[i][2]) {
            fprintf(stderr, "vkllm-glslc: %s: only -DNAME[=VALUE] is taken, not %s\n", tok[1], tok[i]);
            rc = 1;
            break;
        }
        char *eq = strchr(tok[i], '=');
        if (eq) *eq = ' ';
        at += (size_t)sprintf(pre + at, "#define %s\n", tok[i] + 2);
    }
    if (pre) pre[at] = 0;
    if (!rc) rc = compile(out, src, pre);
    free(pre);
    free(out);
    free(src);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s INCLUDE_DIR JOBFILE\n", argv[0]);
        return 2;
    }
    char cwd[PATH_MAX];
    FILE *jobs = fopen(argv[2], "r");
    if (!getcwd(cwd, sizeof cwd) || !jobs || chdir(argv[1])) {
        fprintf(stderr, "vkllm-glslc: %s: %s\n", !jobs ? argv[2] : argv[1], strerror(errno));
        return 2;
    }
    if (!glslang_initialize_process()) {
        fprintf(stderr, "vkllm-glslc: glslang did not initialize\n");
        return 2;
    }
    int failed = 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, jobs) > 0) failed += job(cwd, line);
    free(line);
    fclose(jobs);
    glslang_finalize_process();
    return failed ? 1 : 0;
}
