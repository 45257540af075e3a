/* chat.c - chat templates: recognize a model's Jinja tokenizer.chat_template by its text and
 * render messages with the built-in equivalent (the formats of llama.cpp's llama-chat.cpp). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tok_impl.h"

static const char *const names[VKLLM__CHAT_COUNT_] = {
    [VKLLM__CHAT_CHATML] = "chatml",
    [VKLLM__CHAT_LLAMA2] = "llama2",
    [VKLLM__CHAT_LLAMA2_SYS] = "llama2-sys",
    [VKLLM__CHAT_LLAMA2_SYS_BOS] = "llama2-sys-bos",
    [VKLLM__CHAT_LLAMA2_SYS_STRIP] = "llama2-sys-strip",
    [VKLLM__CHAT_MISTRAL_V1] = "mistral-v1",
    [VKLLM__CHAT_MISTRAL_V3] = "mistral-v3",
    [VKLLM__CHAT_MISTRAL_V3_TEKKEN] = "mistral-v3-tekken",
    [VKLLM__CHAT_MISTRAL_V7] = "mistral-v7",
    [VKLLM__CHAT_MISTRAL_V7_TEKKEN] = "mistral-v7-tekken",
    [VKLLM__CHAT_PHI3] = "phi3",
    [VKLLM__CHAT_PHI4] = "phi4",
    [VKLLM__CHAT_FALCON3] = "falcon3",
    [VKLLM__CHAT_ZEPHYR] = "zephyr",
    [VKLLM__CHAT_MONARCH] = "monarch",
    [VKLLM__CHAT_GEMMA] = "gemma",
    [VKLLM__CHAT_ORION] = "orion",
    [VKLLM__CHAT_OPENCHAT] = "openchat",
    [VKLLM__CHAT_VICUNA] = "vicuna",
    [VKLLM__CHAT_VICUNA_ORCA] = "vicuna-orca",
    [VKLLM__CHAT_DEEPSEEK] = "deepseek",
    [VKLLM__CHAT_DEEPSEEK2] = "deepseek2",
    [VKLLM__CHAT_DEEPSEEK3] = "deepseek3",
    [VKLLM__CHAT_COMMAND_R] = "command-r",
    [VKLLM__CHAT_LLAMA3] = "llama3",
    [VKLLM__CHAT_GRANITE] = "granite",
    [VKLLM__CHAT_LLAMA4] = "llama4",
    [VKLLM__CHAT_QWEN] = "qwen",
    [VKLLM__CHAT_GPT_OSS] = "gpt-oss",
    [VKLLM__CHAT_LLAMA31] = "llama3.1",
    [VKLLM__CHAT_LLAMA32] = "llama3.2",
};

const char *vkllm__chat_template_name(enum vkllm__chat_tmpl id) {
    return (unsigned)id < VKLLM__CHAT_COUNT_ ? names[id] : NULL;
}

const char *vkllm__chat_template_names(void) {
    /* a literal, so that concurrent callers need no lazy initialization (keep with names[]) */
    return "chatml, llama2, llama2-sys, llama2-sys-bos, llama2-sys-strip, mistral-v1, mistral-v3, "
           "mistral-v3-tekken, mistral-v7, mistral-v7-tekken, phi3, phi4, falcon3, zephyr, monarch, "
           "gemma, orion, openchat, vicuna, vicuna-orca, deepseek, deepseek2, deepseek3, command-r, "
           "llama3, granite, llama4, qwen, gpt-oss, llama3.1, llama3.2";
}

vkllm_status vkllm__chat_template_by_name(const char *name, enum vkllm__chat_tmpl *out) {
    for (int i = 0; name && i < VKLLM__CHAT_COUNT_; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (enum vkllm__chat_tmpl)i;
            return VKLLM_STATUS_OK;
        }
    return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "unknown chat template '%s' (known: %s)", name ? name : "(null)",
                      vkllm__chat_template_names());
}

