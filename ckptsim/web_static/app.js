// ckptsim's web page: reads Flink's REST API (and /ckptsim/jobs/:id/timeline) of this server.
"use strict";

const TERMINAL = new Set(["FINISHED", "CANCELED", "FAILED"]);
const state = { jobId: null, timer: null, lastTimeline: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

async function get(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

function bytes(n) {
  if (n === undefined || n === null) return "-";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0; let v = Number(n);
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

function ms(n) {
  if (n === undefined || n === null || n < 0) return "-";
  return n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n} ms`;
}

function time(epoch) {
  if (!epoch || epoch < 0) return "-";
  return new Date(epoch).toISOString().replace("T", " ").replace("Z", "");
}

function status(s) { return el("span", { class: `status s-${s}` }, s); }

function table(headers, rows, numeric = new Set()) {
  const head = el("tr", {}, ...headers.map((h, i) => el("th", numeric.has(i) ? { class: "num" } : {}, h)));
  const body = rows.map((r) => el("tr", {}, ...r.map((c, i) => el("td", numeric.has(i) ? { class: "num" } : {}, c))));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
}

function fill(id, ...nodes) {
  const target = document.getElementById(id);
  target.replaceChildren(...nodes);
}

// --- job list ---------------------------------------------------------------------------------

async function loadJobs() {
  const overview = await get("/jobs/overview");
  const select = document.getElementById("job-select");
  const jobs = overview.jobs.slice().sort((a, b) => b["start-time"] - a["start-time"]);
  const wanted = new URLSearchParams(location.hash.slice(1)).get("job");
  select.replaceChildren(...jobs.map((j) => el("option", { value: j.jid }, `${j.name} (${j.state}) ${j.jid.slice(0, 8)}`)));
  if (!jobs.length) {
    fill("job-summary", el("p", { class: "muted" }, "No job yet."));
    return null;
  }
  const chosen = jobs.find((j) => j.jid === (state.jobId || wanted)) || jobs[0];
  select.value = chosen.jid;
  return chosen.jid;
}

// --- job --------------------------------------------------------------------------------------

function backpressure(metrics) {
  const bp = metrics["accumulated-backpressured-time"] || 0;
  const total = bp + (metrics["accumulated-idle-time"] || 0) + (metrics["accumulated-busy-time"] || 0);
  return total > 0 ? bp / total : 0;
}

function level(ratio) { return ratio <= 0.1 ? "ok" : ratio <= 0.5 ? "low" : "high"; }

function renderJob(job) {
  const running = !TERMINAL.has(job.state);
  fill("job-summary",
    el("h2", {}, job.name, " ", status(job.state)),
    table(["Job ID", "Start", "End", "Duration", "Tasks"], [[
      job.jid, time(job["start-time"]), time(job["end-time"]), ms(job.duration),
      Object.entries(job["status-counts"]).filter(([, n]) => n).map(([s, n]) => `${n} ${s}`).join(", "),
    ]]));
  document.getElementById("refresh-state").textContent = running ? "refreshing every second" : "job ended";
  // the graph: columns by depth along the plan's inputs
  const inputs = {};
  for (const node of job.plan.nodes) inputs[node.id] = node.inputs || [];
  const depth = {};
  const depthOf = (id) => {
    if (depth[id] !== undefined) return depth[id];
    depth[id] = 0;
    depth[id] = Math.max(0, ...inputs[id].map((i) => depthOf(i.id) + 1));
    return depth[id];
  };
  const columns = [];
  for (const v of job.vertices) {
    const d = depthOf(v.id);
    (columns[d] = columns[d] || []).push(v);
  }
  const parts = [];
  columns.forEach((vertices, d) => {
    if (d > 0) {
      const strategies = new Set(vertices.flatMap((v) => inputs[v.id].map((i) => i.ship_strategy)));
      parts.push(el("div", { class: "edge" }, el("div", { class: "arrow" }, "→"), [...strategies].join(", ")));
    }
    parts.push(el("div", { class: "column" }, ...vertices.map((v) => {
      const ratio = backpressure(v.metrics);
      return el("div", { class: `vertex bp-${level(ratio)}`, "data-vertex": v.id },
        el("div", { class: "name" }, v.name),
        el("div", {}, `parallelism ${v.parallelism} · `, status(v.status)),
        el("div", {}, `records in ${v.metrics["read-records"].toLocaleString()} · out ${v.metrics["write-records"].toLocaleString()}`),
        el("div", {}, `back-pressured ${(100 * ratio).toFixed(0)}% (${level(ratio)})`));
    })));
  });
  fill("graph", ...parts);
  return running;
}

// --- checkpoints ------------------------------------------------------------------------------

function renderCheckpoints(cp, config) {
  const c = cp.counts || {};
  fill("cp-counts", ...[["Triggered", c.total], ["In progress", c.in_progress], ["Completed", c.completed],
    ["Failed", c.failed], ["Restored", c.restored]].map(([k, v]) => el("span", {}, `${k}:`, el("b", {}, v ?? 0))));
  const latest = cp.latest || {};
  const rows = [];
  if (latest.completed) rows.push(["Latest completed", latest.completed.id, time(latest.completed.latest_ack_timestamp), ms(latest.completed.end_to_end_duration), latest.completed.external_path || "-"]);
  if (latest.savepoint) rows.push(["Latest savepoint", latest.savepoint.id, time(latest.savepoint.latest_ack_timestamp), ms(latest.savepoint.end_to_end_duration), latest.savepoint.external_path || "-"]);
  if (latest.failed) rows.push(["Latest failed", latest.failed.id, time(latest.failed.failure_timestamp), ms(latest.failed.end_to_end_duration), latest.failed.failure_message || "-"]);
  if (latest.restored) rows.push(["Latest restored", latest.restored.id, time(latest.restored.restore_timestamp), "-", latest.restored.external_path || "-"]);
  fill("cp-latest", rows.length ? table(["", "ID", "Time", "End to end", "Path / cause"], rows) : el("p", { class: "muted" }, "No checkpoint yet."));
  const history = (cp.history || []).map((h) => [h.id, status(h.status), h.checkpoint_type, time(h.trigger_timestamp),
    time(h.latest_ack_timestamp), ms(h.end_to_end_duration), bytes(h.checkpointed_size), bytes(h.processed_data), bytes(h.persisted_data),
    `${h.num_acknowledged_subtasks}/${h.num_subtasks}`]);
  fill("cp-history", table(["ID", "Status", "Type", "Triggered", "Latest ack", "End to end", "Checkpointed size", "Processed", "Persisted", "Acks"], history, new Set([0, 5, 6, 7, 8])));
  const s = cp.summary || {};
  const line = (name, key, fmt) => {
    const v = s[key] || {};
    return [name, fmt(v.min), fmt(v.avg), fmt(v.max), ...["p50", "p90", "p99"].map((p) => (typeof v[p] === "number" ? fmt(Math.round(v[p])) : v[p] ?? "-"))];
  };
  fill("cp-summary", table(["", "Min", "Average", "Max", "p50", "p90", "p99"], [
    line("End to end duration", "end_to_end_duration", ms),
    line("Checkpointed data size", "checkpointed_size", bytes),
    line("Processed during alignment", "processed_data", bytes),
    line("Persisted in-flight data", "persisted_data", bytes),
  ], new Set([1, 2, 3, 4, 5, 6])));
  if (config) {
    fill("cp-config", table(["Setting", "Value"], [
      ["Mode", config.mode], ["Interval", ms(config.interval)], ["Timeout", ms(config.timeout)],
      ["Minimum pause", ms(config.min_pause)], ["Maximum concurrent", config.max_concurrent],
      ["Unaligned", config.unaligned_checkpoints], ["Aligned checkpoint timeout", ms(config.aligned_checkpoint_timeout)],
      ["Tolerable failed checkpoints", config.tolerable_failed_checkpoints],
      ["Externalized", config.externalization.enabled ? `yes (delete on cancellation: ${config.externalization.delete_on_cancellation})` : "no"],
      ["Checkpoints after tasks finish", config.checkpoints_after_tasks_finish],
      ["State backend", config.state_backend], ["Checkpoint storage", config.checkpoint_storage],
    ]));
  }
}

function renderExceptions(ex) {
  const entries = (ex.exceptionHistory || {}).entries || [];
  fill("exceptions", entries.length
    ? el("div", {}, ...entries.map((e) => el("div", {}, el("b", {}, `${time(e.timestamp)} ${e.exceptionName}`), e.taskName ? ` in ${e.taskName}` : "", el("pre", { class: "trace" }, e.stacktrace))))
    : el("p", { class: "muted" }, "No exception."));
}

// --- the timeline -----------------------------------------------------------------------------

function renderTimeline(answer) {
  // the figure is drawn on the server's side (ckptsim/_timeline_plot.py), plotly.js renders it
  const target = document.getElementById("timeline");
  const t = answer.timeline;
  Plotly.react(target, answer.figure.data, answer.figure.layout, { displaylogo: false, responsive: true });
  target.dataset.bars = String(t.bars.filter((b) => b.phase === "end to end").length);
  target.dataset.checkpoints = String(t.checkpoints.length);
}

// --- refresh ----------------------------------------------------------------------------------

async function refresh() {
  try {
    const jobId = await loadJobs();
    if (!jobId) return true;
    state.jobId = jobId;
    const base = `/jobs/${jobId}`;
    const [job, cp, config, ex, timeline] = await Promise.all([
      get(base), get(`${base}/checkpoints`), get(`${base}/checkpoints/config`).catch(() => null),
      get(`${base}/exceptions`).catch(() => ({})), get(`/ckptsim/jobs/${jobId}/timeline`),
    ]);
    const running = renderJob(job);
    renderCheckpoints(cp, config);
    renderExceptions(ex);
    renderTimeline(timeline);
    document.body.dataset.jobState = job.state;
    document.body.dataset.rendered = String(Date.now());
    return running;
  } catch (error) {
    document.getElementById("refresh-state").textContent = `refresh failed: ${error.message}`;
    return true;
  }
}

async function loop() {
  const running = await refresh();
  if (running) state.timer = setTimeout(loop, 1000);
}

document.getElementById("job-select").addEventListener("change", (event) => {
  state.jobId = event.target.value;
  location.hash = `job=${state.jobId}`;
  clearTimeout(state.timer);
  loop();
});
loop();
