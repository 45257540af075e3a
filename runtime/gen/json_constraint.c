/* json_constraint.c - see json_constraint.h. States name what may come next. */
#include "json_constraint.h"

enum {
    J_START,     /* before the object: whitespace or '{' */
    J_OBJ_FIRST, /* after '{': '"' (a key) or '}' */
    J_KEY,       /* after ',' in an object: '"' */
    J_COLON,     /* after a key: ':' */
    J_VALUE,     /* after ':' or ',' in an array: a value */
    J_ARR_FIRST, /* after '[': a value or ']' */
    J_AFTER,     /* after a value inside a container: ',' or the closing bracket */
    J_DONE,      /* the object has closed: whitespace only */
    J_STR,       /* inside a string */
    J_ESC,       /* after '\' in a string */
    J_HEX,       /* inside \uXXXX (sub: digits read) */
    J_LIT,       /* inside true / false / null (sub: the literal, and bytes read) */
    J_MINUS,     /* number: after '-' */
    J_ZERO,      /* number: a leading 0 (no more digits) */
    J_INT,       /* number: integer digits */
    J_DOT,       /* number: after '.' */
    J_FRAC,      /* number: fraction digits */
    J_E,         /* number: after 'e' */
    J_ESIGN,     /* number: after the exponent's sign */
    J_EXP        /* number: exponent digits */
};

static const char *const k_lits[3] = {"true", "false", "null"};

void vkllm__json_init(struct vkllm__json *j) {
    j->depth = 0;
    j->state = J_START;
    j->sub = 0;
    j->key = 0;
    j->ws = 0;
    j->nl = 0;
}

int vkllm__json_complete(const struct vkllm__json *j) { return j->state == J_DONE; }

static int is_ws(unsigned c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(unsigned c) { return c >= '0' && c <= '9'; }
static int is_hex(unsigned c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/* A value has ended: back in its container, or the object is done. */
static void value_done(struct vkllm__json *j) { j->state = j->depth ? J_AFTER : J_DONE; }

static int open_container(struct vkllm__json *j, unsigned c) {
    if (j->depth == VKLLM__JSON_MAX_DEPTH) return -1;
    j->stack[j->depth++] = (uint8_t)c;
    j->state = c == '{' ? J_OBJ_FIRST : J_ARR_FIRST;
    return 0;
}

/* The first byte of a value. */
static int value_start(struct vkllm__json *j, unsigned c) {
    switch (c) {
    case '{':
    case '[': return open_container(j, c);
    case '"': j->state = J_STR, j->key = 0; return 0;
    case '-': j->state = J_MINUS; return 0;
    case '0': j->state = J_ZERO; return 0;
    case 't': j->state = J_LIT, j->sub = 0 << 4 | 1; return 0;
    case 'f': j->state = J_LIT, j->sub = 1 << 4 | 1; return 0;
    case 'n': j->state = J_LIT, j->sub = 2 << 4 | 1; return 0;
    default:
        if (c >= '1' && c <= '9') {
            j->state = J_INT;
            return 0;
        }
        return -1;
    }
}

/* ',', '}' or ']' (or whitespace) after a value inside a container. */
static int after_value(struct vkllm__json *j, unsigned c) {
    if (is_ws(c)) return 0;
    uint8_t top = j->stack[j->depth - 1];
    if (c == ',') {
        j->state = top == '{' ? J_KEY : J_VALUE;
        return 0;
    }
    if ((c == '}' && top == '{') || (c == ']' && top == '[')) {
        j->depth--;
        value_done(j);
        return 0;
    }
    return -1;
}

static int step(struct vkllm__json *j, unsigned c) {
    switch (j->state) {
    case J_START:
        if (is_ws(c)) return 0;
        return c == '{' ? open_container(j, c) : -1;
    case J_OBJ_FIRST:
    case J_KEY:
        if (is_ws(c)) return 0;
        if (c == '"') {
            j->state = J_STR, j->key = 1;
            return 0;
        }
        if (c == '}' && j->state == J_OBJ_FIRST) {
            j->depth--;
            value_done(j);
            return 0;
        }
        return -1;
    case J_COLON:
        if (is_ws(c)) return 0;
        if (c != ':') return -1;
        j->state = J_VALUE;
        return 0;
    case J_ARR_FIRST:
        if (c == ']') {
            j->depth--;
            value_done(j);
            return 0;
        }
        /* fall through */
    case J_VALUE:
        if (is_ws(c)) return 0;
        return value_start(j, c);
    case J_AFTER: return after_value(j, c);
    case J_DONE: return is_ws(c) ? 0 : -1;
    case J_STR:
        if (c == '"') {
            if (j->key) j->state = J_COLON;
            else value_done(j);
            return 0;
        }
        if (c == '\\') j->state = J_ESC;
        return c < 0x20 ? -1 : 0; /* control characters must be escaped */
    case J_ESC:
        if (c == 'u') {
            j->state = J_HEX, j->sub = 0;
            return 0;
        }
        if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' && c != 't') return -1;
        j->state = J_STR;
        return 0;
    case J_HEX:
        if (!is_hex(c)) return -1;
        if (++j->sub == 4) j->state = J_STR;
        return 0;
    case J_LIT: {
        const char *lit = k_lits[j->sub >> 4];
        unsigned at = j->sub & 15;
        if ((unsigned char)lit[at] != c) return -1;
        j->sub++;
        if (!lit[at + 1]) value_done(j);
        return 0;
    }
    case J_MINUS:
        if (c == '0') j->state = J_ZERO;
        else if (is_digit(c)) j->state = J_INT;
        else return -1;
        return 0;
    case J_INT:
        if (is_digit(c)) return 0;
        /* fall through */
    case J_ZERO:
        if (c == '.') j->state = J_DOT;
        else if (c == 'e' || c == 'E') j->state = J_E;
        else {
            value_done(j); /* the number ended: c belongs to what follows */
            return j->state == J_AFTER ? after_value(j, c) : -1;
        }
        return 0;
    case J_DOT:
        if (!is_digit(c)) return -1;
        j->state = J_FRAC;
        return 0;
    case J_FRAC:
        if (is_digit(c)) return 0;
        if (c == 'e' || c == 'E') {
            j->state = J_E;
            return 0;
        }
        value_done(j);
        return j->state == J_AFTER ? after_value(j, c) : -1;
    case J_E:
        if (c == '+' || c == '-') {
            j->state = J_ESIGN;
            return 0;
        }
        /* fall through */
    case J_ESIGN:
        if (!is_digit(c)) return -1;
        j->state = J_EXP;
        return 0;
    case J_EXP:
        if (is_digit(c)) return 0;
        value_done(j);
        return j->state == J_AFTER ? after_value(j, c) : -1;
    }
    return -1;
}

int vkllm__json_feed(struct vkllm__json *j, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)s[i];
        int in_text = j->state == J_STR || j->state == J_ESC || j->state == J_HEX;
        if (!in_text && is_ws(c)) { /* "", " ", or "\n" and up to VKLLM__JSON_MAX_INDENT spaces or tabs */
            if (j->ws == 0) j->nl = c == '\n';
            else if (!j->nl || c == '\n' || c == '\r' || j->ws > VKLLM__JSON_MAX_INDENT) return -1;
            if (j->ws == 0 && c != ' ' && c != '\n') return -1;
            if (j->state == J_START && (c != ' ' || j->ws)) return -1; /* one space at most before the object */
            j->ws++;
        } else {
            j->ws = 0;
        }
        if (step(j, c)) return -1;
    }
    return 0;
}
