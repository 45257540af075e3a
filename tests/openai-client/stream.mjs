// stream.mjs BASE_URL API_KEY - the official openai package against `vkllm serve`: stream a chat
// completion (with the usage chunk) and a completion, list the models, and get a 401 with a wrong
// key. Prints one JSON object on stdout for tests/test_serve.py to check.
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

try {
  await new OpenAI({ baseURL, apiKey: "wrong-key", maxRetries: 0 }).models.list();
  out.bad_key_status = 200;
} catch (e) {
  out.bad_key_status = e.status ?? String(e);
}

console.log(JSON.stringify(out));
