/* pretok.c - byte-level BPE pre-tokenizers: llama.cpp's regular expressions per
 * tokenizer.ggml.pre value, evaluated with PCRE2 (UTF + UCP, JIT when available).
 *
 * llama.cpp applies the expressions of a list one after another; each one splits every piece
 * of the previous split into its matches and the unmatched runs between them (both are kept).
 * Expressions are matched within a piece, so lookarounds and $ see the piece's ends.
 *
 * llama.cpp runs expressions with \p{..} over a "collapsed" text (one byte per code point:
 * ASCII kept, others replaced by their category) and the rest with std::wregex. To give the
 * same answers with PCRE2, each expression is rewritten before compiling:
 *   \s -> [\s\x{85}]   (llama.cpp's whitespace includes U+0085, PCRE2's \s does not)
 *   \d -> [0-9], \w -> [A-Za-z0-9_], \b -> an ASCII word boundary (std::wregex is ASCII-only)
 *   \p{S} does not match '~' (llama.cpp's ASCII table for symbols misses it)
 *   $ matches only at the very end (PCRE2_DOLLAR_ENDONLY).
 */
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tok_impl.h"

/* --- the expressions ------------------------------------------------------------------------ */

#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RX_CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RX_LLAMA3                                                                                \
    RX_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN2                                                                            \
    RX_CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
                    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_UPPER_LOWER                                                     \
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+" \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"          \
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*" \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"          \
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_DEEPSEEK3_MAIN                                                                              \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|" \
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
#define RX_BLOOM " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"

static const char *const rx_default[] = {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL};
static const char *const rx_llama3[] = {RX_LLAMA3, NULL};
static const char *const rx_deepseek_llm[] = {
    "[\r\n]",
    "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf"
    "\xc7\x84-\xca\x93\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd\xcd\xbf"
    "\xce\x86\xce\x88-\xce\x8a\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-\xd2\x81"
    "\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85\xe1\x8e\xa0-\xe1\x8f\xb5"
    "\xe1\x8f\xb8-\xe1\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf\xe1\xb4\x80-"
    "\xe1\xb4\xab\xe1\xb5\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-\xe1\xbc\x95"
    "\xe1\xbc\x98-\xe1\xbc\x9d\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d\xe1\xbd\x90-"
    "\xe1\xbd\x97\xe1\xbd\x99\xe1\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd\xe1\xbe\x80-"
    "\xe1\xbe\xb4\xe1\xbe\xb6-\xe1\xbe\xbc\xe1\xbe\xbe\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf\x86-"
    "\xe1\xbf\x8c\xe1\xbf\x90-\xe1\xbf\x93\xe1\xbf\x96-\xe1\xbf\x9b\xe1\xbf\xa0-\xe1\xbf\xac"
    "\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87\xe2\x84\x8a-"
    "\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d\xe2\x84\xa4\xe2\x84\xa6\xe2\x84\xa8"
    "\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-\xe2\x84\xbf"
    "\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-\xe2\xb1\xbb"
    "\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99\x80-"
    "\xea\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf\xea\x9d\xb1-\xea\x9e\x87"
    "\xea\x9e\x8b-\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86\xef\xac\x93-"
    "\xef\xac\x97\xef\xbc\xa1-\xef\xbc\xba\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0\x90\x91"
    "\x8f\xf0\x90\x92\xb0-\xf0\x90\x93\x93\xf0\x90\x93\x98-\xf0\x90\x93\xbb\xf0\x90\xb2\x80-"
    "\xf0\x90\xb2\xb2\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2\xf0\x91\xa2\xa0-\xf0\x91\xa3\x9f"
    "\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+",
    "\\s?[!-/:-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f"
    "\xe3\x80\x80-\xe3\x80\x82]+",
    "\\s+$",
    "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+",
    "\\p{N}+",
    NULL};
static const char *const rx_deepseek_coder[] = {
    "[\r\n]",      "\\s?\\p{L}+",
    "\\s?\\p{P}+", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+",
    "\\p{N}",      NULL};
