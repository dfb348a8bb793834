// An agent's use of triattn serve through the official `openai` npm package: structured
// output with chat.completions.parse(), the SDK's tool runner (runTools), streamed tool
// calls, and function tools through the Responses API (responses.create(), plain and
// streamed). Two random-output models, at temperature 1 over several seeds, so that every valid
// reply is the constraint's doing: bytelm-2k (a byte vocabulary) with Qwen3's template, and a
// random-weight `make-model` model with Llama 3.1's template. Run by CTest with TRIATTN_BINARY
// and TRIATTN_SHARED_DIR set.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { binary, shared, startServer } from "./serve.mjs";

const templates = `${shared}/chat-templates`;
const work = mkdtempSync(join(tmpdir(), "triattn-agents-"));
const servers = [];
let qwen, llama;  // clients
let qwenNoThink;  // Qwen3's template with --no-think (the Responses API takes no chat_template_kwargs)

const person = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 12 },
    age: { type: "integer", minimum: 0, maximum: 120 },
    tags: { type: "array", items: { enum: ["a", "b"] }, maxItems: 3 },
  },
  required: ["name", "age", "tags"],
  additionalProperties: false,
};

function checkPerson(p) {
  assert.equal(typeof p, "object");
  assert.deepEqual(Object.keys(p), ["name", "age", "tags"]);
  assert.equal(typeof p.name, "string");
  assert.ok([...p.name].length <= 12, p.name);
  assert.ok(Number.isInteger(p.age) && p.age >= 0 && p.age <= 120, String(p.age));
  assert.ok(Array.isArray(p.tags) && p.tags.length <= 3 && p.tags.every((t) => t === "a" || t === "b"));
}

const weatherParameters = {
  type: "object",
  properties: { city: { enum: ["Paris", "Rome", "Oslo"] }, days: { type: "integer", minimum: 1, maximum: 7 } },
  required: ["city", "days"],
  additionalProperties: false,
};

function checkWeatherArgs(args) {
  assert.deepEqual(Object.keys(args), ["city", "days"]);
  assert.ok(["Paris", "Rome", "Oslo"].includes(args.city), args.city);
  assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, String(args.days));
}

// The question, and no thinking block first (a random model would never close one).
const ask = (content) => ({
  messages: [{ role: "user", content }],
  temperature: 1,
  max_tokens: 300,
  chat_template_kwargs: { enable_thinking: false },
});

before(async () => {
  const m = join(work, "tiny-llama.gguf");
  execFileSync(binary, ["make-model", "--preset", "tiny-llama", "--ctx", "4096", "-o", m], { stdio: "ignore" });
  for (const [args, set] of [
    [["-m", `${shared}/models/bytelm-2k`, "--chat-template", `${templates}/Qwen-Qwen3-0.6B.jinja`], (c) => (qwen = c)],
    [["-m", m, "--chat-template", `${templates}/meta-llama-Llama-3.1-8B-Instruct.jinja`], (c) => (llama = c)],
    [["-m", `${shared}/models/bytelm-2k`, "--chat-template", `${templates}/Qwen-Qwen3-0.6B.jinja`, "--no-think"],
      (c) => (qwenNoThink = c)],
  ]) {
    const { server, url } = await startServer(args);
    servers.push(server);
    set(new OpenAI({ baseURL: url + "/v1", apiKey: "none", maxRetries: 0 }));
  }
});

after(async () => {
  for (const server of servers) {
    const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
    server.kill("SIGTERM");
    assert.equal(await exited, 0);
  }
  rmSync(work, { recursive: true, force: true });
});

test("chat.completions.parse() with a JSON schema: every reply parses and fits it", async () => {
  for (const [name, client] of [["qwen3", qwen], ["llama3.1", llama]])
    for (const seed of [1, 2, 3]) {
      const c = await client.beta.chat.completions.parse({
        ...ask("Describe a person."),
        seed,
        response_format: { type: "json_schema", json_schema: { name: "person", strict: true, schema: person } },
      });
      assert.equal(c.choices[0].finish_reason, "stop", `${name} seed ${seed}`);
      checkPerson(c.choices[0].message.parsed);
    }
});

