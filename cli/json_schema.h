/* json_schema.h - a JSON schema turned into a GBNF grammar (vkllm_generate_params.grammar) whose
 * sentences are exactly JSON texts that validate against the schema, for structured output
 * (OpenAI's response_format json_schema, llama-server's json_schema, tools' parameters,
 * `vkllm run --json-schema`).
 *
 * Covered: type (one or a list), object with properties / required / additionalProperties,
 * array with items / prefixItems / minItems / maxItems, string with minLength / maxLength, number,
 * integer (with minimum / maximum / exclusiveMinimum / exclusiveMaximum up to 1e15), boolean,
 * null, enum, const, anyOf, oneOf (as anyOf), allOf of one schema, $ref to
 * "#", "#/$defs/..." or "#/definitions/..." (recursion allowed), the boolean schema true, and
 * the annotations (title, description, default, examples, format, $schema, $id, $comment,
 * deprecated, readOnly, writeOnly), which constrain nothing. Every other keyword (pattern,
 * multipleOf, uniqueItems, bounds on a non-integer number, ...) is refused with a message naming
 * it: a schema the grammar cannot honour is an error, never silently loosened.
 *
 * Objects: the required properties in the schema's order, then the optional ones, each in that
 * order and each one present or not; more properties only when additionalProperties is true or a
 * schema, or when the object lists no properties at all and does not say false. Whitespace
 * between tokens: none, one space, or a newline and up to 20 spaces or tabs (llama.cpp's rule);
 * numbers have at most 16 digits in each part so that a small model cannot run away. */
#ifndef CLI_JSON_SCHEMA_H
#define CLI_JSON_SCHEMA_H

#include <stddef.h>

struct cJSON;

/* The grammar (malloc'd text, rule `root`), or NULL with a message in err. */
char *cli_schema_grammar(const struct cJSON *schema, char *err, size_t err_len);

/* The rules of schema under rule `name` (helpers named name-r1, name-ref1, ...) without the JSON
 * primitives (ws, string, number, integer, boolean, null, value, object, array, char), which
 * cli_json_base_rules() gives once for a grammar made of several schemas (a tool per rule). */
char *cli_schema_rules(const struct cJSON *schema, const char *name, char *err, size_t err_len);
const char *cli_json_base_rules(void);

/* The grammar of any one JSON value (OpenAI's json_object mode asks for an object: object 1). */
const char *cli_json_grammar(int object);

#endif /* CLI_JSON_SCHEMA_H */