static const char *const rx_deepseek3[] = {
    "\\p{N}{1,3}", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+", RX_DEEPSEEK3_MAIN,
    NULL};
static const char *const rx_falcon[] = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]", NULL};
static const char *const rx_starcoder[] = {"\\p{N}", RX_GPT2, NULL};
static const char *const rx_gpt2[] = {RX_GPT2, NULL};
static const char *const rx_qwen2[] = {RX_QWEN2, NULL};
static const char *const rx_qwen35[] = {RX_CONTRACTIONS
                                        "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
                                        "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
                                        NULL};
static const char *const rx_bloom[] = {RX_BLOOM, NULL};
static const char *const rx_viking[] = {RX_BLOOM, "\\p{N}", NULL};
static const char *const rx_tekken[] = {
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?"
    "((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const rx_chameleon[] = {"<sentinel:[0-9]+>",
                                           "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
                                           "([\\t\\n]|    |  )",
                                           "\\p{N}",
                                           "[\\p{P}!-/:-@\\[-`{-~]",
                                           RX_GPT2,
                                           NULL};
static const char *const rx_gpt4o[] = {RX_UPPER_LOWER, NULL};
static const char *const rx_superbpe[] = {"\\p{N}+", "(?=(\\d{3})+(?!\\d))", NULL};
static const char *const rx_bailingmoe[] = {
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
    "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const rx_seed_coder[] = {RX_CONTRACTIONS
                                            "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|"
                                            "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
                                            NULL};
static const char *const rx_spark2_5[] = {
    "\\p{N}{1,3}", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
    " ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}", NULL};
static const char *const rx_tiny_aya[] = {
    "\\d{1,3}(?=(?:\\d{3})*\\b)",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?"
    "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?"
    "[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const rx_exaone_moe[] = {RX_CONTRACTIONS
                                            "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?"
                                            "[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
                                            NULL};
static const char *const rx_minicpm5[] = {"\\p{N}{1,3}",
                                          RX_CONTRACTIONS
                                          "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                                          "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
                                          NULL};
static const char *const rx_laguna[] = {"[^\\n]+|[\\n]+", RX_QWEN2, NULL};

/* name -> expressions and settings, as llama.cpp's llama_vocab::impl::load. A value of -1 in
 * add_bos leaves the default alone. */
struct pre_def {
    const char *name;
    const char *const *rx;
    int8_t ignore_merges, clean_spaces, add_bos, add_sep, no_bos_token;
};