test("runTools(): the SDK calls our function with arguments its schema allows; the history with its result goes back", async () => {
  for (const [name, client] of [["qwen3", qwen], ["llama3.1", llama]])
    for (const seed of [1, 2]) {
      const calls = [];
      const runner = client.beta.chat.completions.runTools({
        ...ask("What is the weather?"),
        seed,
        tools: [
          {
            type: "function",
            function: {
              name: "get_weather",
              description: "The weather in a city for some days",
              parameters: weatherParameters,
              parse: JSON.parse,
              function: (args) => {
                calls.push(args);
                return { forecast: "sunny" };
              },
            },
          },
        ],
        // A named function: the runner calls it once and stops.
        tool_choice: { type: "function", function: { name: "get_weather" } },
        parallel_tool_calls: false,
      });
      await runner.done();
      assert.equal(calls.length, 1, `${name} seed ${seed}`);
      checkWeatherArgs(calls[0]);
      const roles = runner.messages.map((m) => m.role);
      assert.ok(roles.includes("tool"), roles.join(","));
      const assistant = runner.messages.find((m) => m.role === "assistant");
      assert.equal(assistant.tool_calls.length, 1);
      assert.equal(assistant.tool_calls[0].function.name, "get_weather");
      // The next turn carries the call and its result through the template.
      const next = await client.chat.completions.create({
        ...ask(""),
        messages: runner.messages,
        seed,
        max_tokens: 16,
        tools: [{ type: "function", function: { name: "get_weather", parameters: weatherParameters } }],
        tool_choice: "none",
      });
      assert.ok(["stop", "length"].includes(next.choices[0].finish_reason), `${name} seed ${seed}`);
      assert.equal(next.choices[0].message.tool_calls, undefined);
    }
});

test("streamed tool calls: delta.tool_calls reassemble to the whole reply's call", async () => {
  for (const [name, client] of [["qwen3", qwen], ["llama3.1", llama]]) {
    const body = {
      ...ask("Weather in Oslo?"),
      seed: 4,
      tools: [{ type: "function", function: { name: "get_weather", parameters: weatherParameters } }],
      tool_choice: "required",
      parallel_tool_calls: false,
    };
    const whole = await client.chat.completions.create(body);
    assert.equal(whole.choices[0].finish_reason, "tool_calls", name);
    const expected = whole.choices[0].message.tool_calls[0];
    const stream = await client.chat.completions.create({ ...body, stream: true });
    let id = "", fname = "", args = "", finish = null;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      for (const d of choice.delta.tool_calls ?? []) {
        assert.equal(d.index, 0);
        if (d.id) id = d.id;
        if (d.function?.name) fname += d.function.name;
        if (d.function?.arguments) args += d.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(finish, "tool_calls", name);
    assert.ok(id.startsWith("call_"), id);
    assert.equal(fname, expected.function.name);
    assert.deepEqual(JSON.parse(args), JSON.parse(expected.function.arguments));
    checkWeatherArgs(JSON.parse(args));
  }
});

test("responses.create() with a forced function tool: the SDK reads the function_call item, plain and streamed", async () => {
  for (const [name, client] of [["qwen3", qwenNoThink], ["llama3.1", llama]])
    for (const seed of [1, 2]) {
      const body = {
        model: "m",
        input: "Weather in Oslo?",
        temperature: 1,
        seed,
        max_output_tokens: 300,
        tools: [{ type: "function", name: "get_weather", description: "Weather in a city", parameters: weatherParameters, strict: true }],
        tool_choice: { type: "function", name: "get_weather" },
        parallel_tool_calls: false,
      };
      const r = await client.responses.create(body);
      assert.equal(r.status, "completed", `${name} seed ${seed}`);
      const calls = r.output.filter((item) => item.type === "function_call");
      assert.equal(calls.length, 1, JSON.stringify(r.output));
      assert.equal(calls[0].name, "get_weather");
      assert.ok(calls[0].call_id.length > 0);
      checkWeatherArgs(JSON.parse(calls[0].arguments));

      const stream = await client.responses.create({ ...body, stream: true });
      let args = "", added = null, done = null, completed = null;
      for await (const event of stream) {
        if (event.type === "response.output_item.added") added = event.item;
        if (event.type === "response.function_call_arguments.delta") args += event.delta;
        if (event.type === "response.output_item.done") done = event.item;
        if (event.type === "response.completed") completed = event.response;
      }
      assert.equal(added.type, "function_call");
      assert.equal(added.name, "get_weather");
      assert.equal(done.arguments, args);
      assert.equal(args, calls[0].arguments, `${name} seed ${seed}: the same seed makes the same call`);
      assert.deepEqual(completed.output.map((item) => item.type), ["function_call"]);

      // The call's output continues the stored response.
      const next = await client.responses.create({
        model: "m",
        previous_response_id: r.id,
        input: [{ type: "function_call_output", call_id: calls[0].call_id, output: "sunny" }],
        max_output_tokens: 4,
        temperature: 0,
      });
      assert.equal(next.previous_response_id, r.id);
      assert.ok(next.usage.input_tokens_details.cached_tokens > 0, "the kept sequence continues");
    }
});
