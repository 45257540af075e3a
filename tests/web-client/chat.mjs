// Drives vkllm serve's chat page in Debian's chromium (headless) with puppeteer-core:
//   node chat.mjs URL KEYED_URL KEY SCREENSHOT
// URL: a server on stories260K without a chat template; KEYED_URL: one with --api-key KEY.
// Prints "ok:" / "FAIL:" lines; exit 0 when every check held.
import puppeteer from "puppeteer-core";

const [url, keyedUrl, key, shot] = process.argv.slice(2);
const failures = [];
const check = (c, what) => { console.log((c ? "ok: " : "FAIL: ") + what); if (!c) failures.push(what); return c; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});

async function open(at, errors) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 800 });
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(at, { waitUntil: "networkidle0" });
  return page;
}
const set = (page, id, v) => page.$eval("#" + id, (e, v) => {
  if (e.type === "checkbox") e.checked = v; else e.value = v;
  e.dispatchEvent(new Event("change"));
}, v);
const idle = (page, ms = 60000) => page.waitForFunction(() => !document.getElementById("send").disabled, { timeout: ms });
const lastReply = (page) => page.evaluate(() => {
  const all = document.querySelectorAll(".msg.assistant");
  const m = all[all.length - 1];
  if (!m) return null;
  const met = {};
  for (const s of m.querySelectorAll(".metrics span")) met[s.dataset.k] = s.textContent.slice(s.dataset.k.length + 1);
  return { text: m.querySelector(".body").textContent, metrics: met, n: all.length, error: (m.querySelector(".error") || {}).textContent };
});
async function send(page, text) {
  await page.click("#input");
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.getElementById("send").disabled || document.querySelectorAll(".msg.assistant").length, { timeout: 10000 });
}
const serverMetrics = (page) => page.evaluate(async () => {
  const t = await (await fetch("metrics")).text(), m = {};
  for (const l of t.split("\n")) if (l && l[0] !== "#") { const i = l.lastIndexOf(" "); m[l.slice(0, i)] = Number(l.slice(i + 1)); }
  return m;
});