#define KEEP 1 /* clean_spaces stays on */
#define NOCL 0 /* clean_spaces off */
static const struct pre_def pre_defs[] = {
    {"default", rx_default, 0, KEEP, -1, 0, 0},
    {"llama3", rx_llama3, 1, KEEP, 1, 0, 0},
    {"llama-v3", rx_llama3, 1, KEEP, 1, 0, 0},
    {"llama-bpe", rx_llama3, 1, KEEP, 1, 0, 0},
    {"falcon3", rx_llama3, 1, KEEP, 1, 0, 0},
    {"falcon-h1", rx_llama3, 1, KEEP, 1, 0, 0},
    {"pixtral", rx_llama3, 1, KEEP, 1, 0, 0},
    {"midm-2.0", rx_llama3, 1, KEEP, 1, 0, 0},
    {"lfm2", rx_llama3, 1, KEEP, 1, 0, 0},
    {"jina-v5-nano", rx_llama3, 1, KEEP, 1, 0, 0},
    {"deepseek-llm", rx_deepseek_llm, 0, NOCL, -1, 0, 0},
    {"deepseek-coder", rx_deepseek_coder, 0, NOCL, -1, 0, 0},
    {"deepseek-v3", rx_deepseek3, 0, NOCL, -1, 0, 0},
    {"hunyuan-dense", rx_deepseek3, 0, NOCL, -1, 0, 0},
    {"joyai-llm", rx_deepseek3, 0, NOCL, -1, 0, 0},
    {"spark2_5", rx_spark2_5, 0, NOCL, -1, 0, 0},
    {"falcon", rx_falcon, 0, KEEP, -1, 0, 0},
    {"mpt", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"starcoder", rx_starcoder, 0, KEEP, -1, 0, 0},
    {"gpt-2", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"phi-2", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"jina-es", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"jina-de", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"gigachat", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"jina-v2-es", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"jina-v2-de", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"a.x-4.0", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"mellum", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"modern-bert", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"exaone4", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"jina-v1-en", rx_gpt2, 0, KEEP, -1, 1, 0},
    {"jina-v2-code", rx_gpt2, 0, KEEP, -1, 1, 0},
    {"roberta-bpe", rx_gpt2, 0, KEEP, -1, 1, 0},
    {"refact", rx_starcoder, 0, KEEP, -1, 0, 0},
    {"command-r", rx_starcoder, 0, NOCL, -1, 0, 0},
    {"qwen2", rx_qwen2, 0, NOCL, -1, 0, 0},
    {"deepseek-r1-qwen", rx_qwen2, 0, NOCL, -1, 0, 0},
    {"kormo", rx_qwen2, 0, NOCL, -1, 0, 0},
    {"f2llmv2", rx_qwen2, 0, NOCL, -1, 0, 0},
    {"qwen35", rx_qwen35, 0, NOCL, -1, 0, 0},
    {"stablelm2", rx_qwen2, 0, KEEP, -1, 0, 0},
    {"olmo", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"dbrx", rx_llama3, 0, KEEP, -1, 0, 0},
    {"smaug-bpe", rx_llama3, 0, KEEP, -1, 0, 0},
    {"poro-chat", rx_bloom, 0, NOCL, -1, 0, 0},
    {"glm4", rx_llama3, 0, KEEP, -1, 0, 1},
    {"chatglm-bpe", rx_llama3, 0, KEEP, -1, 0, 1},
    {"viking", rx_viking, 0, NOCL, -1, 0, 0},
    {"jais", rx_gpt2, 0, KEEP, -1, 0, 0},
    {"tekken", rx_tekken, 1, NOCL, 1, 0, 0},
    {"smollm", rx_starcoder, 0, NOCL, -1, 0, 0},
    {"codeshell", rx_starcoder, 0, KEEP, -1, 0, 0},
    {"bloom", rx_bloom, 0, KEEP, -1, 0, 0},
    {"gpt3-finnish", rx_bloom, 0, KEEP, -1, 0, 0},
    {"exaone", rx_starcoder, 0, KEEP, -1, 0, 0},
    {"exaone-moe", rx_exaone_moe, 0, KEEP, -1, 0, 0},
    {"chameleon", rx_chameleon, 0, NOCL, 1, 0, 0},
    {"minerva-7b", rx_starcoder, 0, KEEP, -1, 0, 0},
    {"mellum2", rx_starcoder, 0, KEEP, -1, 0, 0},
    {"megrez", rx_qwen2, 0, KEEP, -1, 0, 0},
    {"gpt-4o", rx_gpt4o, 0, NOCL, -1, 0, 0},
    {"llama4", rx_gpt4o, 0, NOCL, -1, 0, 0},
    {"kanana2", rx_gpt4o, 0, NOCL, -1, 0, 0},
    {"talkie", rx_gpt4o, 0, NOCL, -1, 0, 0},
    {"minimax-m2", rx_gpt4o, 0, NOCL, -1, 0, 0},
    {"tiny_aya", rx_tiny_aya, 0, NOCL, -1, 0, 0},
    {"cohere2moe", rx_tiny_aya, 0, NOCL, -1, 0, 0},
    {"superbpe", rx_superbpe, 0, NOCL, -1, 0, 0},
    {"trillion", rx_gpt2, 0, NOCL, -1, 0, 0},
    {"granite-docling", rx_gpt2, 0, NOCL, -1, 0, 0},
    {"bailingmoe", rx_bailingmoe, 0, NOCL, -1, 0, 0},
    {"bailingmoe2", rx_bailingmoe, 0, NOCL, -1, 0, 0},
    {"llada-moe", rx_bailingmoe, 0, NOCL, -1, 0, 0},
    {"seed-coder", rx_seed_coder, 0, NOCL, -1, 0, 0},
    {"hunyuan", rx_qwen2, 0, NOCL, -1, 0, 0},
    {"grok-2", rx_qwen2, 0, NOCL, -1, 0, 0},
    {"solar-open", rx_qwen2, 0, NOCL, -1, 0, 0},
    {"minicpm5", rx_minicpm5, 1, KEEP, -1, 0, 0},
    {"laguna", rx_laguna, 0, NOCL, -1, 0, 0},
};

