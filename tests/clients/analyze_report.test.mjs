// The `triattn analyze` report in headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core): index.html opens from disk without console errors, failed requests or
// page errors, and shows every figure as a non-empty inline SVG; each figure's .svg file is
// beside it. The report and a full-page screenshot stay in analyze_report_out/ under the
// directory the test runs in (CTest: the build directory).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const binary = process.env.TRIATTN_BINARY;
const shared = process.env.TRIATTN_SHARED_DIR;
if (!binary || !shared) throw new Error("TRIATTN_BINARY and TRIATTN_SHARED_DIR must be set (CTest sets them)");
const here = path.dirname(fileURLToPath(import.meta.url));
const model = `${shared}/models/tinystories-656k`;
const text = path.join(here, "..", "data", "calibration_stories.txt");
for (const p of [model, text]) if (!fs.existsSync(p)) throw new Error(`missing test data: ${p}`);
const outDir = path.resolve("analyze_report_out");
const reportDir = path.join(outDir, "report");

let browser;

before(async () => {
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  const r = spawnSync(binary, ["analyze", "-m", model, "--input", text, "--max-tokens", "300", "-t", "2", "-o", reportDir],
                      { encoding: "utf8", timeout: 120000 });
  assert.equal(r.status, 0, `triattn analyze failed: ${r.stderr}`);
  // Flags: root needs --no-sandbox; the rest keep Chromium off the (closed) network.
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
});

test("the report opens without errors and shows every figure", async () => {
  const analysis = JSON.parse(fs.readFileSync(path.join(reportDir, "analysis.json"), "utf8"));
  assert.ok(analysis.figures.length >= 5, `${analysis.figures.length} figures listed in analysis.json`);

  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
  await page.goto(pathToFileURL(path.join(reportDir, "index.html")).href, { waitUntil: "load" });

  assert.match(await page.title(), /^triattn analyze: /);
  assert.ok(await page.locator("#findings li").count() >= 3, "the report says in words what the figures mean");
  assert.ok(await page.locator("#definitions dt").count() >= 8, "the definitions are stated");

  // Every figure listed in analysis.json is on the page, drawn, and has its file beside the page.
  const figures = await page.$$eval("figure.figure", (els) => els.map((el) => {
    const svg = el.querySelector("svg");
    const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
    return { file: el.dataset.file, width: box.width, height: box.height,
             shapes: svg ? svg.querySelectorAll("rect, line, polyline, circle").length : 0 };
  }));
  assert.deepEqual(figures.map((f) => f.file), analysis.figures.map((f) => f.file));
  for (const f of figures) {
    assert.ok(f.width > 100 && f.height > 100, `${f.file} is drawn at ${f.width}x${f.height}`);
    assert.ok(f.shapes > 10, `${f.file} has ${f.shapes} shapes`);
    const onDisk = path.join(reportDir, f.file);
    assert.ok(fs.existsSync(onDisk) && fs.statSync(onDisk).size > 0, `${f.file} exists beside index.html`);
    assert.match(fs.readFileSync(onDisk, "utf8"), /<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  }
  // The kinds the report must have: heat map, r̄ histogram, curves and scatters of the chosen
  // heads.
  const files = figures.map((f) => f.file).join(" ");
  for (const kind of ["r_heatmap_query", "rbar_histogram", "curve_L", "scatter_L"]) assert.ok(files.includes(kind), `a ${kind} figure`);

  const shot = path.join(outDir, "report.png");
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(fs.statSync(shot).size > 10000, "screenshot written");
  assert.deepEqual(problems, []);
});
