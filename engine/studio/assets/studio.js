// scorespec studio: the page over the studio's JSON API (engine/studio/server.py). Every text from
// the files, the items and the judge is inserted as text (textContent), never as markup.
"use strict";

const params = new URLSearchParams(location.search);
const token = params.get("token");
const $ = (id) => document.getElementById(id);
const state = { spec: null, prompt: null, data: null, run: null, runs: [], version: 0, queue: [], at: 0,
  labels: {}, items: {}, selected: null };

async function api(method, path, body) {
  const headers = {};
  if (token) headers.authorization = "Bearer " + token;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json();
  if (!response.ok) {
    const error = new Error(data.error || response.statusText);
    error.problems = data.problems;
    throw error;
  }
  return data;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function status(text) { $("status").textContent = text; }

function option(select, value, text) {
  const node = el("option", text === undefined ? value : text);
  node.value = value;
  select.appendChild(node);
}

// --- specs, files, problems ---------------------------------------------------------------------

async function loadSpecs() {
  const found = await api("GET", "/api/specs");
  const select = $("spec");
  select.replaceChildren();
  for (const spec of found.specs.filter((s) => !s.abstract)) {
    option(select, spec.id, spec.origin === "local" ? spec.id : spec.id + " (built-in)");
  }
  $("data").replaceChildren();
  for (const path of found.datasets) option($("data"), path);
  if (params.get("data")) $("data").value = params.get("data");
  state.data = $("data").value || null;
  if (params.get("spec")) select.value = params.get("spec");
  await openSpec(select.value);
  await loadItems();
}

async function openSpec(id) {
  if (!id) return;
  const spec = await api("GET", "/api/spec?id=" + encodeURIComponent(id));
  state.spec = spec;
  $("spec-path").textContent = spec.path;
  await openFile("spec-text", spec.path);
  showProblems(spec.problems);
  const select = $("prompt-file");
  select.replaceChildren();
  for (const path of spec.prompts) option(select, path);
  const own = spec.prompts.find((p) => !p.startsWith("builtin:"));
  if (own) select.value = own;
  await openFile("prompt-text", select.value || null);
}

async function openFile(area, path) {
  const box = $(area);
  box.dataset.path = path || "";
  box.classList.remove("dirty");
  if (!path) { box.value = ""; box.readOnly = true; return; }
  const file = await api("GET", "/api/files?path=" + encodeURIComponent(path));
  // another file was asked for, or the user typed meanwhile: keep what is there
  if (box.dataset.path !== path || box.classList.contains("dirty")) return;
  box.value = file.text;
  box.readOnly = file.readonly;
  box.title = file.readonly ? "a built-in file: write a spec that extends it to change it" : "";
}

async function save(area) {
  const box = $(area);
  if (!box.dataset.path || box.readOnly) return;
  try {
    const saved = await api("PUT", "/api/files", { path: box.dataset.path, text: box.value });
    box.classList.remove("dirty");
    $("notice").hidden = true;
    showProblems(saved.problems);
    status("saved " + saved.path);
    if (area === "spec-text" && !saved.problems.length) {
      const spec = await api("GET", "/api/spec?id=" + encodeURIComponent(state.spec.id));
      state.spec.prompts = spec.prompts;
    }
  } catch (error) { status(error.message); }
}

function showProblems(problems) {
  const list = $("problems");
  list.replaceChildren();
  if (!problems.length) { list.appendChild(el("li", "no problems", "ok")); return; }
  for (const problem of problems) {
    const item = el("li", problem.text, problem.severity === "warning" ? "warning" : "");
    item.addEventListener("click", () => goTo(problem));
    list.appendChild(item);
  }
}

function goTo(problem) {
  const area = problem.file === $("spec-text").dataset.path ? "spec-text"
    : problem.file === $("prompt-text").dataset.path ? "prompt-text" : null;
  if (!area) return;
  const box = $(area);
  const lines = box.value.split("\n");
  let at = 0;
  for (let i = 0; i < problem.line - 1 && i < lines.length; i++) at += lines[i].length + 1;
  at += Math.max(0, problem.col - 1);
  box.focus();
  box.setSelectionRange(at, at);
  box.scrollTop = Math.max(0, (problem.line - 4) * (parseFloat(getComputedStyle(box).lineHeight) || 18));
}

// --- items, runs, results -------------------------------------------------------------------------

async function loadItems() {
  if (!state.data) return;
  const found = await api("GET", "/api/items?data=" + encodeURIComponent(state.data));
  state.items = {};
  for (const item of found.items) state.items[String(item.id)] = item;
  state.labels = found.labels;
}

async function run() {
  const body = { scorer: state.spec.path.startsWith("builtin:") ? state.spec.id : state.spec.path, data: state.data,
    sample: $("sample").value };
  const limit = parseInt($("limit").value, 10);
  if (limit > 0) body.limit = limit;
  $("run").disabled = true;
  $("cancel").disabled = false;
  const timer = setInterval(showProgress, 300);
  try {
    const done = await api("POST", "/api/run", body);
    showRun(done);
    await loadRuns();
  } catch (error) {
    status("run failed: " + error.message);
    if (error.problems) showProblems(error.problems);
  } finally {
    clearInterval(timer);
    $("run").disabled = false;
    $("cancel").disabled = true;
  }
}

async function showProgress() {
  const now = await api("GET", "/api/progress");
  $("progress").max = Math.max(1, now.total);
  $("progress").value = now.done;
  if (now.running) status(`running: ${now.done} of ${now.total}`);
}

function showRun(done) {
  state.run = done;
  $("progress").max = Math.max(1, done.results.length);
  $("progress").value = done.results.length;
  $("run-summary").textContent = `${done.runId}: ${done.results.length} item(s) · ${done.judgeCalls} judge call(s)` +
    ` · ${done.cachedCalls} cached` + (done.cancelled ? " · cancelled" : "");
  status(done.cancelled ? "run cancelled" : "run finished");
  const body = $("results").tBodies[0];
  body.replaceChildren();
  for (const line of done.results) {
    const row = el("tr");
    row.appendChild(el("td", line.id));
    row.appendChild(el("td", line.error ? "failed" : line.score === null ? "not scorable" : line.score,
      line.error ? "error" : ""));
    row.appendChild(el("td", line.error ? line.error.message : line.reason || line.notScorable || ""));
    row.addEventListener("click", () => showDetail(line, row));
    body.appendChild(row);
  }
}

function showDetail(line, row) {
  for (const other of $("results").tBodies[0].rows) other.classList.remove("selected");
  row.classList.add("selected");
  state.selected = line.id;
  $("detail").hidden = false;
  $("detail-id").textContent = String(line.id);
  const body = $("detail-body");
  body.replaceChildren();
  body.appendChild(el("h3", "item"));
  body.appendChild(el("pre", JSON.stringify(line.item || state.items[String(line.id)] || {}, null, 2)));
  for (const [stage, record] of Object.entries(line.stages || {})) {
    body.appendChild(el("h3", `stage ${stage} (${record.kind})`));
    body.appendChild(el("pre", JSON.stringify(record.result, null, 2)));
    if (record.prompt) { body.appendChild(el("h4", "prompt sent")); body.appendChild(el("pre", record.prompt)); }
  }
}

async function render() {
  if (state.selected === null) return;
  try {
    const shown = await api("POST", "/api/render", { scorer: state.spec.id, data: state.data, id: state.selected });
    const body = $("detail-body");
    body.replaceChildren(el("h3", "rendered now"));
    for (const prompt of shown.prompts) {
      body.appendChild(el("h4", prompt.stage));
      body.appendChild(el("pre", prompt.text));
    }
  } catch (error) { status(error.message); }
}

// --- compare ------------------------------------------------------------------------------------

async function loadRuns() {
  state.runs = (await api("GET", "/api/runs")).runs;
  for (const id of ["run-a", "run-b"]) {
    const select = $(id);
    select.replaceChildren();
    for (const r of state.runs) option(select, r.runId, `${r.runId} · ${r.scorer} · ${r.items} item(s)`);
  }
  const n = state.runs.length;
  if (n >= 2) { $("run-a").value = state.runs[n - 2].runId; $("run-b").value = state.runs[n - 1].runId; }
}

async function compare() {
  try {
    const [a, b] = [$("run-a").value, $("run-b").value].map(encodeURIComponent);
    const found = await api("GET", `/api/runs/${a}/compare/${b}`);
    const pair = found.comparison.comparisons[0] || {};
    const paired = pair.paired || {};
    const changed = found.items.filter((row) => row.changed).length;
    const mean = typeof paired.meanDifference === "number" ? paired.meanDifference.toFixed(3) : "n/a";
    $("compare-summary").textContent = `mean difference ${mean}` +
      (paired.ci95 ? ` (CI ${paired.ci95[0].toFixed(3)} to ${paired.ci95[1].toFixed(3)})` : "") +
      ` · wins ${paired.wins ?? 0}, ties ${paired.ties ?? 0}, losses ${paired.losses ?? 0}` +
      (typeof paired.pValue === "number" ? ` · p ${paired.pValue.toFixed(3)}` : "") +
      (paired.verdict ? ` · ${paired.verdict}` : "") +
      ` · ${changed} verdict(s) changed`;
    const body = $("compare-items").tBodies[0];
    body.replaceChildren();
    for (const row of found.items) {
      const tr = el("tr", undefined, row.changed ? "changed" : "");
      tr.appendChild(el("td", row.id));
      for (const side of [row.a, row.b]) tr.appendChild(el("td", side ? (side.score ?? side.status) : "—"));
      tr.appendChild(el("td", row.changed ? "verdict changed" : ""));
      body.appendChild(tr);
    }
    const diff = $("diff");
    diff.replaceChildren();
    if (!found.diff.length) diff.textContent = "the spec and prompts are the same in both runs";
    for (const file of found.diff) {
      for (const line of file.diff.split("\n")) {
        const added = line.startsWith("+") && !line.startsWith("+++");
        const removed = line.startsWith("-") && !line.startsWith("---");
        const cls = added ? "add" : removed ? "del" : "";
        diff.appendChild(el("span", line + "\n", cls));
      }
    }
  } catch (error) { status(error.message); }
}

// --- labels -------------------------------------------------------------------------------------

async function loadQueue() {
  if (!state.run) {
    status("run a sample first: the queue is its unlabelled items, nearest the cut-off first");
    return;
  }
  const query = `data=${encodeURIComponent(state.data)}&run=${encodeURIComponent(state.run.runId)}`;
  const found = await api("GET", "/api/queue?" + query);
  state.queue = found.ids;
  state.at = 0;
  showLabelItem();
  $("label-item").focus();
}

function showLabelItem() {
  const box = $("label-item");
  box.replaceChildren();
  const id = state.queue[state.at];
  $("label-status").textContent = state.queue.length
    ? `item ${state.at + 1} of ${state.queue.length} in the queue` : "nothing to label";
  if (id === undefined) return;
  const item = state.items[id] || {};
  const line = (state.run && state.run.results.find((r) => String(r.id) === id)) || {};
  box.appendChild(el("h3", id));
  if (state.labels[id] !== undefined) box.appendChild(el("p", "label: " + state.labels[id], "label-value"));
  box.appendChild(el("p", `judge: ${line.score ?? "—"} — ${line.reason || ""}`));
  for (const key of ["input", "output", "ground_truth", "context"]) {
    if (item[key] === undefined || item[key] === null) continue;
    box.appendChild(el("h4", key));
    box.appendChild(el("pre", typeof item[key] === "string" ? item[key] : JSON.stringify(item[key], null, 2)));
  }
}

async function label(value) {
  const id = state.queue[state.at];
  if (id === undefined) return;
  const item = state.items[id];
  await api("POST", "/api/labels", { data: state.data, id: item ? item.id : id, label: value });
  if (value === null) delete state.labels[id]; else state.labels[id] = value;
  status(value === null ? `label of ${id} taken back` : `${id}: ${value}`);
  if (value !== null && state.at < state.queue.length - 1) state.at += 1;
  showLabelItem();
}

async function showAgreement() {
  const positive = $("positive").value;
  const query = "data=" + encodeURIComponent(state.data) + (positive ? "&positive=" + encodeURIComponent(positive) : "");
  try {
    const found = await api("GET", "/api/agreement?" + query);
    const body = $("agreement-table").tBodies[0];
    body.replaceChildren();
    for (const run of found.runs) {
      const row = el("tr");
      for (const cell of [run.runId, run.scorer, run.n]) row.appendChild(el("td", cell));
      row.appendChild(el("td", agreementText(run.figures)));
      body.appendChild(row);
    }
  } catch (error) { status(error.message); }
}

function agreementText(figures) {
  if (!figures) return "no labelled item scored";
  const shown = (estimate) => (estimate && typeof estimate.value === "number" ? estimate.value.toFixed(2) : "n/a");
  if (figures.confusion !== undefined) {
    const balanced = typeof figures.balancedAccuracy === "number" ? figures.balancedAccuracy.toFixed(2) : "n/a";
    const c = figures.confusion || {};
    return `balanced accuracy ${balanced} · Cohen's kappa ${shown(figures.cohenKappa)} · ` +
      `tp ${c.tp ?? 0} fp ${c.fp ?? 0} tn ${c.tn ?? 0} fn ${c.fn ?? 0}`;
  }
  return `Spearman ${typeof figures.spearman === "number" ? figures.spearman.toFixed(2) : "n/a"}`;
}

function onKey(event) {
  if (event.key === "s" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    save(document.activeElement === $("prompt-text") ? "prompt-text" : "spec-text");
    return;
  }
  const target = event.target;
  if (target.tagName === "TEXTAREA" || target.tagName === "INPUT" || target.tagName === "SELECT") return;
  if (event.ctrlKey || event.metaKey || event.altKey || !state.queue.length) return;
  const key = event.key;
  if (key === "y") label($("positive").value);
  else if (key === "n") label($("negative").value);
  else if (/^[1-5]$/.test(key)) label(Number(key));
  else if (key === "u") label(null);
  else if (key === "j") { state.at = Math.min(state.at + 1, state.queue.length - 1); showLabelItem(); }
  else if (key === "k") { state.at = Math.max(state.at - 1, 0); showLabelItem(); }
  else return;
  event.preventDefault();
}

// --- files changed on disk ------------------------------------------------------------------------

async function poll() {
  try {
    const found = await api("GET", "/api/changes?since=" + state.version);
    state.version = found.version;
    for (const change of found.changes) {
      for (const area of ["spec-text", "prompt-text"]) {
        const box = $(area);
        if (box.dataset.path !== change.path) continue;
        if (box.classList.contains("dirty")) {
          $("notice").textContent = `${change.path} changed on disk; saving here overwrites that change`;
          $("notice").hidden = false;
        } else {
          await openFile(area, change.path);
          status(`${change.path} changed on disk: reloaded`);
        }
      }
    }
  } catch (error) { /* the server is restarting: try again at the next poll */ }
}

function start() {
  $("spec").addEventListener("change", () => openSpec($("spec").value));
  $("data").addEventListener("change", () => { state.data = $("data").value; loadItems(); });
  $("prompt-file").addEventListener("change", () => openFile("prompt-text", $("prompt-file").value));
  for (const area of ["spec-text", "prompt-text"]) {
    $(area).addEventListener("input", () => $(area).classList.add("dirty"));
  }
  $("save-spec").addEventListener("click", () => save("spec-text"));
  $("save-prompt").addEventListener("click", () => save("prompt-text"));
  $("run").addEventListener("click", run);
  $("cancel").addEventListener("click", () => api("POST", "/api/cancel", {}));
  $("render").addEventListener("click", render);
  $("compare").addEventListener("click", compare);
  $("queue").addEventListener("click", loadQueue);
  $("agreement").addEventListener("click", showAgreement);
  document.addEventListener("keydown", onKey);
  api("GET", "/api/changes").then((found) => { state.version = found.version; });
  setInterval(poll, 1500);
  loadSpecs().then(loadRuns).then(() => status("ready")).catch((error) => status(error.message));
}

document.addEventListener("DOMContentLoaded", start);