/* Recognition by distinctive text, in llama.cpp's order (llm_chat_detect_template). */
static int detect(const char *s) {
#define HAS(x) (strstr(s, (x)) != NULL)
    if (HAS("<|im_start|>")) return HAS("<|im_sep|>") ? VKLLM__CHAT_PHI4 : VKLLM__CHAT_CHATML;
    if (strncmp(s, "mistral", 7) == 0 || HAS("[INST]")) {
        if (HAS("[SYSTEM_PROMPT]")) return VKLLM__CHAT_MISTRAL_V7;
        if (HAS("' [INST] ' + system_message") || HAS("[AVAILABLE_TOOLS]")) {
            if (HAS(" [INST]")) return VKLLM__CHAT_MISTRAL_V1;
            if (HAS("\"[INST]\"")) return VKLLM__CHAT_MISTRAL_V3_TEKKEN;
            return VKLLM__CHAT_MISTRAL_V3;
        }
        if (HAS("content.strip()")) return VKLLM__CHAT_LLAMA2_SYS_STRIP;
        if (HAS("bos_token + '[INST]")) return VKLLM__CHAT_LLAMA2_SYS_BOS;
        if (HAS("<<SYS>>")) return VKLLM__CHAT_LLAMA2_SYS;
        return VKLLM__CHAT_LLAMA2;
    }
    if (HAS("<|assistant|>") && HAS("<|end|>")) return VKLLM__CHAT_PHI3;
    if (HAS("<|assistant|>") && HAS("<|user|>") && HAS("</s>")) return VKLLM__CHAT_FALCON3;
    if (HAS("<|user|>") && HAS("<|endoftext|>")) return VKLLM__CHAT_ZEPHYR;
    if (HAS("bos_token + message['role']")) return VKLLM__CHAT_MONARCH;
    if (HAS("<start_of_turn>")) return VKLLM__CHAT_GEMMA;
    if (HAS("'\\n\\nAssistant: ' + eos_token")) return VKLLM__CHAT_ORION;
    if (HAS("GPT4 Correct ")) return VKLLM__CHAT_OPENCHAT;
    if (HAS("USER: ") && HAS("ASSISTANT: ")) return HAS("SYSTEM: ") ? VKLLM__CHAT_VICUNA_ORCA : VKLLM__CHAT_VICUNA;
    if (HAS("### Instruction:") && HAS("<|EOT|>")) return VKLLM__CHAT_DEEPSEEK;
    if (HAS("<|START_OF_TURN_TOKEN|>") && HAS("<|USER_TOKEN|>")) return VKLLM__CHAT_COMMAND_R;
    if (HAS("<|start_header_id|>") && HAS("<|end_header_id|>"))
        return !HAS("Cutting Knowledge Date") ? VKLLM__CHAT_LLAMA3
               : HAS("strftime_now")          ? VKLLM__CHAT_LLAMA32
                                              : VKLLM__CHAT_LLAMA31;
    if (HAS("'Assistant: ' + message['content'] + eos_token")) return VKLLM__CHAT_DEEPSEEK2;
    if (HAS("<\xef\xbd\x9c"
            "Assistant\xef\xbd\x9c>") &&
        HAS("<\xef\xbd\x9cUser\xef\xbd\x9c>") &&
        HAS("<\xef\xbd\x9c"
            "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"))
        return VKLLM__CHAT_DEEPSEEK3;
    if (HAS("<|start_of_role|>")) return VKLLM__CHAT_GRANITE;
    if (HAS("<|header_start|>") && HAS("<|header_end|>")) return VKLLM__CHAT_LLAMA4;
    if (HAS("<|start|>") && HAS("<|channel|>")) return VKLLM__CHAT_GPT_OSS;
    return -1;
#undef HAS
}

vkllm_status vkllm__chat_template_detect(const char *tmpl, enum vkllm__chat_tmpl *out) {
    if (!tmpl) return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "chat template: NULL text");
    for (int i = 0; i < VKLLM__CHAT_COUNT_; i++) /* a bare name is accepted too */
        if (strcmp(tmpl, names[i]) == 0) {
            *out = (enum vkllm__chat_tmpl)i;
            return VKLLM_STATUS_OK;
        }
    int id = detect(tmpl);
    if (id < 0)
        return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                          "the model's chat template is not one vkllm recognizes; choose one with "
                          "--chat-template NAME (known: %s)",
                          vkllm__chat_template_names());
    *out = (enum vkllm__chat_tmpl)id;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__chat_template_for(const struct vkllm__tokenizer *t, const char *force_name,
                                      enum vkllm__chat_tmpl *out) {
    if (force_name) return vkllm__chat_template_by_name(force_name, out);
    if (!t || !t->chat_template)
        return vkllm__err(VKLLM_STATUS_NOT_FOUND,
                          "the model has no chat template; choose one with "
                          "--chat-template NAME (known: %s)",
                          vkllm__chat_template_names());
    return vkllm__chat_template_detect(t->chat_template, out);
}

