// portllm serve driven by the official OpenAI Node SDK: completions, chat, streaming (with
// usage), tools accepted, n / logprobs / seed, and the SDK's typed errors for client mistakes.
// Usage: node sdk_test.mjs BASE_URL API_KEY
import OpenAI from "openai";

const [baseURL, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey, maxRetries: 0, timeout: 60000 });
let failures = 0;
const ok = (name) => console.log("ok: " + name);
const fail = (name, why) => { console.error("FAIL: " + name + ": " + why); failures++; };
async function check(name, fn) {
  try { await fn(); ok(name); } catch (e) { fail(name, e && e.stack ? e.stack : e); }
}
function assert(cond, msg) { if (!cond) throw new Error(msg); }
async function expectStatus(name, status, fn) {
  try {
    await fn();
    fail(name, "no error");
  } catch (e) {
    if (e instanceof OpenAI.APIError && e.status === status && e.error && typeof e.error.message === "string") ok(`${name} (${status})`);
    else fail(name, `wanted APIError ${status}, got ${e && e.status} ${e}`);
  }
}

const models = await client.models.list();
const model = models.data[0].id;

await check("models.list", async () => assert(model === "stories", "model id " + model));

await check("completions.create", async () => {
  const r = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 16, temperature: 0 });
  assert(r.object === "text_completion", "object");
  assert(typeof r.choices[0].text === "string" && r.choices[0].text.length > 0, "text");
  assert(["stop", "length"].includes(r.choices[0].finish_reason), "finish_reason " + r.choices[0].finish_reason);
  assert(r.usage.completion_tokens > 0 && r.usage.total_tokens === r.usage.prompt_tokens + r.usage.completion_tokens, "usage");
});

await check("completions n + logprobs + seed reproducible", async () => {
  const req = { model, prompt: "The little dog", max_tokens: 12, temperature: 1.0, n: 3, logprobs: 2, seed: 1234 };
  const a = await client.completions.create(req);
  const b = await client.completions.create(req);
  assert(a.choices.length === 3, "n");
  assert(a.choices[0].logprobs.tokens.length > 0 && a.choices[0].logprobs.top_logprobs[0] !== undefined, "logprobs");
  assert(JSON.stringify(a.choices.map(c => c.text)) === JSON.stringify(b.choices.map(c => c.text)), "same seed, same text");
});

await check("completions stream equals non-stream (greedy)", async () => {
  const req = { model, prompt: "Lily went to the park", max_tokens: 24, temperature: 0 };
  const full = await client.completions.create(req);
  const stream = await client.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let text = "", usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length) text += chunk.choices[0].text;
    if (chunk.usage) usage = chunk.usage;
  }
  assert(text === full.choices[0].text, `stream ${JSON.stringify(text)} != ${JSON.stringify(full.choices[0].text)}`);
  assert(usage && usage.completion_tokens === full.usage.completion_tokens, "stream usage");
});

await check("chat.completions.create", async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "A story about a cat" }],
    max_completion_tokens: 16, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  assert(r.object === "chat.completion", "object");
  assert(r.choices[0].message.role === "assistant" && typeof r.choices[0].message.content === "string", "message");
  assert(r.choices[0].logprobs.content.length > 0 && r.choices[0].logprobs.content[0].top_logprobs.length === 2, "chat logprobs");
});

await check("chat stream", async () => {
  const stream = await client.chat.completions.create({
    model, messages: [{ role: "user", content: "Hello" }], max_tokens: 12, temperature: 0, stream: true,
    stream_options: { include_usage: true },
  });
  let content = "", finish = null, usage = null, role = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      if (c.delta.content) content += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert(role === "assistant", "role");
  assert(finish === "stop" || finish === "length", "finish " + finish);
  assert(usage && usage.completion_tokens > 0, "usage");
});

await check("chat with tools accepted (auto, none, required, named)", async () => {
  const tools = [{ type: "function", function: { name: "get_weather", description: "Weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
  for (const tool_choice of ["auto", "none", "required", { type: "function", function: { name: "get_weather" } }]) {
    const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Weather in Paris?" }],
      tools, tool_choice, max_tokens: 8, temperature: 0 });
    assert(["stop", "length", "tool_calls"].includes(r.choices[0].finish_reason), "finish " + r.choices[0].finish_reason);
  }
});

await check("chat_template_kwargs passes through", async () => {
  const r = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 4,
    chat_template_kwargs: { enable_thinking: false } });
  assert(r.choices.length === 1, "choices");
});

await check("sampler fields accepted", async () => {
  const r = await client.completions.create({ model, prompt: "Tim", max_tokens: 8, temperature: 0.8, top_p: 0.9, top_k: 20,
    min_p: 0.05, repetition_penalty: 1.1, presence_penalty: 0.5, frequency_penalty: 0.5, logit_bias: { "5": -100 },
    min_tokens: 2, ignore_eos: true, stop_token_ids: [2], skip_special_tokens: true, stop: ["zzz"], seed: 7 });
  assert(r.usage.completion_tokens === 8, "ignore_eos gives exactly max_tokens: " + r.usage.completion_tokens);
});

await expectStatus("unknown model", 404, () => client.completions.create({ model: "no-such-model", prompt: "x" }));
await expectStatus("empty messages", 400, () => client.chat.completions.create({ model, messages: [] }));
await expectStatus("empty prompt", 400, () => client.completions.create({ model, prompt: "" }));
await expectStatus("temperature out of range", 400, () => client.completions.create({ model, prompt: "x", temperature: -2 }));
await expectStatus("prompt over context", 400, () => client.completions.create({ model, prompt: Array(600).fill(300) }));
await expectStatus("prompt over context, streaming", 400, async () => {
  const s = await client.completions.create({ model, prompt: Array(600).fill(300), stream: true });
  for await (const _ of s) { /* must not get here */ }
});
await expectStatus("bad logit_bias", 400, () => client.completions.create({ model, prompt: "x", logit_bias: { abc: 1 } }));
await expectStatus("bad api key", 401, () => new OpenAI({ baseURL: baseURL + "/v1", apiKey: "wrong", maxRetries: 0 })
  .completions.create({ model, prompt: "x" }));

console.log(failures ? `${failures} failure(s)` : "all SDK checks passed");
process.exit(failures ? 1 : 0);
