// The a2aflow run page. Everything a run or the network supplied goes into the page as text
// (textContent, attribute values), never as markup.
"use strict";

const PAGE = 25;
const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 170, NODE_H = 46, GAP_X = 24, GAP_Y = 46, PAD = 16;
const $ = (id) => document.getElementById(id);

const ui = {
  offset: 0, listTimer: null,
  run: null,          // the run's latest view (from `run` messages)
  runId: null, source: null, lastSeq: null, ended: false,
  events: [], pending: [], frame: 0,
  shown: [], win: { first: 0, last: 0 }, rowH: 0, rowFrame: 0, // the event table's matching rows and its window
  stepEvents: {},     // step -> state from step_start / step_complete
  routes: {},         // "from\u0000to" -> true (taken) / false (not taken)
  facts: {},          // local task id -> {rounds, artifacts: Set, binding}
  children: new Map(),   // delegating local task id -> [child execution id]
  childTasks: new Map(), // child execution id -> Map(local task id -> {task, step, agent, status, error})
  bars: new Map(), newBars: [], // the timeline: local task id -> {start, end, state, step, depth, li, bar}
  selected: null, drawnFor: null, nodes: {}, edges: [],
  t0: performance.now(),
  // When things happened, in ms from the script's start (for the benchmark): the run's view
  // asked for and received, its graph drawn, the stream's first `run` message and its events.
  stats: { detailAskedMs: null, detailMs: null, drawnMs: null, streamRunMs: null, firstEventMs: null, lastEventMs: null },
};

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}
function mark() { return Math.round(performance.now() - ui.t0); }
function status(text) { $("status").textContent = text || ""; }
// What an action did, said on the stream's line; once the stream ended its "finished" stays (an
// action's answer may arrive after the stream's end).
function streamNote(text) { if (!ui.ended) $("stream-state").textContent = text; }

// Times are shown in the viewer's zone, with the UTC time in the title (on hover). `precise`:
// the time of day to the millisecond (an event's), else the date and time to the second.
const LOCAL_TIME = new Intl.DateTimeFormat(undefined,
  { hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3 });
function localText(ms, precise) { return precise ? LOCAL_TIME.format(ms) : new Date(ms).toLocaleString(); }
function utcText(ms, precise) {
  const iso = new Date(ms).toISOString();
  return iso.slice(0, 10) + " " + iso.slice(11, precise ? 23 : 19) + " UTC";
}
function timeCell(ms, precise) {
  const t = el("time");
  if (!ms) { t.textContent = "–"; return t; }
  t.dateTime = new Date(ms).toISOString();
  t.textContent = localText(ms, precise);
  t.title = utcText(ms, precise);
  return t;
}
// An event's time in ms since the epoch, or null (events written before a2aflow kept times).
function eventMs(ev) {
  if (typeof ev.time !== "string") return null;
  const ms = Date.parse(ev.time);
  return Number.isNaN(ms) ? null : ms;
}
function spanText(ms) { return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(ms < 60000 ? 3 : 0) + " s"; }
function duration(start, end) {
  if (!start) return "–";
  let s = Math.max(0, Math.round(((end || Date.now()) - start) / 1000));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60); s %= 60;
  return (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s";
}

// ---- API ----
async function api(path, options) {
  let r;
  try {
    r = await fetch(path, Object.assign({ credentials: "same-origin", cache: "no-store" }, options));
  } catch (e) {
    throw new Error("the ui server cannot be reached (" + e.message + "); is `a2aflow ui` still running?");
  }
  if (r.status === 401) throw new Error("not authorised: open the URL `a2aflow ui` printed (it carries the token)");
  let body = null;
  try { body = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok) {
    const err = body && body.error ? body.error : { code: "http." + r.status, message: r.statusText };
    const e = new Error(err.code + ": " + err.message);
    e.code = err.code; e.status = r.status;
    throw e;
  }
  return body;
}
function post(path, body) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body || {}) });
}

