// memos-feedback UI. Every piece of data is untrusted text: it is only ever
// put on the page with textContent (never innerHTML), so a repair that
// contains markup shows as markup and runs nothing.
"use strict";

const HEADERS = { "X-Memos-Feedback": "1" }; // the server refuses POSTs without it (CSRF)
const feedSeen = new Set();
let lastSeq = 0;

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = false;
  setTimeout(() => { box.hidden = true; }, 5000);
}

async function getJSON(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  if (!r.ok) throw new Error(`${path}: ${r.status}`);
  return r.json();
}

async function post(path) {
  const r = await fetch(path, { method: "POST", headers: HEADERS, credentials: "same-origin" });
  if (!r.ok) {
    let detail = String(r.status);
    try { detail = (await r.json()).error || detail; } catch (_) { /* not JSON */ }
    throw new Error(detail);
  }
  return r.json();
}

function button(label, cls, action) {
  const b = el("button", cls, label);
  b.type = "button";
  b.addEventListener("click", async () => {
    b.disabled = true;
    try { await action(); } catch (e) { showError(e.message); } finally { b.disabled = false; }
  });
  return b;
}

function when(ms) { return new Date(ms).toISOString().replace("T", " ").slice(0, 19); }

// -- repairs ------------------------------------------------------------------

async function loadRepairs() {
  const rows = await getJSON("/api/repairs?limit=200");
  const body = document.querySelector("#repairs tbody");
  body.replaceChildren();
  for (const r of rows) {
    const tr = el("tr");
    tr.dataset.id = r.id;
    tr.append(el("td", "id", r.id));
    const status = el("td");
    status.append(el("span", `badge ${r.status}`, r.status));
    tr.append(status);
    tr.append(el("td", "conf", Number(r.confidence).toFixed(2)));
    const text = el("td", "text");
    text.append(el("div", "pref", r.preference), el("div", "anti", r.anti_pattern));
    tr.append(text);
    const prov = el("td", "prov");
    prov.append(
      el("div", null, `${r.trigger} · ${r.severity} · ${when(r.ts)}`),
      el("div", null, `tool ${r.tool_id || "–"} · context ${r.context_hash}`),
      el("div", null, `session ${r.session_id || "–"}`),
      el("div", null, `traces +${r.high_value_trace_ids.length} / −${r.low_value_trace_ids.length}`),
    );
    tr.append(prov);
    const actions = el("td");
    const id = encodeURIComponent(r.id);
    actions.append(
      button("Validate", "validate", async () => { await post(`/api/repairs/${id}/validate`); await loadRepairs(); }),
      button("Reject", "reject", async () => { await post(`/api/repairs/${id}/reject`); await loadRepairs(); }),
    );
    tr.append(actions);
    body.append(tr);
  }
  document.getElementById("repairs-empty").hidden = rows.length > 0;
}

// -- queue ----------------------------------------------------------------------

async function loadQueue() {
  const q = await getJSON("/api/queue");
  const stats = document.getElementById("queue-stats");
  stats.replaceChildren();
  for (const [key, value] of Object.entries(q.stats)) {
    stats.append(el("dt", null, key), el("dd", null, value === null ? "–" : value));
  }
  const body = document.querySelector("#dead tbody");
  body.replaceChildren();
  for (const j of q.dead) {
    const tr = el("tr");
    tr.dataset.id = j.id;
    const id = encodeURIComponent(j.id);
    const actions = el("td");
    actions.append(
      button("Retry", "retry", async () => { await post(`/api/queue/${id}/retry`); await loadQueue(); }),
      button("Purge", "purge", async () => { await post(`/api/queue/${id}/purge`); await loadQueue(); }),
    );
    tr.append(el("td", "id", j.id), el("td", null, j.trigger), el("td", null, j.attempts),
      el("td", "text", j.last_error || ""), actions);
    body.append(tr);
  }
  document.getElementById("dead-empty").hidden = q.dead.length > 0;
}

// -- policies ---------------------------------------------------------------------

async function loadPolicies() {
  const list = await getJSON("/api/policies");
  const box = document.getElementById("policies");
  box.replaceChildren();
  for (const p of list) {
    const div = el("div", "policy");
    div.append(el("strong", null, p.title), el("span", "prov", `  ${p.id} · ${p.status}`));
    if (p.boundary) div.append(el("pre", null, p.boundary));
    if (p.repair) {
      const block = el("div", "block");
      block.append(el("div", "prov", "@repair"));
      for (const line of p.repair.preference) block.append(el("div", "pref", line));
      for (const line of p.repair.anti_pattern) block.append(el("div", "anti", line));
      div.append(block);
    }
    box.append(div);
  }
  if (!list.length) box.append(el("p", "empty", "No policies."));
}

// -- live feed --------------------------------------------------------------------

const pending = new Set();
function refreshSoon(loader) {
  if (pending.has(loader)) return;
  pending.add(loader);
  setTimeout(() => { pending.delete(loader); loader().catch((e) => showError(e.message)); }, 100);
}

function summary(e) {
  return Object.entries(e)
    .filter(([k]) => k !== "seq" && k !== "ts" && k !== "kind")
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(",") : v}`)
    .join(" ");
}

function onEvent(e) {
  if (feedSeen.has(e.seq)) return; // the server resumes exactly; this is a belt to its braces
  feedSeen.add(e.seq);
  lastSeq = Math.max(lastSeq, e.seq);
  const li = el("li");
  li.dataset.seq = e.seq;
  li.append(el("span", "seq", `#${e.seq}`), el("span", "kind", e.kind), el("span", null, summary(e)));
  const feed = document.getElementById("feed");
  feed.prepend(li);
  while (feed.children.length > 300) feed.lastChild.remove();
  if (e.kind.startsWith("repair.job")) refreshSoon(loadQueue);
  if (["repair.persisted", "repair.reviewed", "repair.attached"].includes(e.kind)) refreshSoon(loadRepairs);
  if (["repair.attached", "repair.reviewed"].includes(e.kind)) refreshSoon(loadPolicies);
  if (e.kind === "repair.persisted" || e.kind === "repair.skipped") refreshSoon(loadQueue);
}

function connect() {
  const status = document.getElementById("status");
  const source = new EventSource("/api/stream?backlog=100");
  source.onopen = () => { status.textContent = "live"; status.className = "status live"; };
  source.onerror = () => { status.textContent = "reconnecting…"; status.className = "status"; };
  source.onmessage = (m) => onEvent(JSON.parse(m.data));
}

document.addEventListener("DOMContentLoaded", () => {
  for (const load of [loadRepairs, loadQueue, loadPolicies]) load().catch((e) => showError(e.message));
  connect();
});