try {
  const errors = [];
  const page = await open(url, errors);
  check(await page.$eval("#notice", (n) => !n.hidden && /no chat template/.test(n.textContent)),
    "the page says the model has no chat template (the server uses ChatML)");
  check(/stories260K/.test(await page.$eval("#server", (e) => e.textContent)), "the model and slots are shown");

  // 1. a streamed reply, watched as it grows
  await set(page, "temperature", "0");
  await set(page, "max_tokens", "200");
  await page.evaluate(() => {
    window.__lens = [];
    new MutationObserver(() => {
      const all = document.querySelectorAll(".msg.assistant .body");
      if (all.length) window.__lens.push(all[all.length - 1].textContent.length);
    }).observe(document.getElementById("log"), { childList: true, subtree: true, characterData: true });
  });
  // stories260K writes 200 tokens in half a second here: a renderer starved that long by the other
  // tests on the machine saw the whole reply in one read once (one length, ITL 0). The network is
  // paced for this reply (25 KB/s, about 250 bytes an event: 2 s), so the page has time to draw.
  await page.emulateNetworkConditions({ download: 25000, upload: 10000000, latency: 0 });
  await send(page, "Once upon a time");
  await idle(page);
  await page.emulateNetworkConditions(null);
  const lens = await page.evaluate(() => [...new Set(window.__lens)].filter((n) => n > 0));
  let r = await lastReply(page);
  check(r.text.length > 100, "a reply came: " + JSON.stringify(r.text.slice(0, 80)));
  check(lens.length >= 3, "it appeared piece by piece as it streamed (" + lens.length + " distinct lengths)");
  const num = (s) => parseFloat(s);
  check(num(r.metrics.TTFT) > 0 && num(r.metrics.ITL) > 0 && num(r.metrics.speed) > 0 && num(r.metrics.tokens) > 10 &&
    num(r.metrics.prompt) > 0 && r.metrics.cached !== "-", "the reply's metrics are filled in: " + JSON.stringify(r.metrics));
  await page.waitForFunction(() => /MiB/.test(document.getElementById("kvtext").textContent), { timeout: 5000 });
  await page.waitForFunction(() => parseFloat(document.getElementById("kvkept").style.width) > 0, { timeout: 5000 }).catch(() => {});
  check(await page.$eval("#kvkept", (e) => parseFloat(e.style.width) > 0), "the KV-cache bar shows the conversation kept for reuse");

  // 2. the next turn reuses the cached conversation
  await send(page, "And then?");
  await idle(page);
  r = await lastReply(page);
  check(num(r.metrics.cached) > 0, "the second turn reports cached prompt tokens: " + r.metrics.cached);

  // 3. stop mid-stream: the text stops growing and the server frees the slot
  const m0 = await serverMetrics(page);
  await set(page, "max_tokens", "1500");
  await set(page, "temperature", "1");
  await send(page, "Tell me a long story");
  // On a loaded machine the whole reply (a few seconds of tokens) can end before the click lands
  // (finish "length": seen once with 3 tests side by side). Then the reply is regenerated, which
  // replaces it (the conversation does not grow), and stopped again: 3 tries.
  let a = 0;
  for (let attempt = 1; ; attempt++) {
    await page.waitForFunction(() => {
      const all = document.querySelectorAll(".msg.assistant .body");
      return all.length && all[all.length - 1].textContent.length > 20;
    }, { timeout: 30000 });
    await page.click("#stop");
    await idle(page, 5000);
    a = (await lastReply(page)).text.length;
    await sleep(300);
    r = await lastReply(page);
    if (r.metrics.finish === "stopped" || attempt === 3) break;
    console.log("note: the reply ended (" + r.metrics.finish + ", " + a + " chars) before the stop click: regenerating");
    await page.click("#regen");
    await page.waitForFunction(() => document.getElementById("send").disabled, { timeout: 10000 }).catch(() => {});
  }
  check(r.text.length === a && r.metrics.finish === "stopped", "stop ends the reply: " + a + " chars, " + r.metrics.finish);
  let m1 = m0;
  for (let i = 0; i < 40 && !(m1['vkllm_requests_finished_total{reason="cancelled"}'] > m0['vkllm_requests_finished_total{reason="cancelled"}']); i++) {
    await sleep(50);
    m1 = await serverMetrics(page);
  }
  check(m1['vkllm_requests_finished_total{reason="cancelled"}'] === m0['vkllm_requests_finished_total{reason="cancelled"}'] + 1 &&
    m1.vkllm_slots_busy === 0, "the server cancelled the stopped request and freed its slot");

  // 4. token probabilities on hover
  await set(page, "temperature", "0");
  await set(page, "max_tokens", "12");
  await set(page, "logprobs", true);
  await send(page, "Lily");
  await idle(page);
  const toks = await page.$$(".msg.assistant:last-child .tok");
  check(toks.length >= 5, "with probabilities on, the reply is drawn token by token (" + toks.length + ")");
  if (toks.length) {
    await toks[1].hover();
    const tip = await page.$eval("#tip", (t) => (t.hidden ? "" : t.textContent));
    check(/%/.test(tip) && (tip.match(/%/g) || []).length >= 2, "hovering a token shows its top candidates: " + JSON.stringify(tip));
  }
  await set(page, "logprobs", false);

  // 5. regenerate (greedy: the same text again, no extra message). Compared as the page keeps the
  // reply, not as drawn: with probabilities on it is drawn token by token, without as Markdown,
  // where a newline becomes a paragraph or <br> and leaves textContent.
  const lastText = () => page.evaluate(() => {
    const c = window.vkllmChat.convs().find((c) => c.messages.length);
    return c ? c.messages[c.messages.length - 1].content : null;
  });
  const before = await lastReply(page), t0 = await lastText();
  await page.click("#regen");
  await idle(page);
  r = await lastReply(page);
  const t1 = await lastText();
  check(r.n === before.n && t0 && t1 === t0, "regenerate replaces the last reply (greedy: same text): " +
    JSON.stringify(t0) + " / " + JSON.stringify(t1));

  // 6. Markdown is drawn as nodes: nothing in model output becomes markup
  const md = await page.evaluate(() => {
    const box = document.createElement("div");
    box.append(window.vkllmChat.render('<img src=x onerror="window.__pwned=1"> **bold** `code` [l](javascript:alert(1)) [ok](https://example.com)\n```js\n<script>window.__pwned=2</script>\n```\n- one\n- two'));
    document.body.append(box);
    const out = { img: box.querySelectorAll("img,script").length, strong: box.querySelectorAll("strong").length,
      code: box.querySelectorAll("code").length, pre: box.querySelectorAll("pre").length, li: box.querySelectorAll("li").length,
      hrefs: [...box.querySelectorAll("a")].map((a) => a.href), text: box.textContent };
    box.remove();
    return out;
  });
  await sleep(100);
  check(md.img === 0 && md.strong === 1 && md.code === 2 && md.pre === 1 && md.li === 2 &&
    md.hrefs.length === 1 && md.hrefs[0] === "https://example.com/" && md.text.includes("<img src=x") &&
    (await page.evaluate(() => window.__pwned)) === undefined, "Markdown renders safely: " + JSON.stringify(md));

  // 7. conversations persist across a reload; a new conversation starts empty
  const nMsgs = await page.$$eval(".msg", (m) => m.length);
  await page.reload({ waitUntil: "networkidle0" });
  check((await page.$$eval(".msg", (m) => m.length)) === nMsgs && (await page.$$eval("#convs li", (l) => l.length)) === 1,
    "the conversation is still there after a reload (localStorage)");
  await page.click("#new");
  check((await page.$$eval(".msg", (m) => m.length)) === 0, "a new conversation starts empty");
  await set(page, "max_tokens", "30");
  await send(page, "The dog");
  await idle(page);
  check((await page.$$eval("#convs li", (l) => l.length)) === 2, "it is listed beside the first");
  // 9. a busy server (503) and a refused request: said plainly, nothing half-drawn left behind
  await page.setRequestInterception(true);
  const busy = (req) => req.url().endsWith("/v1/chat/completions")
    ? req.respond({ status: 503, contentType: "application/json",
                    body: JSON.stringify({ error: { message: "the server is busy", type: "server_error" } }) })
    : req.continue();
  page.on("request", busy);
  const before503 = await page.$$eval(".msg", (m) => m.length);
  await page.click("#input");
  await page.keyboard.type("Anyone there?");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => /busy/.test(document.getElementById("notice").textContent), { timeout: 10000 }).catch(() => {});
  await idle(page);
  check(await page.$eval("#notice", (n) => !n.hidden && /busy/.test(n.textContent)) &&
    (await page.$$eval(".msg", (m) => m.length)) === before503 + 1, "a 503 says the server is busy (the message stays, no empty reply)");
  page.off("request", busy);
  await page.setRequestInterception(false);
  errors.splice(0, errors.length, ...errors.filter((e) => !/503/.test(e))); /* the 503 itself is logged */
  await page.screenshot({ path: shot, fullPage: false });
  console.log("screenshot: " + shot);
  check(errors.length === 0, "no errors in the console: " + JSON.stringify(errors));

  // 8. a server with an API key: the page asks for it, then works
  const kerrors = [];
  const kp = await open(keyedUrl, kerrors);
  await set(kp, "max_tokens", "8");
  await kp.click("#input");
  await kp.keyboard.type("Once");
  await kp.keyboard.press("Enter");
  await kp.waitForFunction(() => /API key/.test(document.getElementById("notice").textContent), { timeout: 10000 }).catch(() => {});
  await idle(kp);
  check(await kp.$eval("#notice", (n) => !n.hidden && /API key/.test(n.textContent)), "a server with a key: the page asks for it");
  await set(kp, "apikey", key);
  await kp.click("#input");
  await kp.keyboard.type("Once");
  await kp.keyboard.press("Enter");
  await idle(kp);
  r = await lastReply(kp);
  check(r && r.text.length > 0 && !r.error, "with the key entered the reply comes");
  check(kerrors.every((e) => /401/.test(e)), "no console errors but the expected 401s: " + JSON.stringify(kerrors));
} catch (e) {
  failures.push(String(e && e.stack || e));
  console.log("FAIL: " + (e && e.stack || e));
} finally {
  await browser.close();
}
console.log(failures.length ? failures.length + " check(s) failed" : "all browser checks passed");
process.exit(failures.length ? 1 : 0);