/* --- rendering ------------------------------------------------------------------------------- */

struct out {
    struct vkllm__bytes b;
    vkllm_status st;
};

static void put(struct out *o, const char *s) {
    if (o->st == VKLLM_STATUS_OK) o->st = vkllm__bytes_put(&o->b, s, strlen(s));
}

/* s without leading and trailing ASCII whitespace (llama.cpp's trim). */
static void put_trim(struct out *o, const char *s) {
    size_t a = 0, b = strlen(s);
    while (a < b && isspace((unsigned char)s[a])) a++;
    while (b > a && isspace((unsigned char)s[b - 1])) b--;
    if (o->st == VKLLM_STATUS_OK) o->st = vkllm__bytes_put(&o->b, s + a, b - a);
}

static int is(const char *role, const char *r) { return strcmp(role, r) == 0; }

static void render_llama2(struct out *o, enum vkllm__chat_tmpl id, const struct vkllm__chat_msg *m, size_t n) {
    int sys = id != VKLLM__CHAT_LLAMA2, bos_inside = id == VKLLM__CHAT_LLAMA2_SYS_BOS;
    int strip = id == VKLLM__CHAT_LLAMA2_SYS_STRIP, inside = 1;
    put(o, "[INST] ");
    for (size_t i = 0; i < n; i++) {
        if (!inside) {
            inside = 1;
            put(o, bos_inside ? "<s>[INST] " : "[INST] ");
        }
        void (*content)(struct out *, const char *) = strip ? put_trim : put;
        if (is(m[i].role, "system")) {
            put(o, sys ? "<<SYS>>\n" : "");
            content(o, m[i].content);
            put(o, sys ? "\n<</SYS>>\n\n" : "\n");
        } else if (is(m[i].role, "user")) {
            content(o, m[i].content);
            put(o, " [/INST]");
        } else {
            content(o, m[i].content);
            put(o, "</s>");
            inside = 0;
        }
    }
}

static void render_mistral(struct out *o, enum vkllm__chat_tmpl id, const struct vkllm__chat_msg *m, size_t n) {
    if (id == VKLLM__CHAT_MISTRAL_V7 || id == VKLLM__CHAT_MISTRAL_V7_TEKKEN) {
        const char *sp = id == VKLLM__CHAT_MISTRAL_V7 ? " " : "";
        for (size_t i = 0; i < n; i++) {
            if (is(m[i].role, "available_tools"))
                put(o, "[AVAILABLE_TOOLS]"), put(o, sp), put(o, m[i].content), put(o, "[/AVAILABLE_TOOLS]");
            else if (is(m[i].role, "tool"))
                put(o, "[TOOL_RESULTS]"), put(o, sp), put(o, m[i].content), put(o, "[/TOOL_RESULTS]");
            else if (is(m[i].role, "system"))
                put(o, "[SYSTEM_PROMPT]"), put(o, sp), put(o, m[i].content), put(o, "[/SYSTEM_PROMPT]");
            else if (is(m[i].role, "user")) put(o, "[INST]"), put(o, sp), put(o, m[i].content), put(o, "[/INST]");
            else put(o, sp), put(o, m[i].content), put(o, "</s>");
        }
        return;
    }
    const char *lead = id == VKLLM__CHAT_MISTRAL_V1 ? " " : "";
    const char *trail = id == VKLLM__CHAT_MISTRAL_V3_TEKKEN ? "" : " ";
    int inside = 0;
    for (size_t i = 0; i < n; i++) {
        /* tools (Mistral's function calling): the list before the last [INST], results after a call */
        if (!inside && is(m[i].role, "available_tools")) {
            put(o, lead), put(o, "[AVAILABLE_TOOLS]"), put(o, trail), put(o, m[i].content),
                put(o, "[/AVAILABLE_TOOLS]");
            continue;
        }
        if (!inside && is(m[i].role, "tool")) {
            put(o, "[TOOL_RESULTS]"), put(o, trail), put(o, m[i].content), put(o, "[/TOOL_RESULTS]");
            continue;
        }
        if (!inside) {
            put(o, lead), put(o, "[INST]"), put(o, trail);
            inside = 1;
        }
        if (is(m[i].role, "system")) put(o, m[i].content), put(o, "\n\n");
        else if (is(m[i].role, "user")) put(o, m[i].content), put(o, lead), put(o, "[/INST]");
        else {
            if (strncmp(m[i].content, "[TOOL_CALLS]", 12)) put(o, trail); /* calls follow [/INST] at once */
            if (id == VKLLM__CHAT_MISTRAL_V3) put_trim(o, m[i].content);
            else put(o, m[i].content);
            put(o, "</s>");
            inside = 0;
        }
    }
}

