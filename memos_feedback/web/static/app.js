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

// One label per line, in one style ("Prefer: ", "Avoid: "). A line that
// already opens with a label of its own ("Avoid:", "Never:", "Always:" ...,
// the words the writers use) keeps that word, in the same style, instead of
// getting a second one: "Avoid: Never: ..." read as a stutter. An empty side
// gets no line at all, rather than a bare "Prefer:".
const OWN_LABEL = /^\s*(prefer|avoid|never|always|instead|use the corrected value|use|do not|don't|do|note)\s*[:：]\s*/i;

function styled(word) { return `${word.charAt(0).toUpperCase()}${word.slice(1).toLowerCase()}: `; }

function labelled(cls, word, text) {
  const line = String(text ?? "");
  // "Avoid: Never: x" (a writer that labelled an already labelled line): the
  // innermost word is the one that says what to do, so it is the one kept.
  let body = line;
  let label = word;
  for (let own = OWN_LABEL.exec(body); own; own = OWN_LABEL.exec(body)) {
    label = own[1].replace(/\s+/g, " ");
    body = body.slice(own[0].length);
  }
  if (!body.trim()) return null; // a label and nothing to follow
  const div = el("div", cls);
  div.append(el("span", "label", styled(label)), el("span", "line", body));
  return div;
}

function appendLines(parent, ...lines) { parent.append(...lines.filter((n) => n !== null)); }

function outcomeCell(r) {
  const td = el("td", "outcome");
  const status = r.outcome_status;
  const badge = el("span", `badge ${status}`, status + (r.review_flagged ? "!" : ""));
  if (r.review_flagged) badge.title = "validated, but it keeps recurring or is contradicted: review it";
  if (r.superseded_by) badge.title = `superseded by ${r.superseded_by}`;
  td.append(badge);
  const c = r.outcomes || { served: 0, held: 0, recurred: 0, contradicted: 0 };
  td.append(el("div", "counts", `served ${c.served} · held ${c.held} · recurred ${c.recurred}`));
  if (c.contradicted) td.append(el("div", "counts", `contradicted ${c.contradicted}`));
  return td;
}

function contextCell(r) {
  const td = el("td", r.context ? "context" : "context none", r.context || "–");
  td.title = `context hash ${r.context_hash}`; // a property: text, never markup
  return td;
}

// The project filter: index into `scopes`, so a project name is never parsed.
let scopes = [{ label: "all projects", query: "" }];

async function loadProjects() {
  const list = await getJSON("/api/projects");
  const select = document.getElementById("project-filter");
  const chosen = scopes[Number(select.value)] || scopes[0];
  scopes = [{ label: "all projects", query: "" }];
  for (const p of list) {
    scopes.push(p.project === null
      ? { label: `global, no project (${p.repairs})`, query: "&global=1" }
      : { label: `${p.project} (${p.repairs})`, query: `&project=${encodeURIComponent(p.project)}` });
  }
  select.replaceChildren(...scopes.map((s, i) => { const o = el("option", null, s.label); o.value = String(i); return o; }));
  const keep = scopes.findIndex((s) => s.query === chosen.query);
  select.value = String(keep < 0 ? 0 : keep);
  if (keep < 0 && chosen.query) await loadRepairs(); // the chosen project is gone
}

async function loadRepairs() {
  const scope = scopes[Number(document.getElementById("project-filter").value)] || scopes[0];
  const rows = await getJSON(`/api/repairs?limit=200${scope.query}`);
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
    appendLines(text, labelled("pref", "prefer", r.preference), labelled("anti", "avoid", r.anti_pattern));
    tr.append(text);
    tr.append(outcomeCell(r), contextCell(r));
    const prov = el("td", "prov");
    prov.append(
      el("div", null, `${r.trigger} · ${r.severity} · ${when(r.ts)}`),
      el("div", null, `tool ${r.tool_id || "–"} · project ${r.project ?? "global"}`),
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
      for (const line of p.repair.preference) appendLines(block, labelled("pref", "prefer", line));
      for (const line of p.repair.anti_pattern) appendLines(block, labelled("anti", "avoid", line));
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
  const repairKinds = ["repair.persisted", "repair.reviewed", "repair.attached", "repair.deleted", "repair.outcome",
    "repair.stale", "repair.superseded", "repair.review_flagged"];
  if (repairKinds.includes(e.kind)) refreshSoon(loadRepairs);
  if (e.kind === "repair.persisted" || e.kind === "repair.deleted") refreshSoon(loadProjects);
  if (["repair.attached", "repair.reviewed", "repair.deleted", "repair.stale", "repair.superseded"].includes(e.kind)) {
    refreshSoon(loadPolicies);
  }
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
  const filter = document.getElementById("project-filter");
  filter.addEventListener("change", () => loadRepairs().catch((e) => showError(e.message)));
  loadProjects().catch((e) => showError(e.message));
  for (const load of [loadRepairs, loadQueue, loadPolicies]) load().catch((e) => showError(e.message));
  connect();
});
