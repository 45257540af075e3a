/* test_tokenizer.c - the tokenizer: pre-tokenizer splits, GPT-2 byte mapping, chat templates
 * and an unknown pre value on small in-memory cases; then, on the real vocabularies in
 * ../shared/models, llama.cpp's test vectors id for id, llama2.c's Llama 2 prompts, round
 * trips, the streaming detokenizer, and hostile input (invalid UTF-8, NUL bytes, empty text,
 * 1 MiB of one character). */
#include <cjson/cJSON.h>
#include <time.h>

#include "gguf.h"
#include "harness.h"
#include "tok_impl.h"
#include "tokenizer.h"
#include "unicode.h"

/* --- pre-tokenizer ----------------------------------------------------------------------------- */

/* Split text with the named pre-tokenizer and compare with the expected words, joined by '|'. */
static void check_split(const char *pre, const char *text, const char *want) {
    struct vkllm__pretok *p = NULL;
    ASSERT_OK(vkllm__pretok_init(pre, &p, NULL));
    size_t *offs = NULL, n = 0;
    ASSERT_OK(vkllm__pretok_split(p, text, strlen(text), &offs, &n));
    char got[1024] = "";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        o += (size_t)snprintf(got + o, sizeof got - o, "%s%.*s", i ? "|" : "", (int)(offs[2 * i + 1] - offs[2 * i]),
                              text + offs[2 * i]);
    }
    if (strcmp(got, want) != 0) FAILF("pre %s on \"%s\":\n  got  \"%s\"\n  want \"%s\"", pre, text, got, want);
    vkllm__free(offs);
    vkllm__pretok_free(p);
}

static void test_pretok(void) {
    check_split("gpt-2", "Hello world", "Hello| world");
    check_split("gpt-2", "  Hello", " | Hello"); /* \s+(?!\S) leaves one space */
    check_split("gpt-2", "it's 42!!", "it|'s| 42|!!");
    check_split("gpt-2",
                "a\xc2\x85"
                "b",
                "a|\xc2\x85|b"); /* U+0085 is whitespace to llama.cpp */
    check_split("llama3", "I'M 12345 ok\n\n", "I|'M| |123|45| ok|\n\n");
    check_split("llama3", "Hello, world!", "Hello|,| world|!");
    check_split("qwen2", "12345", "1|2|3|4|5");
    check_split("starcoder", "x=123", "x|=|1|2|3");
    check_split("default", "hi, 1234", "hi|,| |123|4");
    check_split("deepseek-llm", "abc  ", "abc|  ");  /* \s+$ at the very end only */
    check_split("deepseek-v3", "a~b", "a|~b");       /* \p{S} misses '~' in llama.cpp */
    check_split("superbpe", "1234567", "1|234|567"); /* empty matches split */
    check_split("bloom", "hi, there", "hi|,| there");
    /* an unknown pre value is an error, never a silent default */
    struct vkllm__pretok *p = NULL;
    ASSERT_STATUS(vkllm__pretok_init("no-such-pre", &p, NULL), VKLLM_STATUS_UNSUPPORTED);
    ASSERT(strstr(vkllm_last_error(), "no-such-pre"));
    ASSERT_STATUS(vkllm__pretok_init("kimi-k2", &p, NULL), VKLLM_STATUS_UNSUPPORTED);
}

static void test_gpt2_bytes(void) {
    int seen[0x200] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = vkllm__gpt2_byte_to_cp((uint8_t)b);
        ASSERT(cp < 0x200 && !seen[cp]);
        seen[cp] = 1;
        ASSERT_EQ(vkllm__gpt2_cp_to_byte(cp), b);
    }
    ASSERT_EQ(vkllm__gpt2_byte_to_cp(' '), 0x120);  /* 'Ġ' */
    ASSERT_EQ(vkllm__gpt2_byte_to_cp('\n'), 0x10A); /* 'Ċ' */
    ASSERT_EQ(vkllm__gpt2_byte_to_cp('A'), 'A');
    ASSERT_EQ(vkllm__gpt2_cp_to_byte(0x3000), -1);
}