/* Pre-tokenizers llama.cpp implements with custom code rather than expressions. */
static const char *const pre_unsupported[] = {"kimi-k2",
                                              "afmoe",
                                              "gemma4",
                                              "sarvam-moe",
                                              "granite-embed-multi-311m",
                                              "whitespace",
                                              "youtu",
                                              "granite-embed-multi-97m",
                                              "jais-2"};

/* --- compiling --------------------------------------------------------------------------------- */

struct vkllm__pretok {
    size_t n;
    pcre2_code **code;
};

static vkllm_status put(struct vkllm__bytes *b, const char *s) { return vkllm__bytes_put(b, s, strlen(s)); }

/* Translate one bracket class starting at rx[*i] == '['; *i ends past its ']'. */
static vkllm_status translate_class(const char *rx, size_t *i, struct vkllm__bytes *out) {
    size_t j = *i + 1;
    int negated = rx[j] == '^';
    if (negated) j++;
    struct vkllm__bytes body = {0};
    vkllm_status st = VKLLM_STATUS_OK;
    int has_sym = 0, has_tilde = 0;
    while (rx[j] && rx[j] != ']' && st == VKLLM_STATUS_OK) {
        if (rx[j] == '\\' && rx[j + 1]) {
            char c = rx[j + 1];
            if (c == 's') st = put(&body, "\\s\\x{85}");
            else if (c == 'd') st = put(&body, "0-9");
            else if (c == 'w') st = put(&body, "A-Za-z0-9_");
            else if (c == 'p' && strncmp(rx + j, "\\p{S}", 5) == 0) {
                has_sym = 1;
                st = put(&body, "\\p{S}");
                j += 5;
                continue;
            } else {
                if (c == '~') has_tilde = 1;
                st = vkllm__bytes_put(&body, rx + j, 2);
            }
            j += 2;
            continue;
        }
        if (rx[j] == '~' || rx[j] == '-') has_tilde = 1; /* a literal or a range: no quirk */
        st = vkllm__bytes_put(&body, rx + j, 1);
        j++;
    }
    if (st == VKLLM_STATUS_OK && rx[j] != ']')
        st = vkllm__err(VKLLM_STATUS_INVALID_ARGUMENT, "pre-tokenizer: unterminated class in %s", rx);
    if (st == VKLLM_STATUS_OK) {
        const char *open = "[", *close = "]";
        if (has_sym && !has_tilde) {
            open = negated ? "(?:~|[" : "(?:(?!~)[";
            close = "])";
        }
        st = put(out, open);
        if (st == VKLLM_STATUS_OK && negated) st = put(out, "^");
        if (st == VKLLM_STATUS_OK) st = vkllm__bytes_put(out, body.p ? body.p : "", body.n);
        if (st == VKLLM_STATUS_OK) st = put(out, close);
    }
    vkllm__free(body.p);
    *i = j + 1;
    return st;
}

