// The chat page at GET / in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): a message typed and sent, the streamed reply appears with its KV figures.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";
import { shared, startServer } from "./serve.mjs";

let server, url, browser;

before(async () => {
  ({ server, url } = await startServer(["-m", `${shared}/models/tinystories-656k`]));
  url += "/";
  // Flags: root needs --no-sandbox; the rest keep Chromium off the (closed) network.
  // playwright gives it a fresh temporary profile.
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  server.kill("SIGTERM");
});

test("a typed message gets a streamed reply with its KV figures", async () => {
  const page = await browser.newPage();
  await page.goto(url);
  assert.equal(await page.title(), "triattn chat");
  await page.fill("#maxtok", "24");
  await page.fill("#input", "Tell me a story");
  await page.press("#input", "Enter");
  await page.waitForSelector(".msg.user");
  assert.equal(await page.textContent(".msg.user"), "Tell me a story");
  // The figures line is written from the usage chunk, which comes after the last text.
  await page.waitForFunction(() => /tokens \| KV full: peak \d+ tok\/head/.test(document.querySelector(".figures")?.textContent ?? ""),
                             null, { timeout: 30000 });
  const answer = await page.textContent(".msg.assistant .answer");
  assert.ok(answer.length > 0, "the reply has text");
  // The page samples at the server's default temperature (1): the reply may end before the
  // 24-token cap, never after it.
  const n = Number((await page.textContent(".figures")).match(/^(\d+) tokens/)[1]);
  assert.ok(n >= 1 && n <= 24, `reply of ${n} tokens`);
  // A second turn sends the whole conversation.
  await page.fill("#input", "And then?");
  await page.press("#input", "Enter");
  await page.waitForFunction(() => document.querySelectorAll(".figures").length === 2 &&
                                   /tokens/.test(document.querySelectorAll(".figures")[1].textContent), null, { timeout: 30000 });
  assert.equal(await page.locator(".msg.error").count(), 0);
});