/* --- chat templates ------------------------------------------------------------------------------ */

static char *render(enum vkllm__chat_tmpl id, int gen) {
    static const struct vkllm__chat_msg msgs[] = {
        {"system", "You are helpful."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
    char *out = NULL;
    size_t len = 0;
    ASSERT_OK(vkllm__chat_apply(id, msgs, 4, gen, &out, &len));
    ASSERT_EQ(len, strlen(out));
    return out;
}

static void expect_render(const char *name, int gen, const char *want) {
    enum vkllm__chat_tmpl id;
    ASSERT_OK(vkllm__chat_template_by_name(name, &id));
    char *got = render(id, gen);
    if (strcmp(got, want) != 0) FAILF("template %s:\n  got  \"%s\"\n  want \"%s\"", name, got, want);
    vkllm__free(got);
}

static void expect_detect(const char *jinja, const char *name) {
    enum vkllm__chat_tmpl id;
    ASSERT_OK(vkllm__chat_template_detect(jinja, &id));
    ASSERT_STREQ(vkllm__chat_template_name(id), name);
}

static void test_chat(void) {
    expect_render("chatml", 1,
                  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                  "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
                  "<|im_start|>assistant\n");
    expect_render("llama3", 1,
                  "<|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
    expect_render("llama2-sys", 1,
                  "[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nHi [/INST]Hello!</s>[INST] Bye [/INST]");
    expect_render("mistral-v7", 0,
                  "[SYSTEM_PROMPT] You are helpful.[/SYSTEM_PROMPT][INST] Hi[/INST] Hello!</s>[INST] Bye[/INST]");
    expect_render("mistral-v3", 0, "[INST] You are helpful.\n\nHi[/INST] Hello!</s>[INST] Bye[/INST]");
    expect_render("mistral-v1", 0, " [INST] You are helpful.\n\nHi [/INST] Hello!</s> [INST] Bye [/INST]");
    expect_render("gemma", 1,
                  "<start_of_turn>user\nYou are helpful.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!"
                  "<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
    expect_render("phi3", 1,
                  "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n"
                  "<|user|>\nBye<|end|>\n<|assistant|>\n");
    expect_render("zephyr", 0,
                  "<|system|>\nYou are helpful.<|endoftext|>\n<|user|>\nHi<|endoftext|>\n<|assistant|>\n"
                  "Hello!<|endoftext|>\n<|user|>\nBye<|endoftext|>\n");
    expect_render("deepseek", 1,
                  "You are helpful.### Instruction:\nHi\n### Response:\nHello!\n<|EOT|>\n### Instruction:\n"
                  "Bye\n### Response:\n");
    /* Llama 3.1 / 3.3 and 3.2 as Meta's templates (jinja2): the system header always, its date
     * fixed (3.1, 3.3) or today's (3.2) */
    expect_render("llama3.1", 1,
                  "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                  "Today Date: 26 Jul 2024\n\nYou are helpful.<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
                  "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
                  "<|start_header_id|>assistant<|end_header_id|>\n\n");
    {
        char today[64], want[512];
        time_t now = time(NULL);
        strftime(today, sizeof today, "%d %b %Y", localtime(&now)); /* the C locale's month names */
        snprintf(want, sizeof want,
                 "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                 "Today Date: %s\n\nYou are helpful.<|eot_id|>"
                 "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                 "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
                 "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
                 "<|start_header_id|>assistant<|end_header_id|>\n\n",
                 today);
        expect_render("llama3.2", 1, want);
    }
    expect_render("deepseek3", 1, /* as DeepSeek-V3's and R1-Distill's own templates (jinja2) */
                  "You are helpful.<\xef\xbd\x9cUser\xef\xbd\x9c>Hi<\xef\xbd\x9c"
                  "Assistant\xef\xbd\x9c>Hello!"
                  "<\xef\xbd\x9c"
                  "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c><\xef\xbd\x9cUser\xef\xbd\x9c>Bye"
                  "<\xef\xbd\x9c"
                  "Assistant\xef\xbd\x9c>");

    expect_detect("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                  "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}",
                  "chatml");
    expect_detect("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}", "llama3");
    expect_detect("{{- \"Cutting Knowledge Date: December 2023\\n\" }}<|start_header_id|><|end_header_id|>",
                  "llama3.1");
    expect_detect(
        "{%- set date_string = strftime_now(\"%d %b %Y\") %}{{- \"Cutting Knowledge Date: December 2023\\n\" }}"
        "<|start_header_id|><|end_header_id|>",
        "llama3.2");
    expect_detect("{{ bos_token }}{% if messages[0]['role'] == 'system' %}[SYSTEM_PROMPT]{% endif %}[INST]",
                  "mistral-v7");
    expect_detect("{{ '[INST] ' + content.strip() + ' [/INST]' }}<<SYS>>", "llama2-sys-strip");
    expect_detect("{{ '<start_of_turn>' + role + '\\n' }}", "gemma");
    expect_detect("{{'<|user|>\\n' + message['content'] + '<|end|>\\n<|assistant|>\\n'}}", "phi3");
    expect_detect("{{'<|user|>\\n' + message['content'] + '<|endoftext|>'}}", "zephyr");
    expect_detect("qwen", "qwen");
    /* harmony (gpt-oss), as llama.cpp renders it */
    expect_render("gpt-oss", 1,
                  "<|start|>system<|message|>You are helpful.<|end|><|start|>user<|message|>Hi<|end|>"
                  "<|start|>assistant<|message|>Hello!<|return|><|start|>user<|message|>Bye<|end|><|start|>assistant");
    expect_detect("{{- '<|start|>assistant<|channel|>final<|message|>' }}", "gpt-oss");

    enum vkllm__chat_tmpl id;
    for (int i = 0; i < VKLLM__CHAT_COUNT_; i++) { /* every template has a name that round-trips */
        const char *name = vkllm__chat_template_name((enum vkllm__chat_tmpl)i);
        ASSERT(name && strstr(vkllm__chat_template_names(), name));
        ASSERT_OK(vkllm__chat_template_by_name(name, &id));
        ASSERT_EQ(id, i);
        vkllm__free(render(id, 1));
    }
    ASSERT_STATUS(vkllm__chat_template_detect("{{ messages }} nothing known", &id), VKLLM_STATUS_UNSUPPORTED);
    ASSERT(strstr(vkllm_last_error(), "chatml") && strstr(vkllm_last_error(), "llama3"));
    ASSERT_STATUS(vkllm__chat_template_by_name("no-such", &id), VKLLM_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(vkllm_last_error(), "mistral-v7"));
}

/* --- real vocabularies ------------------------------------------------------------------------------ */

static struct vkllm__tokenizer *load(const char *name) {
    struct vkllm__gguf *g = NULL;
    struct vkllm__tokenizer *t = NULL;
    ASSERT_OK(vkllm__gguf_open(vkllm_test_model(name), &g));
    ASSERT_OK(vkllm__tokenizer_init_gguf(g, &t));
    vkllm__gguf_close(g);
    return t;
}

static int32_t *encode(const struct vkllm__tokenizer *t, const char *s, size_t len, int add_special, size_t *n) {
    int32_t *ids = NULL;
    ASSERT_OK(vkllm__tokenize(t, s, len, add_special, 0, &ids, n));
    return ids;
}

/* llama.cpp's test-tokenizer-0 vectors; also decode(encode(s)) == s where the format allows. */
static void test_vectors(const char *vocab, int roundtrip) {
    char name[256];
    snprintf(name, sizeof name, "ggml-vocab-%s.gguf", vocab);
    struct vkllm__tokenizer *t = load(name);
    snprintf(name, sizeof name, "ggml-vocab-%s.gguf.inp", vocab);
    char *inp = vkllm_test_read_file(vkllm_test_model(name), NULL);
    snprintf(name, sizeof name, "ggml-vocab-%s.gguf.out", vocab);
    char *outp = vkllm_test_read_file(vkllm_test_model(name), NULL);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char *s = inp, *line = outp;
    int cases = 0;
    for (char *e; (e = strstr(s, sep)); s = e + strlen(sep), cases++) {
        size_t len = (size_t)(e - s), n = 0;
        char *nl = strchr(line, '\n');
        ASSERT(nl);
        *nl = 0;
        int32_t *ids = encode(t, s, len, 0, &n);
        size_t k = 0;
        for (char *p = line, *end; *p; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p) break;
            if (k >= n || ids[k] != v)
                FAILF("%s case %d: id %zu: got %d, want %ld", vocab, cases, k, k < n ? ids[k] : -1, v);
            k++;
        }
        if (k != n) FAILF("%s case %d: %zu ids, want %zu", vocab, cases, n, k);
        if (roundtrip) {
            char *back = NULL;
            size_t blen = 0;
            ASSERT_OK(vkllm__detokenize(t, ids, n, 0, &back, &blen));
            if (blen != len || memcmp(back, s, len) != 0)
                FAILF("%s case %d: decode(encode(s)) != s: \"%s\"", vocab, cases, back);
            vkllm__free(back);
        }
        vkllm__free(ids);
        line = nl + 1;
    }
    ASSERT_EQ(cases, 46);
    free(inp);
    free(outp);
    vkllm__tokenizer_free(t);
}

/* llama2.c's test.c: Llama 2 prompts with BOS. */
static void test_llama2c(void) {
    struct vkllm__tokenizer *t = load("ggml-vocab-llama-spm.gguf");
    char *json = vkllm_test_read_file(vkllm_test_model("llama2c-test-vectors.json"), NULL);
    cJSON *root = cJSON_Parse(json);
    ASSERT(root);
    cJSON *cases =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "llama2_tokenizer_encode"), "cases");
    ASSERT(cJSON_IsArray(cases));
    int count = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *text = cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
        cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "ids");
        size_t n = 0;
        int32_t *ids = encode(t, text, strlen(text), 1, &n);
        ASSERT_EQ(n, (size_t)cJSON_GetArraySize(want));
        for (size_t i = 0; i < n; i++) ASSERT_EQ(ids[i], cJSON_GetArrayItem(want, (int)i)->valueint);
        char *back = NULL;
        size_t blen;
        ASSERT_OK(vkllm__detokenize(t, ids, n, 0, &back, &blen));
        ASSERT_STREQ(back, text);
        vkllm__free(back);
        vkllm__free(ids);
        count++;
    }
    ASSERT_EQ(count, 5);
    cJSON_Delete(root);
    free(json);
    vkllm__tokenizer_free(t);
}

