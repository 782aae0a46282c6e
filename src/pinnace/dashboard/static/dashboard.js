// The Pinnace dashboard: renders /dashboard/api/snapshot. When the server-sent events at
// /dashboard/events say something changed, it fetches (at most every REFRESH_MS) the snapshot
// of only the nodes the changes named and rebuilds only the cards that differ, and of the
// tables (pending pods, workloads, Events) only the rows that differ; the whole snapshot again
// every HISTORY_MS, as the nodes' usage moves with each sample.
"use strict";

const REFRESH_MS = 500;
const USAGE_MS = 5000;
const HISTORY_MS = 10000;
const RESOURCES = ["cpu", "memory", "pods"];
const EVENTS_KEPT = 50;
let refreshTimer = null;
let changedNodes = new Set();
const cards = new Map(); // node name -> {json, view, element}
const tableRows = new WeakMap(); // table -> {header, rows: Map(key -> {json, element})}
const workloadSections = new Map(); // kind -> its heading and table, in a div
let podTimer = null;
let view = 0; // counts the pages shown: a fetch for a page left since draws nothing
let liveEvents = [];
let eventsFrame = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

function amount(resource, value) {
  if (value === null || value === undefined) return "–";
  if (resource === "memory") return (value / 2 ** 30).toFixed(2) + "Gi";
  if (resource === "cpu") return value.toFixed(2);
  return String(value);
}

function percent(part, whole) {
  return whole > 0 ? Math.min(100, (100 * part) / whole) : 0;
}

function resourceBar(resource, r) {
  const bar = el("div", { class: "bar", title: `${resource}: requested ${amount(resource, r.requested)}, used ${amount(resource, r.used)} of ${amount(resource, r.allocatable)}` },
    el("div", { class: "req" + (r.requested > r.allocatable ? " over" : ""), style: `width:${percent(r.requested, r.allocatable)}%` }));
  if (r.used !== null) bar.append(el("div", { class: "used", style: `left:${percent(r.used, r.allocatable)}%` }));
  const label = el("div", { class: "label" },
    `${resource} ${amount(resource, r.requested)} / ${amount(resource, r.allocatable)} (used ${amount(resource, r.used)})`);
  return [label, bar];
}

function resourceBars(n) {
  return RESOURCES.flatMap((resource) => resourceBar(resource, n.resources[resource]));
}

function podLink(p) {
  return el("a", { href: `#/pods/${p.namespace}/${p.name}` }, `${p.namespace}/${p.name}`);
}

function nodeCard(n) {
  const classes = ["node", n.ready ? "" : "notready", n.unschedulable ? "cordoned" : ""];
  const title = el("h3", {}, n.name);
  if (!n.ready) title.append(el("span", { class: "marker bad" }, "NotReady"));
  for (const p of n.pressures) title.append(el("span", { class: "marker" }, p));
  if (n.unschedulable) title.append(el("span", { class: "marker" }, "cordoned"));
  const card = el("div", { class: classes.join(" ").trim(), "data-node": n.name }, title);
  for (const t of n.taints) card.append(el("div", { class: "taint" }, t));
  card.append(el("div", { class: "resources" }, ...resourceBars(n)));
  const pods = el("div", { class: "pods" });
  for (const p of n.pods) {
    const link = el("a", { href: `#/pods/${p.namespace}/${p.name}`, class: `pod ${p.qos}`, title: `${p.namespace}/${p.name} (${p.qos}, ${p.phase})`, "data-pod": `${p.namespace}/${p.name}` });
    pods.append(link);
  }
  card.append(pods);
  return card;
}

function row(cells, cls) {
  return el("tr", { class: cls || "" }, ...cells.map((c) => el("td", {}, c)));
}

function table(target, header, rows) {
  target.replaceChildren(el("tr", {}, ...header.map((h) => el("th", {}, h))));
  for (const [cells, cls] of rows) target.append(row(cells, cls));
}

// Put `elements` in this order after `after` (null: from the first child), moving only those
// out of place, so that the others keep their place and their state.
function keepOrder(parent, elements, after) {
  let at = after ? after.nextElementSibling : parent.firstElementChild;
  for (const element of elements) {
    if (element === at) at = at.nextElementSibling;
    else parent.insertBefore(element, at);
  }
}

