// stream.mjs BASE_URL API_KEY - the official openai package against `vkllm serve`: stream a chat
// completion (with the usage chunk) and a completion, list the models, ask for JSON under a schema
// and for a tool call (plain and streamed), and get a 401 with a wrong key. Prints one JSON object on stdout for tests/test_serve.py to check.
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
const out = { chunks: 0 };

const models = [];
for await (const m of client.models.list()) models.push(m.id);
out.models = models;

const chatRequest = {
  model: models[0],
  messages: [
    { role: "system", content: "You are a storyteller." },
    { role: "user", content: "Tell me a story about a dog." },
  ],
  max_tokens: 12,
  temperature: 0,
};
const chat = await client.chat.completions.create({
  ...chatRequest,
  stream: true,
  stream_options: { include_usage: true },
});
out.chat_text = "";
for await (const chunk of chat) {
  out.chunks++;
  const c = chunk.choices[0];
  if (c?.delta?.role) out.chat_role = c.delta.role;
  if (c?.delta?.content) out.chat_text += c.delta.content;
  if (c?.finish_reason) out.chat_finish = c.finish_reason;
  if (chunk.usage) out.chat_usage = chunk.usage;
}
out.chat_request = chatRequest;

const completionRequest = { model: models[0], prompt: "Once upon a time", max_tokens: 12, temperature: 0 };
const completion = await client.completions.create({ ...completionRequest, stream: true });
out.completion_text = "";
for await (const chunk of completion) {
  out.chunks++;
  const c = chunk.choices[0];
  if (c?.text) out.completion_text += c.text;
  if (c?.finish_reason) out.completion_finish = c.finish_reason;
}
out.completion_request = completionRequest;

// structured output and function calling, plain and streamed
const schema = {
  type: "object",
  properties: { name: { type: "string", maxLength: 16 }, age: { type: "integer" }, pet: { enum: ["cat", "dog"] } },
  required: ["name", "age", "pet"],
  additionalProperties: false,
};
out.schema = schema;
const structured = await client.chat.completions.create({
  model: models[0],
  messages: [{ role: "user", content: "Describe a person." }],
  max_tokens: 80,
  seed: 7,
  response_format: { type: "json_schema", json_schema: { name: "person", schema, strict: true } },
});
out.schema_text = structured.choices[0].message.content;
out.schema_finish = structured.choices[0].finish_reason;

const tools = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "The weather in a city",
      parameters: {
        type: "object",
        properties: { city: { type: "string", maxLength: 20 }, unit: { enum: ["celsius", "fahrenheit"] } },
        required: ["city", "unit"],
      },
    },
  },
];
out.tools = tools;
const called = await client.chat.completions.create({
  model: models[0],
  messages: [{ role: "user", content: "What is the weather in Paris?" }],
  tools,
  tool_choice: "required",
  max_tokens: 80,
  seed: 3,
});
out.tool_message = called.choices[0].message;
out.tool_finish = called.choices[0].finish_reason;
const calledStream = await client.chat.completions.create({
  model: models[0],
  messages: [{ role: "user", content: "What is the weather in Paris?" }],
  tools,
  tool_choice: { type: "function", function: { name: "get_weather" } },
  max_tokens: 80,
  seed: 3,
  stream: true,
});
out.stream_calls = {};
for await (const chunk of calledStream) {
  const c = chunk.choices[0];
  for (const t of c?.delta?.tool_calls ?? []) {
    const s = (out.stream_calls[t.index] ??= { name: "", arguments: "" });
    if (t.id) s.id = t.id;
    if (t.function?.name) s.name += t.function.name;
    if (t.function?.arguments) s.arguments += t.function.arguments;
  }
  if (c?.finish_reason) out.stream_tool_finish = c.finish_reason;
}

try {
  await new OpenAI({ baseURL, apiKey: "wrong-key", maxRetries: 0 }).models.list();
  out.bad_key_status = 200;
} catch (e) {
  out.bad_key_status = e.status ?? String(e);
}

console.log(JSON.stringify(out));