/* Feed ids one by one: every chunk is valid UTF-8 and the chunks make up the text. */
static void check_stream(const struct vkllm__tokenizer *t, const char *text) {
    size_t n = 0;
    int32_t *ids = encode(t, text, strlen(text), 0, &n);
    struct vkllm__detok_stream s;
    vkllm__detok_stream_init(&s, t, 0);
    char acc[512] = "";
    size_t o = 0;
    for (size_t i = 0; i <= n; i++) {
        const char *chunk;
        size_t len;
        if (i < n) ASSERT_OK(vkllm__detok_stream_push(&s, ids[i], &chunk, &len));
        else ASSERT_OK(vkllm__detok_stream_flush(&s, &chunk, &len));
        for (size_t k = 0; k < len;) { /* valid UTF-8 */
            uint32_t cp;
            size_t m = vkllm__utf8_decode((const uint8_t *)chunk + k, len - k, &cp);
            ASSERT(m > 0);
            k += m;
        }
        ASSERT(o + len < sizeof acc);
        memcpy(acc + o, chunk, len);
        o += len;
    }
    acc[o] = 0;
    ASSERT_STREQ(acc, text);
    vkllm__detok_stream_free(&s);
    vkllm__free(ids);
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_hostile(const char *name) {
    struct vkllm__tokenizer *t = load(name);
    struct vkllm__tokenizer_info info;
    vkllm__tokenizer_get_info(t, &info);
    size_t n;
    int32_t *ids;
    /* empty text: nothing, or BOS alone */
    ids = encode(t, "", 0, 0, &n);
    ASSERT_EQ(n, 0);
    ids = encode(t, "", 0, 1, &n);
    ASSERT_EQ(n, (size_t)(info.add_bos && info.bos >= 0) + (size_t)(info.add_eos && info.eos >= 0) +
                     (size_t)(info.add_sep && info.sep >= 0));
    vkllm__free(ids);
    /* invalid UTF-8 and NUL bytes: a defined result, and the detokenizer takes every id */
    /* (a truncated sequence is not put before a space: SentencePiece, as llama.cpp, would take
     * the escaped space's first bytes into it: 0xFF announces 4 bytes) */
    static const char bad[] = "a\xff\xfe\x80xyz b\xc3(\xed\xa0\x80"
                              "c\0d\0\0e \xf0\x9f\x98";
    ids = encode(t, bad, sizeof bad - 1, 0, &n);
    ASSERT(n > 0);
    char *back = NULL;
    size_t blen;
    ASSERT_OK(vkllm__detokenize(t, ids, n, VKLLM__DETOK_SPECIAL, &back, &blen));
    if (info.model == VKLLM__TOK_SPM) /* byte fallback gives the exact bytes back */
        ASSERT(blen == sizeof bad - 1 && memcmp(back, bad, blen) == 0);
    vkllm__free(back);
    vkllm__free(ids);
    /* out-of-range ids are an error, not a crash */
    int32_t wrong[] = {0, -5, (int32_t)info.n_vocab};
    ASSERT_STATUS(vkllm__detokenize(t, wrong, 3, 0, &back, &blen), VKLLM_STATUS_INVALID_ARGUMENT);
    /* 1 MiB of one character: no quadratic merge loop */
    size_t big = 1u << 20;
    char *rep = malloc(big);
    static const char fill[] = {'a', ' ', '\n', '3'};
    for (size_t f = 0; f < sizeof fill; f++) {
        memset(rep, fill[f], big);
        double t0 = cpu_seconds();
        ids = encode(t, rep, big, 0, &n);
        double dt = cpu_seconds() - t0;
        ASSERT(n > 0 || (fill[f] != 'a' && info.model == VKLLM__TOK_WPM));
        if (dt > 10.0) FAILF("%s: 1 MiB of '%c' took %.2f s of CPU", name, fill[f], dt);
        vkllm__free(ids);
    }
    free(rep);
    vkllm__tokenizer_free(t);
}

static void test_special(void) {
    struct vkllm__tokenizer *t = load("ggml-vocab-llama-spm.gguf");
    size_t n;
    int32_t *ids;
    /* control-token text is plain text unless parse_special */
    ids = encode(t, "<s>", 3, 0, &n);
    ASSERT(n > 1 || ids[0] != 1);
    vkllm__free(ids);
    ASSERT_OK(vkllm__tokenize(t, "<s>Hi", 5, 0, 1, &ids, &n));
    ASSERT_EQ(n, 2);
    ASSERT_EQ(ids[0], 1);
    ASSERT_EQ(ids[1], 6324); /* "▁Hi": a space is prefixed after a special token */
    /* control tokens are not printed unless asked */
    char *s;
    size_t len;
    ASSERT_OK(vkllm__detokenize(t, ids, n, 0, &s, &len));
    ASSERT_STREQ(s, "Hi");
    vkllm__free(s);
    ASSERT_OK(vkllm__detokenize(t, ids, n, VKLLM__DETOK_SPECIAL, &s, &len));
    ASSERT_STREQ(s, "<s> Hi"); /* as llama.cpp: the prefix space is only dropped at the start */
    vkllm__free(s);
    vkllm__free(ids);
    /* byte tokens split one character; the stream holds it until complete */
    check_stream(t, "Hello \xf0\x9f\xa6\x99 world \xe2\x82\xac!");
    vkllm__tokenizer_free(t);

    t = load("ggml-vocab-gpt-2.gguf");
    check_stream(t, "Hello \xf0\x9f\xa6\x99 w\xc3\xb6rld \xe4\xbd\xa0\xe5\xa5\xbd");
    ASSERT(vkllm__token_is_eog(t, 50256)); /* <|endoftext|> */
    ids = encode(t, "<|endoftext|>", 13, 0, &n);
    ASSERT(n > 1);
    vkllm__free(ids);
    ASSERT_OK(vkllm__tokenize(t, "a<|endoftext|>", 14, 0, 1, &ids, &n));
    ASSERT_EQ(n, 2);
    ASSERT_EQ(ids[1], 50256);
    vkllm__free(ids);
    vkllm__tokenizer_free(t);
}

/* Every host allocation of init and tokenize may fail: the status is OOM and nothing leaks
 * (the sanitizer build checks the leaks). */
static void test_oom(const char *name) {
    struct vkllm__gguf *g = NULL;
    ASSERT_OK(vkllm__gguf_open(vkllm_test_model(name), &g));
    static const char text[] = "Hello world, it's 42! <|endoftext|> \xf0\x9f\xa6\x99 <s>";
    for (uint64_t nth = 1;; nth++) {
        vkllm__fault_inject(VKLLM__FAULT_HOST, nth);
        struct vkllm__tokenizer *t = NULL;
        vkllm_status st = vkllm__tokenizer_init_gguf(g, &t);
        if (st == VKLLM_STATUS_OK) {
            int32_t *ids = NULL;
            size_t n = 0;
            st = vkllm__tokenize(t, text, sizeof text - 1, 1, 1, &ids, &n);
            char *back = NULL;
            size_t blen;
            if (st == VKLLM_STATUS_OK) st = vkllm__detokenize(t, ids, n, 0, &back, &blen);
            vkllm__free(back);
            vkllm__free(ids);
            vkllm__tokenizer_free(t);
        }
        vkllm__fault_inject(VKLLM__FAULT_HOST, 0);
        if (st == VKLLM_STATUS_OK) break;
        ASSERT_STATUS(st, VKLLM_STATUS_OOM);
        ASSERT(nth < 10000);
    }
    vkllm__gguf_close(g);
}

int main(void) {
    test_pretok();
    test_gpt2_bytes();
    test_chat();
    static const char *const spm_bpe[] = {"llama-spm", "phi-3", "gpt-2", "mpt", "starcoder", "refact"};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(spm_bpe); i++) test_vectors(spm_bpe[i], 1);
    test_vectors("bert-bge", 0); /* WordPiece lowercases and drops spaces: no round trip */
    test_llama2c();
    test_special();
    static const char *const all[] = {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-starcoder.gguf",
                                      "ggml-vocab-bert-bge.gguf", "ggml-vocab-gpt-neox.gguf"};
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(all); i++) test_hostile(all[i]);
    test_oom("ggml-vocab-llama-spm.gguf");
    test_oom("ggml-vocab-gpt-2.gguf");
    test_oom("ggml-vocab-bert-bge.gguf");
    printf("tokenizer: all tests passed\n");
    return 0;
}