// A table of `rows` ({key, data, cells: () => [cells, class]}) in their order: a row is built
// again only when its data changed, inserted when new and removed when gone; the other rows'
// elements stay as they are.
function syncTable(target, header, rows) {
  const headerJson = JSON.stringify(header);
  let state = tableRows.get(target);
  if (!state || state.header !== headerJson) {
    target.replaceChildren(el("tr", {}, ...header.map((h) => el("th", {}, h))));
    state = { header: headerJson, rows: new Map() };
    tableRows.set(target, state);
  }
  const kept = new Map();
  for (const { key, data, cells } of rows) {
    const json = JSON.stringify(data);
    const old = state.rows.get(key);
    if (old && old.json === json) {
      kept.set(key, old);
      continue;
    }
    const element = row(...cells());
    element.dataset.key = key;
    if (old) old.element.replaceWith(element);
    kept.set(key, { json, element });
  }
  for (const [key, old] of state.rows) if (!kept.has(key)) old.element.remove();
  state.rows = kept;
  keepOrder(target, [...kept.values()].map((r) => r.element), target.firstElementChild);
}

function nextCard(grid, name) {
  const last = grid.lastElementChild;
  if (last === null || last.dataset.node < name) return null;
  return [...grid.children].find((c) => c.dataset.node > name) || null;
}

// `views`: the nodes' cards as the server has them; `asked`: the nodes asked for (all when
// null), so that those missing from `views` are gone.
function renderNodes(views, asked) {
  const grid = document.getElementById("nodes");
  for (const view of views) {
    const { resources, ...rest } = view;
    const json = JSON.stringify(rest);
    const bars = JSON.stringify(resources);
    const old = cards.get(view.name);
    if (old && old.json === json) {
      // The usage moves at every sample: its bars change, the card and its pods stay.
      if (old.bars !== bars) old.element.querySelector(".resources").replaceChildren(...resourceBars(view));
      cards.set(view.name, { json, bars, view, element: old.element });
      continue;
    }
    const element = nodeCard(view);
    if (old) old.element.replaceWith(element);
    else grid.insertBefore(element, nextCard(grid, view.name));
    cards.set(view.name, { json, bars, view, element });
  }
  const shown = new Set(views.map((v) => v.name));
  for (const name of asked || [...cards.keys()]) {
    if (shown.has(name) || !cards.has(name)) continue;
    cards.get(name).element.remove();
    cards.delete(name);
  }
}

function renderUtilisation(nodes) {
  const sum = (field, resource) => nodes.reduce((t, n) => t + (n.resources[resource][field] || 0), 0);
  const share = (field) => RESOURCES.map((r) => percent(sum(field, r), sum("allocatable", r)));
  const traces = ["requested", "used"].map((field) => ({ type: "bar", name: field, x: RESOURCES, y: share(field) }));
  Plotly.react("utilisation", traces, { barmode: "group", yaxis: { title: "% of allocatable", range: [0, 100] }, margin: { t: 10 } }, { displayModeBar: false });
}

const times = (seconds) => seconds.map((t) => t === null ? null : new Date(t * 1000));
const line = (x, y, name, extra) => ({ x, y, name, mode: "lines", connectgaps: false, ...extra });

// The charts over time come drawn by the server (pinnace.dashboard.charts, shared with the
// simulation's report); their x is seconds since the epoch, shown in the browser's time.
function renderHistory(history) {
  if (!history.series.time || !history.series.time.length) return;
  for (const [id, chart] of Object.entries(history.charts)) {
    const data = chart.data.map((trace) => ({ ...trace, x: times(trace.x) }));
    Plotly.react(id, data, chart.layout, { displayModeBar: false });
  }
}

async function refreshHistory() {
  const response = await fetch("api/history");
  if (response.ok) renderHistory(await response.json());
}