static vkllm_status translate(const char *rx, struct vkllm__bytes *out) {
    vkllm_status st = vkllm__bytes_put(out, "", 0);
    for (size_t i = 0; rx[i] && st == VKLLM_STATUS_OK;) {
        if (rx[i] == '[') {
            st = translate_class(rx, &i, out);
            continue;
        }
        if (rx[i] == '\\' && rx[i + 1]) {
            char c = rx[i + 1];
            if (c == 's') st = put(out, "[\\s\\x{85}]");
            else if (c == 'S') st = put(out, "[^\\s\\x{85}]");
            else if (c == 'd') st = put(out, "[0-9]");
            else if (c == 'w') st = put(out, "[A-Za-z0-9_]");
            else if (c == 'b') st = put(out, "(?:(?<=[A-Za-z0-9_])(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?=[A-Za-z0-9_]))");
            else if (c == 'p' && strncmp(rx + i, "\\p{S}", 5) == 0) {
                st = put(out, "(?:(?!~)\\p{S})");
                i += 5;
                continue;
            } else st = vkllm__bytes_put(out, rx + i, 2);
            i += 2;
            continue;
        }
        st = vkllm__bytes_put(out, rx + i, 1);
        i++;
    }
    return st;
}

void vkllm__pretok_free(struct vkllm__pretok *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) pcre2_code_free(p->code[i]);
    vkllm__free(p->code);
    vkllm__free(p);
}

vkllm_status vkllm__pretok_init_regexes(const char *const *regexes, size_t n, struct vkllm__pretok **out) {
    *out = NULL;
    struct vkllm__pretok *p = vkllm__calloc(1, sizeof *p);
    if (!p) return vkllm__err(VKLLM_STATUS_OOM, "pre-tokenizer: out of memory");
    p->code = vkllm__calloc(n ? n : 1, sizeof *p->code);
    if (!p->code) {
        vkllm__free(p);
        return vkllm__err(VKLLM_STATUS_OOM, "pre-tokenizer: out of memory");
    }
    vkllm_status st = VKLLM_STATUS_OK;
    struct vkllm__bytes pat = {0};
    for (size_t i = 0; i < n && st == VKLLM_STATUS_OK; i++) {
        pat.n = 0;
        st = translate(regexes[i], &pat);
        if (st != VKLLM_STATUS_OK) break;
        int errcode;
        PCRE2_SIZE erroff;
        p->code[i] = pcre2_compile((PCRE2_SPTR)pat.p, pat.n, PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &errcode,
                                   &erroff, NULL);
        if (!p->code[i]) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(errcode, msg, sizeof msg);
            st = vkllm__err(VKLLM_STATUS_INTERNAL, "pre-tokenizer: cannot compile /%s/ at %zu: %s", pat.p,
                            (size_t)erroff, (const char *)msg);
            break;
        }
        p->n++;
        (void)pcre2_jit_compile(p->code[i], PCRE2_JIT_COMPLETE); /* interpreter when no JIT */
    }
    vkllm__free(pat.p);
    if (st != VKLLM_STATUS_OK) {
        vkllm__pretok_free(p);
        return st;
    }
    *out = p;
    return VKLLM_STATUS_OK;
}

vkllm_status vkllm__pretok_init(const char *name, struct vkllm__pretok **out, struct vkllm__pretok_flags *flags) {
    *out = NULL;
    if (!name || !*name) name = "default";
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(pre_unsupported); i++)
        if (strcmp(name, pre_unsupported[i]) == 0)
            return vkllm__err(VKLLM_STATUS_UNSUPPORTED,
                              "pre-tokenizer '%s' needs custom code that vkllm does not have yet", name);
    for (size_t i = 0; i < VKLLM_ARRAY_LEN(pre_defs); i++) {
        const struct pre_def *d = &pre_defs[i];
        if (strcmp(name, d->name) != 0) continue;
        size_t n = 0;
        while (d->rx[n]) n++;
        if (flags) {
            flags->ignore_merges = d->ignore_merges;
            flags->clean_spaces = d->clean_spaces;
            flags->add_bos = d->add_bos;
            flags->add_sep = d->add_sep;
            flags->no_bos_token = d->no_bos_token;
        }
        return vkllm__pretok_init_regexes(d->rx, n, out);
    }
    return vkllm__err(VKLLM_STATUS_UNSUPPORTED, "unknown pre-tokenizer type '%s'", name);
}