static void render_gemma(struct out *o, const struct vkllm__chat_msg *m, size_t n, int gen) {
    const char *sys = NULL; /* no system role: merged into the next user turn */
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            sys = m[i].content;
            continue;
        }
        const char *role = is(m[i].role, "assistant") ? "model" : m[i].role;
        put(o, "<start_of_turn>"), put(o, role), put(o, "\n");
        if (sys && !is(role, "model")) {
            put_trim(o, sys), put(o, "\n\n");
            sys = NULL;
        }
        put_trim(o, m[i].content), put(o, "<end_of_turn>\n");
    }
    if (gen) put(o, "<start_of_turn>model\n");
}

/* Llama 3.1-3.3 as Meta's templates write them: a system turn always, opening with the knowledge
 * cutoff and the date (3.1 and 3.3: "26 Jul 2024"; 3.2: today's, its strftime_now("%d %b %Y")),
 * after "Environment: ipython" where tools are offered (a leading "environment" message, which
 * the server's tools put there), then the system prompt if the conversation starts with one; the
 * turns as llama3's. */
static void render_llama31(struct out *o, const struct vkllm__chat_msg *m, size_t n, int gen, int today) {
    char date[32] = "26 Jul 2024"; /* 3.1's, and 3.2's without strftime_now */
    time_t now = time(NULL);
    struct tm tm;
    if (today && localtime_r(&now, &tm)) {
        static const char *const mon[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        snprintf(date, sizeof date, "%02d %s %04d", tm.tm_mday, mon[tm.tm_mon % 12], tm.tm_year + 1900);
    }
    size_t first = 0;
    put(o, "<|start_header_id|>system<|end_header_id|>\n\n");
    if (n && is(m[0].role, "environment")) put(o, "Environment: "), put(o, m[0].content), put(o, "\n"), first = 1;
    put(o, "Cutting Knowledge Date: December 2023\nToday Date: ");
    put(o, date), put(o, "\n\n");
    if (first < n && is(m[first].role, "system")) put_trim(o, m[first++].content);
    put(o, "<|eot_id|>");
    for (size_t i = first; i < n; i++)
        put(o, "<|start_header_id|>"), put(o, m[i].role), put(o, "<|end_header_id|>\n\n"), put_trim(o, m[i].content),
            put(o, "<|eot_id|>");
    if (gen) put(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static void render_simple(struct out *o, enum vkllm__chat_tmpl id, const struct vkllm__chat_msg *m, size_t n, int gen) {
    for (size_t i = 0; i < n; i++) {
        const char *r = m[i].role, *c = m[i].content;
        switch (id) {
        case VKLLM__CHAT_CHATML:
        case VKLLM__CHAT_QWEN:
            put(o, "<|im_start|>"), put(o, r), put(o, "\n"), put(o, c), put(o, "<|im_end|>\n");
            break;
        case VKLLM__CHAT_PHI3: put(o, "<|"), put(o, r), put(o, "|>\n"), put(o, c), put(o, "<|end|>\n"); break;
        case VKLLM__CHAT_PHI4:
            put(o, "<|im_start|>"), put(o, r), put(o, "<|im_sep|>"), put(o, c), put(o, "<|im_end|>");
            break;
        case VKLLM__CHAT_GPT_OSS: /* harmony as llama.cpp renders it: an assistant turn ends with <|return|> */
            put(o, "<|start|>"), put(o, r), put(o, "<|message|>"), put(o, c);
            put(o, is(r, "assistant") ? "<|return|>" : "<|end|>");
            break;
        case VKLLM__CHAT_FALCON3: put(o, "<|"), put(o, r), put(o, "|>\n"), put(o, c), put(o, "\n"); break;
        case VKLLM__CHAT_ZEPHYR: put(o, "<|"), put(o, r), put(o, "|>\n"), put(o, c), put(o, "<|endoftext|>\n"); break;
        case VKLLM__CHAT_MONARCH: put(o, i ? "<s>" : ""), put(o, r), put(o, "\n"), put(o, c), put(o, "</s>\n"); break;
        case VKLLM__CHAT_LLAMA3:
            put(o, "<|start_header_id|>"), put(o, r), put(o, "<|end_header_id|>\n\n"), put_trim(o, c),
                put(o, "<|eot_id|>");
            break;
        case VKLLM__CHAT_LLAMA4:
            put(o, "<|header_start|>"), put(o, r), put(o, "<|header_end|>\n\n"), put_trim(o, c), put(o, "<|eot|>");
            break;
        case VKLLM__CHAT_GRANITE:
            put(o, "<|start_of_role|>"), put(o, r), put(o, "<|end_of_role|>");
            if (is(r, "assistant_tool_call")) put(o, "<|tool_call|>");
            put(o, c), put(o, "<|end_of_text|>\n");
            break;
        case VKLLM__CHAT_COMMAND_R:
            if (is(r, "system")) put(o, "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>");
            else if (is(r, "user")) put(o, "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>");
            else if (is(r, "assistant")) put(o, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
            else break;
            put_trim(o, c), put(o, "<|END_OF_TURN_TOKEN|>");
            break;
        case VKLLM__CHAT_DEEPSEEK:
            if (is(r, "system")) put(o, c);
            else if (is(r, "user")) put(o, "### Instruction:\n"), put(o, c), put(o, "\n");
            else if (is(r, "assistant")) put(o, "### Response:\n"), put(o, c), put(o, "\n<|EOT|>\n");
            break;
        case VKLLM__CHAT_DEEPSEEK2:
            if (is(r, "system")) put(o, c), put(o, "\n\n");
            else if (is(r, "user")) put(o, "User: "), put(o, c), put(o, "\n\n");
            else if (is(r, "assistant"))
                put(o, "Assistant: "), put(o, c),
                    put(o, "<\xef\xbd\x9c"
                           "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>");
            break;
        case VKLLM__CHAT_DEEPSEEK3: /* the system prompt right before the first turn, as DeepSeek's own
                                     * templates (V3, R1's distills) have it (llama.cpp adds "\n\n") */
            if (is(r, "system")) put(o, c);
            else if (is(r, "user")) put(o, "<\xef\xbd\x9cUser\xef\xbd\x9c>"), put(o, c);
            else if (is(r, "assistant"))
                put(o, "<\xef\xbd\x9c"
                       "Assistant\xef\xbd\x9c>"),
                    put(o, c),
                    put(o, "<\xef\xbd\x9c"
                           "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>");
            break;
        case VKLLM__CHAT_VICUNA:
        case VKLLM__CHAT_VICUNA_ORCA:
            if (is(r, "system")) {
                if (id == VKLLM__CHAT_VICUNA_ORCA) put(o, "SYSTEM: "), put(o, c), put(o, "\n");
                else put(o, c), put(o, "\n\n");
            } else if (is(r, "user")) put(o, "USER: "), put(o, c), put(o, "\n");
            else if (is(r, "assistant")) put(o, "ASSISTANT: "), put(o, c), put(o, "</s>\n");
            break;
        case VKLLM__CHAT_OPENCHAT:
            if (is(r, "system")) put(o, c), put(o, "<|end_of_turn|>");
            else {
                char cap[2] = {(char)toupper((unsigned char)r[0]), 0};
                put(o, "GPT4 Correct "), put(o, r[0] ? cap : ""), put(o, r[0] ? r + 1 : ""), put(o, ": ");
                put(o, c), put(o, "<|end_of_turn|>");
            }
            break;
        case VKLLM__CHAT_ORION: break; /* handled below */
        default: break;
        }
    }
    if (!gen) return;
    switch (id) {
    case VKLLM__CHAT_CHATML:
    case VKLLM__CHAT_QWEN: put(o, "<|im_start|>assistant\n"); break;
    case VKLLM__CHAT_PHI3:
    case VKLLM__CHAT_FALCON3:
    case VKLLM__CHAT_ZEPHYR: put(o, "<|assistant|>\n"); break;
    case VKLLM__CHAT_PHI4: put(o, "<|im_start|>assistant<|im_sep|>"); break;
    case VKLLM__CHAT_GPT_OSS: put(o, "<|start|>assistant"); break;
    case VKLLM__CHAT_MONARCH: put(o, "<s>assistant\n"); break;
    case VKLLM__CHAT_LLAMA3: put(o, "<|start_header_id|>assistant<|end_header_id|>\n\n"); break;
    case VKLLM__CHAT_LLAMA4: put(o, "<|header_start|>assistant<|header_end|>\n\n"); break;
    case VKLLM__CHAT_GRANITE: put(o, "<|start_of_role|>assistant<|end_of_role|>"); break;
    case VKLLM__CHAT_COMMAND_R: put(o, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"); break;
    case VKLLM__CHAT_DEEPSEEK: put(o, "### Response:\n"); break;
    case VKLLM__CHAT_DEEPSEEK2: put(o, "Assistant:"); break;
    case VKLLM__CHAT_DEEPSEEK3:
        put(o, "<\xef\xbd\x9c"
               "Assistant\xef\xbd\x9c>");
        break;
    case VKLLM__CHAT_VICUNA:
    case VKLLM__CHAT_VICUNA_ORCA: put(o, "ASSISTANT:"); break;
    case VKLLM__CHAT_OPENCHAT: put(o, "GPT4 Correct Assistant:"); break;
    default: break;
    }
}

static void render_orion(struct out *o, const struct vkllm__chat_msg *m, size_t n) {
    const char *sys = NULL;
    for (size_t i = 0; i < n; i++) {
        if (is(m[i].role, "system")) {
            sys = m[i].content;
        } else if (is(m[i].role, "user")) {
            put(o, "Human: ");
            if (sys) put(o, sys), put(o, "\n\n"), sys = NULL;
            put(o, m[i].content), put(o, "\n\nAssistant: </s>");
        } else {
            put(o, m[i].content), put(o, "</s>");
        }
    }
}

vkllm_status vkllm__chat_apply(enum vkllm__chat_tmpl id, const struct vkllm__chat_msg *msgs, size_t n,
                               int add_generation_prompt, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if ((unsigned)id >= VKLLM__CHAT_COUNT_)
        return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "chat template: invalid id %d", (int)id);
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "chat message %zu: NULL role or content", i);
    struct out o = {{0}, VKLLM_STATUS_OK};
    put(&o, "");
    switch (id) {
    case VKLLM__CHAT_LLAMA2:
    case VKLLM__CHAT_LLAMA2_SYS:
    case VKLLM__CHAT_LLAMA2_SYS_BOS:
    case VKLLM__CHAT_LLAMA2_SYS_STRIP: render_llama2(&o, id, msgs, n); break;
    case VKLLM__CHAT_MISTRAL_V1:
    case VKLLM__CHAT_MISTRAL_V3:
    case VKLLM__CHAT_MISTRAL_V3_TEKKEN:
    case VKLLM__CHAT_MISTRAL_V7:
    case VKLLM__CHAT_MISTRAL_V7_TEKKEN: render_mistral(&o, id, msgs, n); break;
    case VKLLM__CHAT_GEMMA: render_gemma(&o, msgs, n, add_generation_prompt); break;
    case VKLLM__CHAT_LLAMA31:
    case VKLLM__CHAT_LLAMA32: render_llama31(&o, msgs, n, add_generation_prompt, id == VKLLM__CHAT_LLAMA32); break;
    case VKLLM__CHAT_ORION: render_orion(&o, msgs, n); break;
    default: render_simple(&o, id, msgs, n, add_generation_prompt); break;
    }
    if (o.st != VKLLM_STATUS_OK) {
        vkllm__free(o.b.p);
        return o.st;
    }
    *out = o.b.p;
    *len = o.b.n;
    return VKLLM_STATUS_OK;
}