// A table per kind that has any, in the snapshot's order of kinds.
function renderWorkloads(workloads) {
  const shown = [];
  for (const [kind, items] of Object.entries(workloads)) {
    let section = workloadSections.get(kind);
    if (!items.length) {
      if (section) section.element.remove();
      workloadSections.delete(kind);
      continue;
    }
    if (!section) {
      const t = el("table", { "data-kind": kind });
      section = { element: el("div", {}, el("h3", {}, kind), t), table: t };
      workloadSections.set(kind, section);
    }
    shown.push(section.element);
    const columns = Object.keys(items[0]).filter((c) => c !== "namespace" && c !== "name");
    const link = (w) => el("a", { href: `#/workloads/${kind}/${w.namespace}/${w.name}` }, `${w.namespace}/${w.name}`);
    syncTable(section.table, ["name", ...columns], items.map((w) => ({
      key: `${w.namespace}/${w.name}`, data: w, cells: () => [[link(w), ...columns.map((c) => w[c])]],
    })));
  }
  keepOrder(document.getElementById("workloads"), shown, null);
}

function renderEvents() {
  syncTable(document.getElementById("events"), ["time", "type", "reason", "object", "message"],
    liveEvents.slice().reverse().map((e) => ({
      key: e.uid, data: e, cells: () => [[e.time, e.type, e.reason, `${e.namespace}/${e.object}`, e.message], e.type],
    })));
}

function renderPending(pending) {
  syncTable(document.getElementById("pending"), ["pod", "QoS", "reason", "message"],
    pending.map((p) => ({ key: `${p.namespace}/${p.name}`, data: p, cells: () => [[podLink(p), p.qos, p.reason, p.message]] })));
}

function render(snapshot, asked) {
  renderNodes(snapshot.nodes, asked);
  renderPending(snapshot.pending);
  renderWorkloads(snapshot.workloads);
  renderUtilisation([...cards.values()].map((c) => c.view));
  liveEvents = snapshot.events;
  renderEvents();
}

// The whole snapshot (`all`), else the nodes changed since the last refresh.
async function refresh(all) {
  clearTimeout(refreshTimer);
  refreshTimer = null;
  const asked = all ? null : [...changedNodes];
  changedNodes = new Set();
  const response = await fetch(asked ? `api/snapshot/${asked.map(encodeURIComponent).join(",")}` : "api/snapshot");
  if (response.ok) render(await response.json(), asked);
}

function scheduleRefresh() {
  if (refreshTimer === null) refreshTimer = setTimeout(refresh, REFRESH_MS, false);
}

function onChange(message) {
  if (message.event) {
    liveEvents = liveEvents.filter((e) => e.uid !== message.event.uid);
    liveEvents = [...liveEvents, message.event].slice(-EVENTS_KEPT);
    // Events come by the hundred a second while pods start: draw them once a frame.
    if (eventsFrame === null) eventsFrame = requestAnimationFrame(() => { eventsFrame = null; renderEvents(); });
  }
  if (message.kind === "nodes") changedNodes.add(message.name);
  if (message.kind === "pods" && message.node) changedNodes.add(message.node);
  scheduleRefresh();
}

function connect() {
  const source = new EventSource("events");
  const status = document.getElementById("status");
  source.onopen = () => { status.textContent = "live"; refresh(true); };
  source.onerror = () => { status.textContent = "reconnecting…"; };
  source.onmessage = (e) => onChange(JSON.parse(e.data));
}

// --- a pod's page -------------------------------------------------------------------------

async function podUsage(namespace, name, shown) {
  const response = await fetch(`api/pods/${namespace}/${name}`);
  if (shown !== view) return;
  if (response.status === 404) document.getElementById("pod-title").textContent = `${namespace}/${name} · not found`;
  if (!response.ok) return;
  const pod = await response.json();
  if (shown !== view) return;
  const history = pod.history || { time: [], cpu: [], memory: [] };
  const x = times(history.time);
  const flat = (value) => x.map(() => value ?? null);
  const mib = (values) => values.map((m) => m === null ? null : m / 2 ** 20);
  const traces = [
    line(x, history.cpu, "cpu used (cores)", { yaxis: "y" }),
    line(x, flat(pod.requests.cpu), "cpu request", { yaxis: "y", line: { dash: "dot" } }),
    line(x, flat(pod.limits.cpu), "cpu limit", { yaxis: "y", line: { dash: "dash" } }),
    line(x, mib(history.memory), "memory used (MiB)", { yaxis: "y2" }),
    line(x, flat(pod.requests.memory && pod.requests.memory / 2 ** 20), "memory request", { yaxis: "y2", line: { dash: "dot" } }),
    line(x, flat(pod.limits.memory && pod.limits.memory / 2 ** 20), "memory limit", { yaxis: "y2", line: { dash: "dash" } }),
  ];
  const layout = { margin: { t: 10 }, yaxis: { title: "cores", rangemode: "tozero" },
    yaxis2: { title: "MiB", overlaying: "y", side: "right", rangemode: "tozero" } };
  document.getElementById("pod-title").textContent = `${namespace}/${name} · ${pod.qos} · ${pod.phase} · ${pod.node || "not bound"}`;
  Plotly.react("pod-usage", traces, layout, { displayModeBar: false });
}

