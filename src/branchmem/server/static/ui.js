// branchmem explorer: plain JS over the HTTP API, no build step.
// Pick a conversation (tree) and an anchor; see the path to the anchor and, for every
// record, whether it is visible there and why (the reason Memory.explain gives).
"use strict";

const state = { namespace: "default", tree: null, events: [], head: null, anchor: null };
const $ = (id) => document.getElementById(id);

function headers() {
  const key = $("api-key").value.trim();
  return key ? { Authorization: "Bearer " + key } : {};
}

function nsPath(rest) {
  return "/v1/ns/" + encodeURIComponent(state.namespace) + rest;
}

async function api(path) {
  const response = await fetch(path, { headers: headers() });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const detail = body && body.detail ? body.detail : response.statusText;
    throw new Error((body && body.code ? body.code + ": " : "") + detail);
  }
  return body;
}

async function allPages(path) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api(path + sep + "limit=1000" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

function status(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

async function loadConversations() {
  state.namespace = $("namespace").value.trim() || "default";
  sessionStorage.setItem("branchmem.key", $("api-key").value);
  sessionStorage.setItem("branchmem.namespace", state.namespace);
  try {
    const who = await api("/v1/whoami");
    const list = $("namespaces");
    list.replaceChildren(...who.namespaces.filter((n) => !n.endsWith("*")).map((n) => {
      const option = document.createElement("option");
      option.value = n;
      return option;
    }));
    const trees = await allPages(nsPath("/trees"));
    const select = $("conversations");
    select.replaceChildren(...trees.map((t) => {
      const option = document.createElement("option");
      option.value = t.tree;
      option.textContent = t.tree + " (" + t.events + ")";
      return option;
    }));
    status(trees.length + " conversation(s) in " + state.namespace);
    if (trees.length) {
      select.value = trees[0].tree;
      await loadTree(trees[0].tree);
    }
  } catch (error) {
    status(error.message, true);
  }
}

async function loadTree(tree) {
  const data = await api(nsPath("/trees/" + encodeURIComponent(tree)));
  state.tree = tree;
  state.events = data.events;
  state.head = data.head;
  const ids = new Set(data.events.map((e) => e.id));
  const deepest = data.head || data.events[data.events.length - 1].id;
  await setAnchor(ids.has(deepest) ? deepest : data.events[0].id);
}

function pathTo(anchor) {
  const byId = new Map(state.events.map((e) => [e.id, e]));
  const path = new Set();
  for (let id = anchor; id !== null && byId.has(id) && !path.has(id); id = byId.get(id).parent) {
    path.add(id);
  }
  return path;
}

function renderTree() {
  const children = new Map();
  const known = new Set(state.events.map((e) => e.id));
  for (const event of state.events) {
    const parent = known.has(event.parent) ? event.parent : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(event);
  }
  const onPath = pathTo(state.anchor);
  const build = (parent) => {
    const list = document.createElement("ul");
    for (const event of children.get(parent) || []) {
      const item = document.createElement("li");
      const label = document.createElement("span");
      label.className = "event";
      if (onPath.has(event.id)) label.classList.add("on-path");
      if (event.id === state.anchor) label.classList.add("anchor");
      if (event.id === state.head) label.classList.add("head");
      label.dataset.event = event.id;
      label.title = event.id;
      const role = document.createElement("span");
      role.className = "role";
      role.textContent = event.role;
      label.append(role, document.createTextNode(event.content || "(" + event.id + ")"));
      label.addEventListener("click", () => setAnchor(event.id));
      item.append(label);
      if (children.has(event.id)) item.append(build(event.id));
      list.append(item);
    }
    return list;
  };
  $("tree").replaceChildren(build(null));
  $("anchor-label").textContent = "anchor: " + state.anchor;
}

async function setAnchor(anchor) {
  state.anchor = anchor;
  renderTree();
  try {
    const views = await allPages(nsPath("/explanations?anchor=" + encodeURIComponent(anchor)));
    renderRecords(views);
    document.body.dataset.anchor = anchor;  // the records shown are for this anchor
  } catch (error) {
    status(error.message, true);
  }
}

function renderRecords(views) {
  const rows = views.map((view) => {
    const why = view.explanation;
    const row = document.createElement("tr");
    row.className = why.visible ? "visible" : "hidden";
    row.dataset.record = why.record_id;
    row.dataset.visible = String(why.visible);
    row.dataset.reason = why.reason;
    const where = [why.source, why.fork ? "fork " + why.fork : null].filter(Boolean).join(", ");
    for (const text of [why.record_id, why.visible ? "visible" : "hidden", why.reason, where,
      view.content === null ? "(erased)" : view.content]) {
      const cell = document.createElement("td");
      cell.textContent = text;
      row.append(cell);
    }
    return row;
  });
  $("records").tBodies[0].replaceChildren(...rows);
}

$("connect").addEventListener("submit", (event) => {
  event.preventDefault();
  loadConversations();
});
$("conversations").addEventListener("change", (event) => loadTree(event.target.value));
$("api-key").value = sessionStorage.getItem("branchmem.key") || "";
$("namespace").value = sessionStorage.getItem("branchmem.namespace") || "default";