// ---- routing ----
// The run the address names, or null.
function hashRun() {
  const m = location.hash.match(/^#\/run\/(.+)$/);
  return m ? decodeURIComponent(m[1]) : null;
}
function route() {
  const id = hashRun();
  closeStream();
  clearInterval(ui.listTimer);
  if (id !== null) { showRun(id); } else { showList(); }
}

// ---- runs list ----
function showList() {
  $("run-view").hidden = true; $("list-view").hidden = false;
  document.title = "a2aflow runs";
  loadList();
  ui.listTimer = setInterval(loadList, 3000);
}
async function loadList() {
  const state = $("state-filter").value;
  const q = new URLSearchParams({ offset: ui.offset, limit: PAGE });
  if (state) q.set("state", state);
  let page;
  try { page = await api("/api/runs?" + q); } catch (e) { status(e.message); return; }
  status("");
  const body = $("runs").tBodies[0];
  const rows = document.createDocumentFragment();
  for (const run of page.runs) {
    const tr = el("tr");
    tr.dataset.run = run.executionId;
    const a = el("a", run.executionId);
    a.href = "#/run/" + encodeURIComponent(run.executionId);
    const c = el("td"); c.appendChild(a); tr.appendChild(c);
    const s = el("td"); s.appendChild(el("span", run.state, "state st-" + stateClass(run.state))); tr.appendChild(s);
    tr.appendChild(el("td", run.workflowName));
    const t = el("td"); t.appendChild(timeCell(run.startedAtMs)); tr.appendChild(t);
    const d = el("td", duration(run.startedAtMs, run.finishedAtMs));
    if (run.startedAtMs) d.title = utcText(run.startedAtMs) + " – " + (run.finishedAtMs ? utcText(run.finishedAtMs) : "now");
    tr.appendChild(d);
    tr.appendChild(el("td", run.openGates || 0));
    rows.appendChild(tr);
  }
  body.replaceChildren(rows);
  $("runs-empty").hidden = page.runs.length > 0;
  $("newer").disabled = ui.offset === 0;
  $("older").disabled = !page.more;
  $("page-label").textContent = page.runs.length ? `${ui.offset + 1}–${ui.offset + page.runs.length}` : "";
}
function stateClass(runState) {
  return { running: "running", waiting: "parked", succeeded: "succeeded", failed: "failed", cancelled: "cancelled" }[runState] || "pending";
}

// ---- one run ----
async function showRun(id) {
  $("list-view").hidden = true; $("run-view").hidden = false;
  Object.assign(ui, { runId: id, run: null, lastSeq: null, ended: false, events: [], pending: [],
    stepEvents: {}, routes: {}, facts: {}, selected: null, drawnFor: null, nodes: {}, edges: [],
    bars: new Map(), newBars: [], children: new Map(), childTasks: new Map(),
    tFirst: null, tLast: null, seqAxis: false });
  $("run-title").textContent = "Run " + id;
  document.title = "a2aflow run " + id;
  $("events").tBodies[0].replaceChildren();
  ui.shown = []; ui.win = { first: 0, last: 0 };
  $("events-above").style.height = "0px"; $("events-below").style.height = "0px";
  $("graph").replaceChildren();
  $("gates").replaceChildren();
  $("timeline").replaceChildren(); $("timeline-empty").hidden = false; $("timeline-axis").replaceChildren();
  $("run-meta").replaceChildren();
  $("resume").hidden = true;
  resetSelect($("step-filter")); resetSelect($("task-filter"));
  $("panel").replaceChildren(el("p", "Choose a step (click, or Tab and Enter) to see its tasks.", "hint"));
  try {
    // The stream replays every event, and the page folds them itself: no facts needed here.
    ui.stats.detailAskedMs = mark();
    const detail = await api("/api/runs/" + encodeURIComponent(id) + "?facts=false");
    if (ui.runId !== id) return;
    ui.stats.detailMs = mark();
    applyRun(detail);
  } catch (e) {
    status(e.status === 404 ? "There is no run " + id + " in this store. " + e.message : e.message);
    // A run about to start (`a2aflow run --ui` prints the page before it journals the run):
    // look again while the page still shows it.
    if (e.status === 404) setTimeout(() => { if (ui.runId === id && !ui.run && hashRun() === id) showRun(id); }, 1000);
    $("stream-state").textContent = "";
    $("cancel").disabled = true;
    return;
  }
  status("");
  openStream();
}
function resetSelect(s) { s.replaceChildren(el("option", "all")); s.options[0].value = ""; }

function openStream() {
  closeStream();
  const q = ui.lastSeq === null ? "" : "?after=" + ui.lastSeq;
  const source = new EventSource("/api/runs/" + encodeURIComponent(ui.runId) + "/events" + q);
  ui.source = source;
  $("stream-state").textContent = "following…";
  source.addEventListener("run", (m) => {
    if (ui.stats.streamRunMs === null) ui.stats.streamRunMs = mark();
    applyRun(JSON.parse(m.data));
  });
  source.addEventListener("problem", (m) => {
    const p = JSON.parse(m.data);
    status("The store could not be read: " + p.code + ": " + p.message + " (still trying)");
  });
  source.addEventListener("end", () => {
    ui.ended = true; closeStream();
    // Events wait for the next frame to be shown (flushEvents); the run's last ones arrive
    // just before `end`, so show them now: "every event shown" must be true when it is said.
    if (ui.frame) { cancelAnimationFrame(ui.frame); flushEvents(); }
    $("stream-state").textContent = "finished: every event shown";
  });
  source.onmessage = (m) => {
    const ev = JSON.parse(m.data);
    if (ui.lastSeq !== null && ev.seq <= ui.lastSeq) return;
    ui.lastSeq = ev.seq;
    const now = mark();
    if (ui.stats.firstEventMs === null) ui.stats.firstEventMs = now;
    ui.stats.lastEventMs = now;
    ui.pending.push(ev);
    if (!ui.frame) ui.frame = requestAnimationFrame(flushEvents);
  };
  source.onopen = () => { $("stream-state").textContent = "following…"; status(""); };
  source.onerror = () => {
    if (ui.ended || ui.source !== source) return;
    // The stream was cut: say so, and reconnect after the last event seen.
    $("stream-state").textContent = "stream cut; reconnecting…";
    status("The event stream was cut; reconnecting from event " + (ui.lastSeq === null ? "0" : ui.lastSeq + 1) + ".");
    source.close();
    setTimeout(() => { if (ui.source === source && !ui.ended) openStream(); }, 2000);
  };
}
function closeStream() {
  if (ui.source) { const s = ui.source; ui.source = null; s.close(); }
}

function applyRun(detail) {
  ui.run = detail;
  ui.index = null;
  if (ui.drawnFor !== detail.executionId) {
    drawGraph(detail.graph);
    ui.drawnFor = detail.executionId;
    ui.stats.drawnMs = mark();
    document.body.dataset.renderMs = String(ui.stats.drawnMs);
  }
  renderMeta(detail);
  renderGates(detail);
  paint();
  renderTimeline();
  if (ui.selected) renderPanel(ui.selected);
  $("cancel").disabled = detail.finished;
  // Offered while the run is unfinished, has no live driver and the page can resume it.
  if (!ui.resuming) $("resume").hidden = !detail.resumable;
}

function renderMeta(d) {
  const dl = $("run-meta");
  const rows = [
    ["State", d.state + (d.cancelRequested && !d.finished ? " (cancel requested)" : "")],
    ["Workflow", d.workflowName + (d.workflowId ? " (" + d.workflowId + ")" : "")],
    ["Started", timeCell(d.startedAtMs)],
    ["Deadline", timeCell(d.deadlineMs)],
  ];
  if (d.failure) rows.push(["Failure", d.failure.code + ": " + d.failure.message]);
  const frag = document.createDocumentFragment();
  for (const [k, v] of rows) {
    frag.appendChild(el("dt", k));
    const dd = el("dd");
    if (v instanceof Node) dd.appendChild(v); else dd.textContent = v;
    frag.appendChild(dd);
  }
  dl.replaceChildren(frag);
  dl.dataset.state = d.state;
}

function renderGates(d) {
  const box = $("gates");
  const open = d.openGates || [];
  const keep = new Set(open.map((g) => g.localTaskId));
  for (const div of [...box.children]) if (!keep.has(div.dataset.task)) div.remove();
  for (const g of open) {
    if ([...box.children].some((c) => c.dataset.task === g.localTaskId)) continue;
    const div = el("div", null, "gate");
    div.dataset.task = g.localTaskId;
    div.appendChild(el("p", `Step ${g.step}, task ${g.localTaskId} (${g.agent}) waits: ${g.gate}` + (g.text ? " — " + g.text : "")));
    const input = el("input");
    input.type = "text"; input.setAttribute("aria-label", "Answer for task " + g.localTaskId);
    input.placeholder = "answer text";
    const answer = el("button", "Answer"); answer.type = "button"; answer.className = "answer";
    const decline = el("button", "Decline"); decline.type = "button"; decline.className = "danger decline";
    answer.onclick = () => gateAction(g.localTaskId, "answer", { text: input.value }, div);
    decline.onclick = () => gateAction(g.localTaskId, "decline", { reason: input.value || "declined on the run page" }, div);
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") answer.click(); });
    div.append(input, answer, decline);
    box.appendChild(div);
  }
}
async function gateAction(task, action, body, div) {
  for (const b of div.querySelectorAll("button")) b.disabled = true;
  try {
    const r = await post(`/api/runs/${encodeURIComponent(ui.runId)}/gates/${encodeURIComponent(task)}/${action}`, body);
    status(""); streamNote(`${action} sent (${r.delivered})`);
    div.dataset.sent = action;
  } catch (e) {
    status(e.message);
    for (const b of div.querySelectorAll("button")) b.disabled = false;
  }
}
async function cancelRun() {
  if (!ui.runId) return;
  $("cancel").disabled = true;
  try {
    const r = await post(`/api/runs/${encodeURIComponent(ui.runId)}/cancel`);
    streamNote("cancel " + r.delivered);
  } catch (e) { status(e.message); $("cancel").disabled = !!(ui.run && ui.run.finished); }
}

async function resumeRun() {
  if (!ui.runId) return;
  const button = $("resume");
  button.disabled = true; ui.resuming = true;
  try {
    await post(`/api/runs/${encodeURIComponent(ui.runId)}/resume`);
    streamNote("resumed in the page's process");
    button.hidden = true;
  } catch (e) { status(e.message); }
  button.disabled = false; ui.resuming = false;
}

// ---- the graph ----
function drawGraph(g) {
  const root = $("graph");
  const width = PAD * 2 + Math.max(1, g.width) * (NODE_W + GAP_X) - GAP_X;
  const height = PAD * 2 + Math.max(1, g.layers) * (NODE_H + GAP_Y) - GAP_Y;
  root.setAttribute("width", width); root.setAttribute("height", height);
  root.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const pos = {};
  for (const n of g.nodes) pos[n.name] = { x: PAD + n.order * (NODE_W + GAP_X), y: PAD + n.layer * (NODE_H + GAP_Y) };
  const edgeLayer = svg("g"), nodeLayer = svg("g");
  ui.edges = [];
  for (const e of g.edges) {
    const a = pos[e.from], b = pos[e.to];
    if (!a || !b) continue;
    const x1 = a.x + NODE_W / 2, y1 = a.y + NODE_H, x2 = b.x + NODE_W / 2, y2 = b.y;
    const my = (y1 + y2) / 2;
    const path = svg("path", { d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`, class: "edge" });
    path.dataset.from = e.from; path.dataset.to = e.to;
    const title = svg("title"); title.textContent = e.from + " → " + e.to + (e.condition ? " if " + e.condition : "");
    path.appendChild(title);
    edgeLayer.appendChild(path);
    if (e.condition) {
      const t = svg("text", { x: (x1 + x2) / 2 + 4, y: my, class: "edge-label" });
      t.textContent = clip(e.condition, 28);
      edgeLayer.appendChild(t);
    }
    ui.edges.push({ e, path });
  }
  ui.nodes = {};
  for (const n of g.nodes) {
    const p = pos[n.name];
    const node = svg("g", { class: "node st-pending", transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button" });
    node.dataset.step = n.name;
    node.appendChild(svg("rect", { width: NODE_W, height: NODE_H }));
    const name = svg("text", { x: 8, y: 18 }); name.textContent = clip(n.name, 24);
    const sub = svg("text", { x: 8, y: 35, class: "sub" });
    const title = svg("title");
    node.append(title, name, sub);
    node.addEventListener("click", () => select(n.name));
    node.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(n.name); } });
    nodeLayer.appendChild(node);
    ui.nodes[n.name] = { node, sub, title, type: n.stepType };
  }
  root.replaceChildren(edgeLayer, nodeLayer);
}
function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }

const RANK = { pending: 0, running: 1, parked: 2, succeeded: 3, failed: 3, cancelled: 3, skipped: 3, unfinished: 3 };
const VIEW_STATE = { RUNNING: "running", COMPLETED: "succeeded", FAILED: "failed", CANCELED: "cancelled", UNFINISHED: "unfinished" };
// Per step, what the run's view says (built once per view, so painting stays linear).
function indexRun(run) {
  const steps = new Map(), parked = new Set((run.openGates || []).map((g) => g.step));
  for (const s of run.steps || []) steps.set(s.name, VIEW_STATE[s.status]);
  return { steps, parked, skipped: new Set(run.skippedSteps || []) };
}
function stepState(name) {
  const run = ui.run;
  if (!run) return "pending";
  const idx = ui.index || (ui.index = indexRun(run));
  if (idx.parked.has(name)) return "parked";
  let s = "pending";
  for (const c of [idx.steps.get(name), ui.stepEvents[name]]) if (c && RANK[c] > RANK[s]) s = c;
  if (idx.skipped.has(name)) s = "skipped";
  if (s === "pending" && run.finished) s = "skipped";
  return s;
}
function paint() {
  const states = {};
  for (const [name, n] of Object.entries(ui.nodes)) {
    const s = (states[name] = stepState(name));
    if (n.node.dataset.state === s) continue;
    n.node.dataset.state = s;
    n.node.setAttribute("class", "node st-" + (s === "unfinished" ? "cancelled" : s) + (ui.selected === name ? " selected" : ""));
    n.sub.textContent = n.type + " · " + s;
    n.title.textContent = name + " (" + n.type + "): " + s;
    n.node.setAttribute("aria-label", "step " + name + ": " + s);
  }
  for (const { e, path } of ui.edges) {
    const key = e.from + "\u0000" + e.to;
    const from = states[e.from], to = states[e.to];
    let mark = "";
    if (key in ui.routes) mark = ui.routes[key] ? "taken" : "not-taken";
    else if (!e.condition && from === "succeeded" && to !== "pending" && to !== "skipped") mark = "taken";
    else if (RANK[from] === 3 && to === "skipped") mark = "not-taken";
    if (path.dataset.mark !== mark) { path.dataset.mark = mark; path.setAttribute("class", "edge " + mark); }
  }
}

function select(name) {
  if (ui.selected && ui.nodes[ui.selected]) ui.nodes[ui.selected].node.classList.remove("selected");
  ui.selected = name;
  if (ui.nodes[name]) ui.nodes[name].node.classList.add("selected");
  renderPanel(name);
}
function renderPanel(name) {
  const panel = $("panel");
  const frag = document.createDocumentFragment();
  frag.appendChild(el("h3", "Step " + name + " — " + stepState(name)));
  const tasks = ((ui.run && ui.run.tasks) || []).filter((t) => t.step === name);
  if (!tasks.length) frag.appendChild(el("p", "No task of this step has started.", "hint"));
  for (const t of tasks) {
    const f = ui.facts[t.localTaskId] || { rounds: 0, artifacts: new Set() };
    const artifacts = [...f.artifacts];
    const rows = [
      ["Task", t.localTaskId], ["Agent", t.agent || "(local)"], ["Binding", f.binding || "–"],
      ["Skill", t.skill || "–"],
      ["Status", t.status + (t.cancelRequested ? " (cancel requested)" : "")],
      ["Attempt", t.attempt], ["contextId", t.contextId || "–"], ["Remote task", t.remoteTaskId || "–"],
      ["Remote state", t.remoteState || "–"], ["Negotiation rounds", f.rounds],
      ["Artifacts", artifacts.length ? artifacts.join(", ") : "–"],
    ];
    if (t.errorCode || t.error) rows.push(["Error", (t.errorCode || "") + (t.error ? ": " + t.error : "")]);
    const dl = el("dl");
    dl.dataset.task = t.localTaskId;
    for (const [k, v] of rows) { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", v)); }
    frag.appendChild(dl);
    appendChildRuns(frag, t.localTaskId, 1);
  }
  panel.replaceChildren(frag);
}
// The tasks of the child workflows a delegating task started (their events only tell them:
// child runs are not journaled), nested as deep as the delegation went.
function appendChildRuns(parent, taskId, depth) {
  for (const childId of ui.children.get(taskId) || []) {
    const box = el("section", null, "child-run");
    box.dataset.child = childId;
    box.appendChild(el("h4", "Child run " + childId));
    const tasks = ui.childTasks.get(childId);
    if (!tasks || !tasks.size) box.appendChild(el("p", "No task of the child has started.", "hint"));
    for (const c of (tasks || new Map()).values()) {
      const f = ui.facts[c.task] || { rounds: 0, artifacts: new Set() };
      const artifacts = [...f.artifacts];
      const rows = [
        ["Task", c.task], ["Step", c.step || "–"], ["Agent", c.agent || "–"], ["Binding", f.binding || "–"],
        ["Status", c.status], ["Negotiation rounds", f.rounds],
        ["Artifacts", artifacts.length ? artifacts.join(", ") : "–"],
      ];
      if (c.error) rows.push(["Error", c.error]);
      const dl = el("dl");
      dl.dataset.task = c.task;
      for (const [k, v] of rows) { dl.appendChild(el("dt", k)); dl.appendChild(el("dd", v)); }
      box.appendChild(dl);
      if (depth < 8) appendChildRuns(box, c.task, depth + 1);
    }
    parent.appendChild(box);
  }
}

// ---- events ----
function foldEvent(ev) {
  const d = ev.data || {};
  if (ev.depth === 0 && ev.step) {
    if (ev.kind === "step_start") ui.stepEvents[ev.step] = ui.stepEvents[ev.step] || "running";
    if (ev.kind === "step_complete") ui.stepEvents[ev.step] = { COMPLETED: "succeeded", FAILED: "failed", CANCELED: "cancelled" }[d.status] || "running";
  }
  if (ev.kind === "route_decision" && ev.depth === 0) ui.routes[d.step + "\u0000" + d.next] = !!d.allowed;
  if (ev.kind === "agent_request" && ev.taskId && typeof d.childExecutionId === "string") {
    const list = ui.children.get(ev.taskId) || [];
    if (!list.includes(d.childExecutionId)) list.push(d.childExecutionId);
    ui.children.set(ev.taskId, list);
  }
  if (ev.depth > 0 && ev.taskId) foldChildTask(ev, d);
  if (ev.taskId) {
    const f = ui.facts[ev.taskId] || (ui.facts[ev.taskId] = { rounds: 0, artifacts: new Set() });
    if (ev.kind === "negotiation_request") f.rounds += 1;
    if (ev.kind === "agent_request" && typeof d.binding === "string") f.binding = d.binding;
    if (ev.kind === "agent_artifact_update" && (d.artifactName || d.artifactId)) f.artifacts.add(d.artifactName || d.artifactId);
    if (ev.kind === "task_response" && d.result) {
      for (const o of d.result.outputs || []) if (o && (o.name || o.artifactId)) f.artifacts.add(o.name || o.artifactId);
    }
  }
}
// ---- the subtask timeline ----
// The axis is the run's clock, from its first event's time to its latest's: a bar runs from its
// task's first event to its end (task_response), or to the latest event while it runs. A run
// whose events carry no time (written before a2aflow kept times) is drawn on its event order.
const OUTCOME = { COMPLETED: "succeeded", FAILED: "failed", CANCELED: "cancelled" };
function foldTimeline(ev) {
  const ms = eventMs(ev);
  if (ms === null) ui.seqAxis = true;
  else {
    if (ui.tFirst === null || ms < ui.tFirst) ui.tFirst = ms;
    if (ui.tLast === null || ms > ui.tLast) ui.tLast = ms;
  }
  if (!ev.taskId) return;
  let b = ui.bars.get(ev.taskId);
  if (!b) {
    b = { task: ev.taskId, step: ev.step || "", depth: ev.depth, start: ev.seq, end: null, tStart: ms, tEnd: null, state: "running" };
    ui.bars.set(ev.taskId, b); ui.newBars.push(b);
  }
  if (b.end !== null) return;
  const d = ev.data || {};
  if (ev.kind === "task_gated") b.state = "parked";
  else if (ev.kind === "agent_request" && b.state === "parked") b.state = "running";
  else if (ev.kind === "task_response") { b.end = ev.seq; b.tEnd = ms; b.state = OUTCOME[d.result && d.result.status] || "failed"; }
}
function barState(b) {
  // A run that ended (or suspended) with the task unanswered: the task did not finish.
  if (b.end === null && ui.run && ui.run.finished) return "cancelled";
  return b.state;
}
function addBar(b) {
  const li = el("li");
  li.dataset.task = b.task;
  const label = el("span", (b.depth ? "child " + b.depth + " · " : "") + b.step + " · " + b.task, "tl-label");
  label.title = label.textContent;
  const track = el("div", null, "tl-track");
  const bar = el("button", null, "tl-bar");
  bar.type = "button";
  bar.addEventListener("click", () => { if (ui.nodes[b.step]) select(b.step); });
  track.appendChild(bar);
  li.append(label, track);
  Object.assign(b, { li, bar });
  return li;
}
function renderTimeline() {
  if (ui.newBars.length) {
    const frag = document.createDocumentFragment();
    for (const b of ui.newBars) frag.appendChild(addBar(b));
    ui.newBars = [];
    $("timeline").appendChild(frag);
    $("timeline-empty").hidden = true;
  }
  const timed = !ui.seqAxis && ui.tFirst !== null;
  // On the clock: ms from the first event; else event numbers (a bar at least one event wide).
  const origin = timed ? ui.tFirst : 0;
  const now = timed ? ui.tLast : (ui.lastSeq === null ? 0 : ui.lastSeq);
  const extra = timed ? 0 : 1;
  const span = Math.max(1, now - origin + extra);
  renderAxis(timed, span);
  for (const b of ui.bars.values()) {
    const start = timed ? b.tStart : b.start;
    const end = timed ? (b.end === null ? now : b.tEnd) : (b.end === null ? now : b.end);
    const state = barState(b);
    const left = (100 * (start - origin) / span).toFixed(3) + "%";
    const width = (100 * (end - start + extra) / span).toFixed(3) + "%";
    if (b.bar.style.left !== left) b.bar.style.left = left;
    if (b.bar.style.width !== width) b.bar.style.width = width;
    if (b.bar.dataset.state === state && b.bar.dataset.end === String(end)) continue;
    b.bar.dataset.state = state; b.bar.dataset.end = String(end);
    b.bar.className = "tl-bar st-" + state;
    const so = b.end === null ? " so far" : "";
    const text = "task " + b.task + " of step " + b.step + ": " + state + ", " + (timed
      ? localText(start, true) + "–" + localText(end, true) + so + " (" + spanText(end - start) + "; " +
        utcText(start, true).slice(11, 23) + "–" + utcText(end, true).slice(11) + ")"
      : "events " + b.start + "–" + end + so);
    b.bar.setAttribute("aria-label", text);
    b.bar.title = text;
  }
}
// The axis's ends under the timeline: the first and latest event's times (local; UTC on hover).
function renderAxis(timed, span) {
  const axis = $("timeline-axis");
  const key = timed ? ui.tFirst + "/" + ui.tLast : "seq/" + span;
  if (axis.dataset.key === key) return;
  axis.dataset.key = key;
  if (!ui.bars.size) { axis.replaceChildren(); return; }
  if (!timed) { axis.replaceChildren("On the run's event order (its events carry no time)."); return; }
  axis.replaceChildren(timeCell(ui.tFirst, true), " → ", timeCell(ui.tLast, true), " (" + spanText(ui.tLast - ui.tFirst) + ")");
}

function foldChildTask(ev, d) {
  const tasks = ui.childTasks.get(ev.executionId) || new Map();
  ui.childTasks.set(ev.executionId, tasks);
  const c = tasks.get(ev.taskId) || { task: ev.taskId, step: ev.step, agent: "", status: "RUNNING", error: "" };
  tasks.set(ev.taskId, c);
  if (ev.kind === "task_request") c.agent = d.agent || c.agent;
  if (ev.kind === "task_response" && d.result) {
    c.status = d.result.status;
    c.error = (d.result.errorCode || "") + (d.result.error ? ": " + d.result.error : "");
  }
}
function isFailure(ev) {
  const d = ev.data || {};
  return ev.kind === "error" || d.status === "FAILED" || (d.result && d.result.status === "FAILED") ||
    (ev.kind === "workflow_complete" && d.success === false) || ev.kind === "negotiation_failed";
}
function detailText(ev) {
  const d = ev.data || {};
  if (d.errorCode || d.error) return (d.errorCode || "") + " " + (d.error || "");
  if (d.result) return d.result.status + (d.result.errorCode ? " " + d.result.errorCode : "") + (d.result.error ? ": " + d.result.error : "");
  if (ev.kind === "route_decision") return d.next + (d.allowed ? " taken" : " not taken") + (d.condition ? " (if " + d.condition + ")" : "");
  if (d.state) return d.state + (d.text ? ": " + d.text : "");
  if (d.status) return d.status;
  if (d.gate) return d.gate + (d.text ? ": " + d.text : "");
  if (d.agent) return d.agent + (d.skill ? " / " + d.skill : "");
  if (typeof d.success === "boolean") return d.success ? "success" : "failure";
  return "";
}
function flushEvents() {
  ui.frame = 0;
  const t = performance.now();
  const batch = ui.pending; ui.pending = [];
  for (const ev of batch) {
    ui.events.push(ev);
    foldEvent(ev);
    foldTimeline(ev);
    addOption($("step-filter"), ev.step);
    addOption($("task-filter"), ev.taskId);
    if (matches(ev)) ui.shown.push(ui.events.length - 1);
  }
  const t1 = performance.now();
  renderRows(true);
  if (ui.follow) scrollSoon();
  $("event-count").textContent = ui.events.length + " events";
  const t2 = performance.now();
  paint();
  const t3 = performance.now();
  renderTimeline();
  const t4 = performance.now();
  if (ui.selected) renderPanel(ui.selected);
  const w = ui.stats.work || (ui.stats.work = { frames: 0, fold: 0, rows: 0, paint: 0, timeline: 0 });
  w.frames += 1; w.fold += t1 - t; w.rows += t2 - t1; w.paint += t3 - t2; w.timeline += t4 - t3;
}
// The table follows new events while its reader is at its bottom; it scrolls at most a few
// times a second (each scroll lays the table out).
let scrollTimer = 0;
function scrollSoon() {
  if (scrollTimer) return;
  scrollTimer = setTimeout(() => { scrollTimer = 0; const w = $("events-wrap"); w.scrollTop = w.scrollHeight; }, 250);
}
function eventRow(ev) {
  const tr = el("tr", null, isFailure(ev) ? "failed" : "");
  tr.dataset.seq = ev.seq; tr.dataset.kind = ev.kind;
  const time = el("td");
  time.appendChild(timeCell(eventMs(ev), true));
  tr.append(el("td", ev.seq), time, el("td", ev.kind + (ev.depth ? " (child " + ev.depth + ")" : "")),
    el("td", ev.step || ""), el("td", ev.taskId || ""));
  const detail = el("td", detailText(ev));
  detail.title = JSON.stringify(ev.data === undefined ? null : ev.data).slice(0, 2000);
  tr.appendChild(detail);
  return tr;
}
const known = { "step-filter": new Set(), "task-filter": new Set() };
function addOption(select, value) {
  if (!value) return;
  const seen = known[select.id];
  if (select.options.length === 1) seen.clear();
  if (seen.has(value)) return;
  seen.add(value);
  const o = el("option", value); o.value = value;
  select.appendChild(o);
}
function matches(ev) {
  const step = $("step-filter").value, task = $("task-filter").value;
  if ($("failed-only").checked && !isFailure(ev)) return false;
  if (step && ev.step !== step) return false;
  if (task && ev.taskId !== task) return false;
  return true;
}
function refilter() {
  ui.shown = [];
  for (let i = 0; i < ui.events.length; i++) if (matches(ui.events[i])) ui.shown.push(i);
  renderRows(true);
}
// The table holds only the rows near the view (a run may have 100,000 events); spacers above
// and below keep the scroll height of every matching row. Rows have one fixed height.
const ROW_SLACK = 60;
function renderRows(changed) {
  const wrap = $("events-wrap"), body = $("events").tBodies[0];
  const rowH = ui.rowH || 30;
  const total = ui.shown.length;
  const first = Math.max(0, Math.min(total, Math.floor(wrap.scrollTop / rowH)) - ROW_SLACK);
  const last = Math.min(total, first + Math.ceil(wrap.clientHeight / rowH) + 2 * ROW_SLACK);
  if (!changed && ui.win.first === first && ui.win.last === last) return;
  ui.win = { first, last };
  const frag = document.createDocumentFragment();
  for (let i = first; i < last; i++) frag.appendChild(eventRow(ui.events[ui.shown[i]]));
  body.replaceChildren(frag);
  if (!ui.rowH && body.rows.length) ui.rowH = body.rows[0].getBoundingClientRect().height || 30;
  $("events-above").style.height = Math.round(first * (ui.rowH || rowH)) + "px";
  $("events-below").style.height = Math.round((total - last) * (ui.rowH || rowH)) + "px";
}

// ---- start ----
$("state-filter").addEventListener("change", () => { ui.offset = 0; loadList(); });
$("newer").addEventListener("click", () => { ui.offset = Math.max(0, ui.offset - PAGE); loadList(); });
$("older").addEventListener("click", () => { ui.offset += PAGE; loadList(); });
$("cancel").addEventListener("click", cancelRun);
$("resume").addEventListener("click", resumeRun);
ui.follow = true;
$("events-wrap").addEventListener("scroll", () => {
  const w = $("events-wrap");
  ui.follow = w.scrollTop + w.clientHeight >= w.scrollHeight - 4;
  if (!ui.rowFrame) ui.rowFrame = requestAnimationFrame(() => { ui.rowFrame = 0; renderRows(false); });
}, { passive: true });
for (const id of ["failed-only", "step-filter", "task-filter"]) $(id).addEventListener("change", refilter);
window.addEventListener("hashchange", route);
route();
