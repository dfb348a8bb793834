// triattn serve driven by the official `openai` npm package, as a user's program would:
// chat and completions, streaming and not, stop strings, usage with the KV figures, and the
// errors (400, 401, 413) as the SDK surfaces them. Run by CTest with TRIATTN_BINARY and
// TRIATTN_SHARED_DIR set; the server is started on a free port and stopped with SIGTERM.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { shared, startServer } from "./serve.mjs";

const model = `${shared}/models/tinystories-656k`;
const key = "test-key";
let server, client, baseURL;

before(async () => {
  let url;
  ({ server, url } = await startServer(["-m", model, "--api-key", key, "--max-body", "8"]));
  baseURL = url + "/v1";
  client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });
});

after(async () => {
  const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  server.kill("SIGTERM");
  assert.equal(await exited, 0, "SIGTERM ends the server with exit code 0");
});

test("completions: greedy text, usage with KV figures", async () => {
  const r = await client.completions.create({ model: "tinystories", prompt: "Once upon a time,", max_tokens: 20, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.ok(r.choices[0].text.length > 0);
  assert.equal(r.choices[0].finish_reason, "length");
  assert.equal(r.usage.prompt_tokens, 7);
  assert.equal(r.usage.completion_tokens, 20);
  assert.equal(r.usage.kv_policy, "full");
  assert.equal(r.usage.kv_peak_tokens, 26);
});

test("completions streamed: the chunks add up to the same text", async () => {
  const plain = await client.completions.create({ model: "m", prompt: "The dog", max_tokens: 25, temperature: 0 });
  const stream = await client.completions.create({
    model: "m", prompt: "The dog", max_tokens: 25, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = "", usage = null, finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, plain.choices[0].text);
  assert.equal(finish, "length");
  assert.equal(usage.completion_tokens, 25);
});

test("chat completions, plain and streamed, with a stop string", async () => {
  const messages = [{ role: "user", content: "Tell me a story" }];
  const plain = await client.chat.completions.create({ model: "m", messages, max_tokens: 30, temperature: 0 });
  assert.equal(plain.choices[0].message.role, "assistant");
  const full = plain.choices[0].message.content;
  assert.ok(full.length > 12, full);
  const stop = full.slice(8, 12);
  const stream = await client.chat.completions.create({ model: "m", messages, max_tokens: 30, temperature: 0, stream: true, stop: [stop] });
  let text = "", finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      text += c.delta.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, full.slice(0, full.indexOf(stop)));
  assert.equal(finish, "stop");
});

test("per-request compression through extra body fields", async () => {
  const r = await client.completions.create({
    model: "m", prompt: "Once upon a time,", max_tokens: 100, temperature: 0,
    kv_policy: "full", kv_budget: 32,
  });
  assert.equal(r.usage.kv_policy, "full");
  await assert.rejects(
    client.completions.create({ model: "m", prompt: "x", max_tokens: 5, kv_policy: "triattention" }),
    (e) => e instanceof OpenAI.BadRequestError && /calibrat/.test(e.message),
  );
});

test("errors as the SDK surfaces them: 400 naming the field, 401, 413", async () => {
  await assert.rejects(
    client.completions.create({ model: "m", prompt: "x", top_p: 3 }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "top_p",
  );
  await assert.rejects(
    client.chat.completions.create({ model: "m", messages: [] }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "messages",
  );
  const wrong = new OpenAI({ baseURL, apiKey: "nope", maxRetries: 0 });
  await assert.rejects(wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  await assert.rejects(
    client.completions.create({ model: "m", prompt: "a".repeat(9000), max_tokens: 1 }),
    (e) => e instanceof OpenAI.APIError && e.status === 413,
  );
});

test("models", async () => {
  const list = await client.models.list();
  assert.equal(list.data[0].id, "tinystories-656k");
});