/* --- splitting --------------------------------------------------------------------------------- */

struct spans {
    size_t *p; /* pairs (start, end) */
    size_t n, cap;
};

static vkllm_status spans_put(struct spans *s, size_t a, size_t b) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        size_t *p = vkllm__realloc(s->p, cap * 2 * sizeof *p);
        if (!p) return vkllm__err(VKLLM_STATUS_OOM, "pre-tokenizer: out of memory");
        s->p = p;
        s->cap = cap;
    }
    s->p[2 * s->n] = a;
    s->p[2 * s->n + 1] = b;
    s->n++;
    return VKLLM_STATUS_OK;
}

static int do_match(const pcre2_code *code, const char *subj, size_t len, size_t at, uint32_t opts,
                    pcre2_match_data *md) {
    int rc = pcre2_match(code, (PCRE2_SPTR)subj, len, at, opts | PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its frames on the heap */
        rc = pcre2_match(code, (PCRE2_SPTR)subj, len, at, opts | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, NULL);
    return rc;
}

/* Split text[a..b) with one expression, appending matches and the gaps between them. */
static vkllm_status split_one(const pcre2_code *code, pcre2_match_data *md, const char *text, size_t a, size_t b,
                              struct spans *out) {
    const char *subj = text + a;
    size_t len = b - a, pos = 0, prev = 0;
    uint32_t opts = 0;
    vkllm_status st = VKLLM_STATUS_OK;
    while (pos <= len) {
        int rc = do_match(code, subj, len, pos, opts, md);
        if (rc == PCRE2_ERROR_NOMATCH) {
            if (!opts) break;
            /* no non-empty match at pos after an empty one: step one character */
            opts = 0;
            if (pos >= len) break;
            pos++;
            while (pos < len && ((uint8_t)subj[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        if (rc < 0) return vkllm__err(VKLLM_STATUS_INTERNAL, "pre-tokenizer: PCRE2 match error %d", rc);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me < ms) me = ms; /* \K tricks cannot happen in our expressions, stay safe anyway */
        if (ms > prev && (st = spans_put(out, a + prev, a + ms)) != VKLLM_STATUS_OK) return st;
        if (me > ms && (st = spans_put(out, a + ms, a + me)) != VKLLM_STATUS_OK) return st;
        prev = me;
        pos = me;
        opts = me == ms ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
    }
    if (prev < len) st = spans_put(out, a + prev, b);
    return st;
}

vkllm_status vkllm__pretok_split(const struct vkllm__pretok *p, const char *text, size_t len, size_t **offs,
                                 size_t *n_words) {
    *offs = NULL;
    *n_words = 0;
    struct spans cur = {0}, next = {0};
    vkllm_status st = VKLLM_STATUS_OK;
    if (len == 0) return VKLLM_STATUS_OK;
    if ((st = spans_put(&cur, 0, len)) != VKLLM_STATUS_OK) return st;
    pcre2_match_data *md = NULL;
    for (size_t r = 0; r < p->n && st == VKLLM_STATUS_OK; r++) {
        md = pcre2_match_data_create_from_pattern(p->code[r], NULL);
        if (!md) {
            st = vkllm__err(VKLLM_STATUS_OOM, "pre-tokenizer: out of memory");
            break;
        }
        next.n = 0;
        for (size_t i = 0; i < cur.n && st == VKLLM_STATUS_OK; i++)
            st = split_one(p->code[r], md, text, cur.p[2 * i], cur.p[2 * i + 1], &next);
        pcre2_match_data_free(md);
        md = NULL;
        struct spans tmp = cur;
        cur = next;
        next = tmp;
    }
    vkllm__free(next.p);
    if (st != VKLLM_STATUS_OK) {
        vkllm__free(cur.p);
        return st;
    }
    *offs = cur.p;
    *n_words = cur.n;
    return VKLLM_STATUS_OK;
}
