// triattn serve driven by the official `openai` npm package, as a user's program would:
// chat and completions, streaming and not, stop strings, n choices, log-probabilities (and
// echo, as lm-evaluation-harness asks for them), usage with the KV figures and the reused
// prompt tokens of a conversation's next turn, and the errors (400, 401, 413) as the SDK
// surfaces them, and the Responses API (plain, streamed, continued, text.format). Run by CTest with TRIATTN_BINARY and
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

test("n choices: one prefill, each choice indexed; streamed choices end once each", async () => {
  const r = await client.completions.create({ model: "m", prompt: "The cat", max_tokens: 10, temperature: 0, n: 2 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  assert.equal(r.choices[0].text, r.choices[1].text, "greedy choices agree");
  assert.equal(r.usage.completion_tokens, 20);
  const stream = await client.chat.completions.create({
    model: "m", messages: [{ role: "user", content: "Hi" }], max_tokens: 8, temperature: 1, seed: 5, n: 3, stream: true,
  });
  const ends = [0, 0, 0];
  for await (const chunk of stream) for (const c of chunk.choices) if (c.finish_reason) ends[c.index] += 1;
  assert.deepEqual(ends, [1, 1, 1]);
});

test("logprobs: chat top_logprobs, and completions echo for log-likelihoods", async () => {
  const chat = await client.chat.completions.create({
    model: "m", messages: [{ role: "user", content: "Hi" }], max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 2,
  });
  const content = chat.choices[0].logprobs.content;
  assert.ok(content.length > 0);
  for (const t of content) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 2);
    assert.equal(t.top_logprobs[0].token, t.token, "greedy picks the likeliest");
  }
  // lm-evaluation-harness: token ids, echo, logprobs, max_tokens 0.
  const ids = [1, 403, 407, 261, 1297];
  const r = await client.completions.create({ model: "m", prompt: ids, max_tokens: 0, echo: true, logprobs: 1, temperature: 0 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, ids.length);
  assert.equal(lp.token_logprobs[0], null);
  for (const x of lp.token_logprobs.slice(1)) assert.ok(x < 0);
  assert.equal(Object.keys(lp.top_logprobs[1]).length, 1);
});

test("a conversation's next turn continues the kept cache (cached_tokens)", async () => {
  // One sampled token is never fed, so the kept sequence holds the first prompt exactly; the
  // next request's prompt starts with it.
  const a = await client.completions.create({ model: "m", prompt: [1, 500, 600, 700], max_tokens: 1, temperature: 0 });
  const b = await client.completions.create({ model: "m", prompt: [1, 500, 600, 700, 800, 900], max_tokens: 3, temperature: 0 });
  assert.equal(a.usage.prompt_tokens_details.cached_tokens, 0);
  assert.equal(b.usage.prompt_tokens_details.cached_tokens, 4, "the kept sequence held the first prompt");
});

test("responses: plain, streamed (events add up to the text), continued, text.format, a forced call refused for a vocabulary without '{'", async () => {
  const plain = await client.responses.create({ model: "m", input: "Tell me a story", max_output_tokens: 20, temperature: 0 });
  assert.equal(plain.object, "response");
  assert.equal(plain.status, "incomplete");
  assert.ok(plain.output_text.length > 0, "the SDK gathers output_text from the message item");
  assert.equal(plain.usage.output_tokens, 20);

  const stream = await client.responses.create({
    model: "m", input: "Tell me a story", max_output_tokens: 20, temperature: 0, stream: true,
  });
  let text = "", last = null;
  const types = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "response.output_text.delta") text += event.delta;
    last = event;
  }
  assert.equal(types[0], "response.created");
  assert.equal(last.type, "response.incomplete");
  assert.equal(text, plain.output_text);
  assert.equal(last.response.output[0].content[0].text, text);

  const next = await client.responses.create({
    model: "m", input: "And then?", previous_response_id: plain.id, max_output_tokens: 5, temperature: 0,
  });
  assert.equal(next.previous_response_id, plain.id);
  assert.ok(next.usage.input_tokens_details.cached_tokens > 0, "the kept sequence continues");
  const got = await client.responses.retrieve(plain.id);
  assert.equal(got.output[0].content[0].text, plain.output_text);

  // text.format reaches the grammar: this model has no token for "{", and the error names the field.
  await assert.rejects(
    client.responses.create({
      model: "m", input: "a record", max_output_tokens: 60,
      text: { format: { type: "json_schema", name: "r", schema: { type: "object", properties: { ok: { type: "boolean" } } } } },
    }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "text.format.schema" && /cannot be generated/.test(e.message),
  );
  await assert.rejects(
    client.responses.create({
      model: "m", input: "x", tool_choice: "required", tools: [{ type: "function", name: "f", parameters: {} }],
    }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === "tools" && /cannot be generated/.test(e.message),
  );
});

test("models", async () => {
  const list = await client.models.list();
  assert.equal(list.data[0].id, "tinystories-656k");
});