async function workloadReplicas(kind, namespace, name, shown) {
  document.getElementById("workload-title").textContent = `${kind} ${namespace}/${name}`;
  const response = await fetch(`api/workloads/${kind}/${namespace}/${name}`);
  if (!response.ok || shown !== view) return;
  const history = await response.json();
  if (shown !== view) return;
  const x = times(history.time);
  const step = { line: { shape: "hv" } };
  const traces = kind === "vpas"
    ? [line(x, history.cpu, "target cpu (cores)", step),
      line(x, history.memory.map((m) => m === null ? null : m / 2 ** 20), "target memory (MiB)", { ...step, yaxis: "y2" })]
    : [line(x, history.desired, "wanted", step), line(x, history.ready, "ready", step)];
  const layout = kind === "vpas"
    ? { margin: { t: 10 }, yaxis: { title: "cores", rangemode: "tozero" }, yaxis2: { title: "MiB", overlaying: "y", side: "right", rangemode: "tozero" } }
    : { margin: { t: 10 }, yaxis: { title: "replicas", rangemode: "tozero" } };
  Plotly.react("workload-replicas", traces, layout, { displayModeBar: false });
}

function explanation(data) {
  const box = el("div", {}, el("p", {}, data.message || ""), el("p", {}, `selected: ${data.selected || data.boundTo || "none"}`));
  const rows = data.nodes.map((n) => [[n.name, n.feasible ? "feasible" : "filtered out",
    n.filters.filter((f) => !f.passed).map((f) => `${f.plugin}: ${f.verdict}`).join("; ") || "all filters pass",
    n.scores.map((s) => `${s.plugin} ${s.normalized}×${s.weight}`).join(", "), n.total ?? ""]]);
  const t = el("table", { id: "explain-nodes" });
  table(t, ["node", "verdict", "filters", "scores", "total"], rows);
  box.append(t);
  return box;
}

async function showPod(namespace, name, shown) {
  const target = document.getElementById("pod-explain");
  target.replaceChildren("explaining…");
  const response = await fetch(`/pinnace/scheduler/explain/namespaces/${namespace}/pods/${name}`);
  const data = response.ok ? await response.json() : null;
  if (shown !== view) return;
  target.replaceChildren(data ? explanation(data) : `no explanation (${response.status})`);
  await podUsage(namespace, name, shown);
  if (shown !== view) return;
  podTimer = setInterval(() => podUsage(namespace, name, shown), USAGE_MS);
}

function route() {
  clearInterval(podTimer);
  view += 1;
  const shown = view;
  const pod = location.hash.match(/^#\/pods\/([^/]+)\/([^/]+)$/);
  const workload = location.hash.match(/^#\/workloads\/([^/]+)\/([^/]+)\/([^/]+)$/);
  document.getElementById("cluster").hidden = Boolean(pod || workload);
  document.getElementById("pod").hidden = !pod;
  document.getElementById("workload").hidden = !workload;
  if (pod) showPod(decodeURIComponent(pod[1]), decodeURIComponent(pod[2]), shown);
  if (workload) {
    const [kind, namespace, name] = workload.slice(1).map(decodeURIComponent);
    workloadReplicas(kind, namespace, name, shown);
    podTimer = setInterval(() => workloadReplicas(kind, namespace, name, shown), HISTORY_MS);
  }
}

window.addEventListener("hashchange", route);
route();
connect();
refreshHistory();
setInterval(() => { refreshHistory(); refresh(true); }, HISTORY_MS);
