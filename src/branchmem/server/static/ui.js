// branchmem explorer: plain JS over the HTTP API, no build step.
// Pick a conversation and an anchor; see the path to the anchor, the records built from the
// conversation marked on the messages they came from, and for each record whether it is
// visible at the anchor and why, in words. Text from the store only ever goes in as text.
// Messages are named by their text (shortened), their id on hover: a person reads the words.
"use strict";

const state = {
  namespace: "default", names: [], tree: null, events: [], head: null, anchor: null, views: [],
  messages: new Map(),  // event id -> its text, for naming messages in sentences
  unknown: new Set(),  // event ids the store could not give (never received)
  blameSession: null,  // the session the blame panel shows (it follows a namespace switch)
  blameDelivery: null,  // the delivery opened there
  comparing: false,  // a comparison is on screen (it follows a new anchor and namespace)
};
const $ = (id) => document.getElementById(id);
const CLIP = 160;  // characters of a message or record shown before "more"
const SHORT = 48;  // characters of a message named inside a sentence

// -- talking to the service -----------------------------------------------------------------
function headers() {
  const key = $("api-key").value.trim();
  return key ? { Authorization: "Bearer " + key } : {};
}

function nsPath(rest) {
  return "/v1/ns/" + encodeURIComponent(state.namespace) + rest;
}

class ApiError extends Error {
  constructor(status, code, detail) {
    super((code ? code + ": " : "") + detail);
    this.status = status;
    this.code = code;
  }
}

async function api(path) {
  const response = await fetch(path, { headers: headers() });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const detail = body && body.detail ? body.detail : response.statusText;
    throw new ApiError(response.status, body && body.code, detail);
  }
  return body;
}

async function allPages(path) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api(path + sep + "limit=1000" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
    if (Array.isArray(page)) return page;  // an unpaged list
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

function status(text, isError) {
  $("status").replaceChildren(text);
  $("status").className = isError ? "error" : "";
}

function explainFailure(error) {
  if (error.status === 401) {
    status(error.message + ". Open the link `branchmem serve` printed (it carries a token " +
      "for this page), or paste a key from `branchmem keys create`.", true);
  } else {
    status(error.message, true);
  }
}

// -- small DOM builders ---------------------------------------------------------------------
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// A message as a person knows it: its words, shortened; the id only on hover.
function shortText(text) {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= SHORT ? line : line.slice(0, SHORT - 1) + "…";
}

function messageName(id) {
  const text = state.messages.get(id);
  return text ? "“" + shortText(text) + "”" : id;
}

function eventLink(id) {
  const link = el("a", "event-link", messageName(id));
  link.title = id;
  link.href = "#event-" + encodeURIComponent(id);
  link.dataset.event = id;
  link.addEventListener("click", (click) => {
    click.preventDefault();
    click.stopPropagation();
    focusEvent(id);
  });
  return link;
}

function recordLink(id, className) {
  const link = el("a", className || "record-link", id);
  link.href = "#record-" + encodeURIComponent(id);
  link.dataset.record = id;
  link.addEventListener("click", (click) => {
    click.preventDefault();
    click.stopPropagation();
    focusRecord(id);
  });
  return link;
}

// Long text: the first CLIP characters and a "more" button that shows the rest.
function clipped(text) {
  const box = el("span", "text");
  if (text.length <= CLIP) {
    box.textContent = text;
    return box;
  }
  const shown = el("span", "clip", text.slice(0, CLIP) + "…");
  const toggle = el("button", "more", "more");
  toggle.type = "button";
  toggle.addEventListener("click", (click) => {
    click.stopPropagation();
    const open = toggle.textContent === "more";
    shown.textContent = open ? text : text.slice(0, CLIP) + "…";
    toggle.textContent = open ? "less" : "more";
    box.classList.toggle("expanded", open);
  });
  box.append(shown, " ", toggle);
  return box;
}

// "built from {source}, ..." with every {name} an event link.
function sentence(template, values) {
  const out = el("span", "why");
  for (const [index, part] of template.split(/\{(\w+)\}/).entries()) {
    if (index % 2 === 0) out.append(part);
    else out.append(values[part] ? eventLink(values[part]) : "a source");
  }
  return out;
}

// Each reason code (Memory.explain) in plain words.
const REASONS = {
  visible: "every message it was built from is on the path to the anchor",
  off_path: "it was built from {source}, which is on another branch",
  unknown_source: "it was built from {source}, a message this store has never received",
  detached: "it was built from {source}, whose earlier messages have not arrived, so its branch is unknown",
  legacy: "it names no sources (a legacy record), so no branch can be checked",
  no_view: "it was built from {source} in another conversation, which this view does not look at",
  no_anchor: "no anchor is set, and without one nothing is shown",
  inconsistent_sources: "its sources lie on different branches, which no single path holds",
  superseded: "a newer value for the same key on this path replaces it",
  retracted: "a retraction on this path withdrew it (someone asked to forget it)",
  stale: "a record it was built from was retracted, superseded, withdrawn or erased here; it waits to be rebuilt",
  withdrawn: "it was withdrawn (it can be restored)",
  erased: "it was erased: its text is gone for good",
};

function why(view) {
  const e = view.explanation;
  let template = REASONS[e.reason] || e.reason;
  if (e.reason === "off_path" && e.fork) template += "; the branches part at {fork}";
  const prefix = e.visible
    ? (e.reason === "visible" ? "Shown: " : "Shown in compat mode, although ")
    : "Hidden: ";
  const out = sentence(prefix + template, { source: e.source, fork: e.fork });
  if (e.reason === "superseded" && view.key) out.append(' (key "' + view.key + '")');
  out.append(".");
  out.title = e.reason + (e.detail ? " — " + e.detail : "");
  return out;
}

// -- namespaces -----------------------------------------------------------------------------
async function namespaceList() {
  try {
    return (await api("/v1/namespaces")).namespaces;
  } catch (error) {
    if (error.status !== 404) throw error;
    const who = await api("/v1/whoami");  // a server without the listing: the key's bindings
    return who.namespaces.filter((n) => !n.endsWith("*"));
  }
}

// The picker lists the namespaces holding data, and the one shown even when it holds none.
function fillPicker() {
  const names = state.names.includes(state.namespace)
    ? state.names : [...state.names, state.namespace];
  $("namespace").replaceChildren(...names.map((name) => {
    const option = el("option", null, state.names.includes(name) ? name : name + " (no data)");
    option.value = name;
    return option;
  }));
  $("namespace").value = state.namespace;
}

// An empty namespace says where the data is (an import with -n alice went to alice).
function dataElsewhere() {
  const out = el("span", "elsewhere", "No conversation in namespace " + state.namespace + ".");
  const others = state.names.filter((name) => name !== state.namespace);
  if (!others.length) {
    out.append(" No namespace holds data yet: `branchmem import FILE -n NAME` adds some.");
    return out;
  }
  out.append(" Data is in ");
  others.forEach((name, index) => {
    if (index) out.append(", ");
    const link = el("a", "namespace-link", name);
    link.href = "#";
    link.dataset.namespace = name;
    link.addEventListener("click", (click) => {
      click.preventDefault();
      loadConversations(name);
    });
    out.append(link);
  });
  out.append(".");
  return out;
}

function clearConversation() {
  state.messages = new Map();  // ids are per namespace
  state.unknown = new Set();
  state.tree = null;
  state.events = [];
  state.views = [];
  $("tree").replaceChildren();
  $("anchor-label").textContent = "";
  $("records").tBodies[0].replaceChildren();
  $("records-note").textContent = "";
  delete document.body.dataset.anchor;
}

// -- conversations --------------------------------------------------------------------------
async function conversationList() {
  try {
    return await allPages(nsPath("/conversations"));
  } catch (error) {
    if (error.status !== 404) throw error;
    const trees = await allPages(nsPath("/trees"));  // a server without the listing
    return trees.map((t) => ({ tree: t.tree, title: null, events: t.events, head: t.head }));
  }
}

// ``picked``: the namespace asked for; else the one this tab last showed; else "default"
// when it holds data, or the first namespace that does.
async function loadConversations(picked) {
  sessionStorage.setItem("branchmem.key", $("api-key").value);
  try {
    state.names = await namespaceList();
    const fallback = state.names.includes("default") || !state.names.length
      ? "default" : state.names[0];
    const previous = state.namespace;
    state.namespace = picked || sessionStorage.getItem("branchmem.namespace") || fallback;
    sessionStorage.setItem("branchmem.namespace", state.namespace);
    fillPicker();
    clearConversation();
    const comparing = state.comparing;
    clearDiff();  // nothing of the namespace left stays on screen
    state.comparing = comparing;  // a comparison goes on at the new anchor, once it is set
    if (state.blameSession !== null) {
      // the session's deliveries in this namespace: none of the other's stay on the page
      loadDeliveries(state.blameSession, previous === state.namespace ? state.blameDelivery : null);
    }
    const conversations = await conversationList();
    $("conversations").replaceChildren(...conversations.map((c) => {
      const item = el("li", "conversation");
      item.dataset.tree = c.tree;
      item.tabIndex = 0;
      item.title = c.tree;
      item.append(el("span", "title", c.title || c.tree),
        el("span", "meta", c.events + " messages · " + c.tree));
      item.addEventListener("click", () => loadTree(c.tree));
      item.addEventListener("keydown", (key) => { if (key.key === "Enter") loadTree(c.tree); });
      return item;
    }));
    if (!conversations.length) {
      $("status").replaceChildren(dataElsewhere());
      $("status").className = "";
      return;
    }
    status(conversations.length + " conversation(s) in " + state.namespace);
    await loadTree(conversations[0].tree);
  } catch (error) {
    explainFailure(error);
  }
}

async function loadTree(tree) {
  try {
    const data = await api(nsPath("/trees/" + encodeURIComponent(tree)));
    state.tree = tree;
    state.events = data.events;
    state.head = data.head;
    for (const event of data.events) {
      if (event.content) state.messages.set(event.id, event.content);
    }
    for (const item of $("conversations").children) {
      item.classList.toggle("selected", item.dataset.tree === tree);
    }
    const ids = new Set(data.events.map((e) => e.id));
    const deepest = data.head || data.events[data.events.length - 1].id;
    await setAnchor(ids.has(deepest) ? deepest : data.events[0].id);
  } catch (error) {
    explainFailure(error);
  }
}

// -- the tree -------------------------------------------------------------------------------
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
  const marks = new Map();  // event id -> the views of records built from it
  for (const view of state.views) {
    for (const source of view.tree_sources || []) {
      if (!marks.has(source)) marks.set(source, []);
      marks.get(source).push(view);
    }
  }
  const onPath = pathTo(state.anchor);
  const build = (parent) => {
    const list = document.createElement("ul");
    for (const event of children.get(parent) || []) {
      const item = document.createElement("li");
      const label = el("span", "event");
      label.id = "event-" + event.id;
      if (onPath.has(event.id)) label.classList.add("on-path");
      if (event.id === state.anchor) label.classList.add("anchor");
      if (event.id === state.head) label.classList.add("head");
      label.dataset.event = event.id;
      label.title = event.id + " — click to make it the anchor";
      label.append(el("span", "role", event.role), clipped(event.content || "(" + event.id + ")"));
      for (const view of marks.get(event.id) || []) {
        const mark = recordLink(view.explanation.record_id, "mark");
        mark.classList.add(view.explanation.visible ? "visible" : "hidden");
        mark.title = (view.explanation.visible ? "visible here: " : "hidden here: ") + (view.content || "");
        label.append(" ", mark);
      }
      label.addEventListener("click", () => setAnchor(event.id));
      item.append(label);
      if (children.has(event.id)) item.append(build(event.id));
      list.append(item);
    }
    return list;
  };
  $("tree").replaceChildren(build(null));
  $("anchor-label").textContent = "anchor: " + messageName(state.anchor);
  $("anchor-label").title = state.anchor;
}

async function setAnchor(anchor) {
  state.anchor = anchor;
  const namespace = state.namespace;
  try {
    const views = await allPages(nsPath("/explanations?anchor=" + encodeURIComponent(anchor) +
      "&tree=" + encodeURIComponent(state.tree)));
    if (state.anchor !== anchor || state.namespace !== namespace) return;  // moved on meanwhile
    state.views = views;
    renderTree();
    renderRecords();
    document.body.dataset.anchor = anchor;  // the records shown are for this anchor
    nameOtherMessages();
    markDeliveriesHere();
    fillDiffChoices();
    if (state.comparing) await runDiff();  // the comparison follows the anchor
  } catch (error) {
    renderTree();
    explainFailure(error);
  }
}

// -- the records ----------------------------------------------------------------------------
function renderRecords() {
  const rows = state.views.map((view) => {
    const e = view.explanation;
    const row = el("tr", e.visible ? "visible" : "hidden");
    row.id = "record-" + e.record_id;
    row.dataset.record = e.record_id;
    row.dataset.visible = String(e.visible);
    row.dataset.reason = e.reason;
    const sources = el("td", "sources");
    for (const source of view.tree_sources || []) sources.append(eventLink(source), " ");
    const cells = [
      recordLink(e.record_id),
      el("span", null, e.visible ? "visible" : "hidden"),
      why(view),
      sources,
      view.content === null ? el("span", "erased", "(erased)") : clipped(view.content),
    ];
    for (const content of cells) {
      if (content.tagName === "TD") {
        row.append(content);
      } else {
        const cell = el("td");
        cell.append(content);
        row.append(cell);
      }
    }
    return row;
  });
  $("records").tBodies[0].replaceChildren(...rows);
  const shown = state.views.filter((v) => v.explanation.visible).length;
  $("records-note").textContent = state.views.length
    ? state.views.length + " record(s) built from this conversation, " + shown +
      " visible at " + messageName(state.anchor) + ". Records of other conversations are not listed."
    : "No record is built from this conversation.";
}

// A sentence may name a message of another conversation: fetch its text once, then rename
// its links. One the store never received keeps its id.
async function nameOtherMessages() {
  const wanted = new Set();
  for (const link of document.querySelectorAll("a.event-link")) {
    const id = link.dataset.event;
    if (!state.messages.has(id) && !state.unknown.has(id)) wanted.add(id);
  }
  const namespace = state.namespace;
  for (const id of wanted) {
    try {
      const event = await api(nsPath("/events/" + encodeURIComponent(id)));
      if (state.namespace !== namespace) return;  // the page moved on meanwhile
      if (event.content) state.messages.set(id, event.content);
      else state.unknown.add(id);
    } catch (error) {
      state.unknown.add(id);  // not received (404), or not readable: the id stays
      continue;
    }
    for (const link of document.querySelectorAll("a.event-link")) {
      if (link.dataset.event === id) link.textContent = messageName(id);
    }
  }
}

function flash(node) {
  node.scrollIntoView({ block: "nearest" });
  node.classList.remove("flash");
  void node.offsetWidth;  // restart the animation
  node.classList.add("flash");
}

// A record: its row and the messages it was built from stand out.
function focusRecord(id) {
  for (const node of document.querySelectorAll(".focus")) node.classList.remove("focus");
  const row = document.getElementById("record-" + id);
  if (row) {
    row.classList.add("focus");
    flash(row);
  }
  const view = state.views.find((v) => v.explanation.record_id === id);
  for (const source of (view && view.tree_sources) || []) {
    const node = document.getElementById("event-" + source);
    if (node) node.classList.add("focus");
  }
}

function focusEvent(id) {
  const node = document.getElementById("event-" + id);
  if (node) flash(node);
  else status("message " + id + " is not in this conversation", true);
}

// -- blame: what a session was given, traced back (GET /deliveries, GET /blame) -------------
function blamedMessage(message) {
  const out = el("span", "blamed-message");
  if (message.text === null) {
    out.append(el("span", "erased", "(erased) "), message.id);
  } else {
    state.messages.set(message.id, message.text);
    const link = eventLink(message.id);
    if (message.tree) {  // in another conversation than the one shown: open it there
      link.addEventListener("click", async (click) => {
        if (message.tree === state.tree) return;
        click.preventDefault();
        click.stopImmediatePropagation();
        await loadTree(message.tree);
        focusEvent(message.id);
      }, { capture: true });
    }
    out.append(link);
  }
  if (message.status && message.status !== "erased") out.append(el("span", "status", " " + message.status));
  if (!message.on_path) out.append(el("span", "off-path", " not on the delivery's branch"));
  return out;
}

function renderBlame(blame) {
  const branch = $("blame-branch");
  branch.replaceChildren("Given at ");
  if (blame.anchor !== null) {
    const anchor = el("a", "event-link", blame.anchor);
    anchor.href = "#";
    anchor.title = "show the branch in the tree";
    anchor.addEventListener("click", async (click) => {
      click.preventDefault();
      if (blame.tree && blame.tree !== state.tree) await loadTree(blame.tree);
      await setAnchor(blame.anchor);
    });
    branch.append(anchor, " in conversation " + (blame.tree || "(unknown)") +
      ", a path of " + blame.path.length + " message(s), " +
      new Date(blame.time * 1000).toLocaleString() + ".");
  } else {
    branch.append("no anchor.");
  }
  const rows = blame.lines.map((line) => {
    const row = el("tr");
    row.dataset.record = line.record_id;
    const memory = line.text === null ? el("span", "erased", "(erased)") : el("span", null, line.text);
    const from = el("td", "sources");
    if (line.sources === null) from.append(el("span", "status", "no sources (legacy)"));
    for (const message of line.messages) from.append(blamedMessage(message), el("br"));
    const cells = [
      el("span", null, "[" + line.line + "]"),
      el("span", null, line.record_id + " @" + line.revision),
      memory,
    ];
    for (const content of cells) {
      const cell = el("td");
      cell.append(content);
      if (content === memory && line.status && line.status !== "erased") {
        cell.append(el("span", "status", " " + line.status));
      }
      row.append(cell);
    }
    row.append(from);
    return row;
  });
  $("blame").tBodies[0].replaceChildren(...rows);
}

// The blame panel shows one session of the namespace on screen: a namespace switch reloads
// the session there, and an answer for a namespace or session left meanwhile is dropped.
function blameIsFor(namespace, session) {
  return state.namespace === namespace && state.blameSession === session;
}

function clearBlame() {
  $("deliveries").replaceChildren();
  $("blame").tBodies[0].replaceChildren();
  $("blame-branch").textContent = "";
  delete document.body.dataset.blame;
}

// The deliveries given at the anchor on screen are marked: "given here".
function markDeliveriesHere() {
  for (const item of $("deliveries").children) {
    const here = state.anchor !== null && item.dataset.anchor === state.anchor;
    item.classList.toggle("at-anchor", here);
    item.querySelector(".here").textContent = here ? " · given here" : "";
  }
}

async function showBlame(session, delivery) {
  const namespace = state.namespace;
  try {
    const blame = await api(nsPath("/blame?session=" + encodeURIComponent(session) +
      "&delivery=" + encodeURIComponent(delivery)));
    if (!blameIsFor(namespace, session)) return;
    state.blameDelivery = delivery;
    for (const item of $("deliveries").children) {
      item.classList.toggle("selected", item.dataset.delivery === String(delivery));
    }
    renderBlame(blame);
    document.body.dataset.blame = namespace + " " + session + " " + delivery;
  } catch (error) {
    if (blameIsFor(namespace, session)) explainFailure(error);
  }
}

// ``open``: the delivery to open when the session has it (else its latest).
async function loadDeliveries(session, open) {
  const namespace = state.namespace;
  state.blameSession = session;
  state.blameDelivery = null;
  clearBlame();
  try {
    const given = await allPages(nsPath("/deliveries?session=" + encodeURIComponent(session)));
    if (!blameIsFor(namespace, session)) return;
    $("deliveries").replaceChildren(...given.map((delivery) => {
      const item = el("li", "delivery", "delivery " + delivery.seq + " · " +
        delivery.items.length + " memory line(s) · at " + (delivery.anchor || "no anchor"));
      item.append(el("span", "here"));
      item.dataset.delivery = String(delivery.seq);
      item.dataset.anchor = delivery.anchor || "";
      item.tabIndex = 0;
      item.addEventListener("click", () => showBlame(session, delivery.seq));
      item.addEventListener("keydown", (key) => { if (key.key === "Enter") showBlame(session, delivery.seq); });
      return item;
    }));
    markDeliveriesHere();
    if (!given.length) {
      $("blame-branch").textContent = "Session " + session + " was given nothing in namespace " +
        namespace + ".";
      document.body.dataset.blame = namespace + " " + session + " none";
      return;
    }
    const wanted = given.find((delivery) => delivery.seq === open) || given[given.length - 1];
    await showBlame(session, wanted.seq);
  } catch (error) {
    if (blameIsFor(namespace, session)) explainFailure(error);
  }
}

$("blame-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const session = $("session").value.trim();
  if (session) loadDeliveries(session);
});

// -- start ----------------------------------------------------------------------------------
// `branchmem serve` prints /ui#token=...: take it, and drop it from the address bar.
function takeTokenFromLink() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!match) return false;
  $("api-key").value = decodeURIComponent(match[1]);
  history.replaceState(null, "", location.pathname + location.search);
  return true;
}

$("connect").addEventListener("submit", (event) => {
  event.preventDefault();
  loadConversations($("namespace").value || null);
});
$("namespace").addEventListener("change", () => loadConversations($("namespace").value));
$("api-key").value = sessionStorage.getItem("branchmem.key") || "";
takeTokenFromLink();
loadConversations();
window.addEventListener("hashchange", () => { if (takeTokenFromLink()) loadConversations(); });

// -- diff of two branches -------------------------------------------------------------------
// The anchor against another message of the conversation, side by side, from GET /diff: what
// each side shows that the other does not, the other side's reason in words, and the keys
// whose current value differs. It reads only `state` and the helpers above.
const DIFF_WHY = {
  revised: "the other side shows revision {revision} of it",
  superseded: "a newer value for the same key replaces it there",
  retracted: "a retraction there withdrew it",
  stale: "something it was built from changed there",
};

function diffReason(entry) {
  if (entry.reason === "off_path") {
    let template = "Hidden there: it was built from {source}, which is not on that branch";
    if (entry.fork) template += "; the branches part at {fork}";
    return sentence(template + ".", { source: entry.source, fork: entry.fork });
  }
  const words = (DIFF_WHY[entry.reason] || REASONS[entry.reason] || entry.reason)
    .replace("{revision}", String(entry.other_revision));
  return sentence("Hidden there: " + words.replace(/\{(\w+)\}/g, "a source") + ".", {});
}

function diffSide(entries) {
  return entries.map((entry) => {
    const item = el("li");
    item.dataset.record = entry.record.id;
    item.dataset.reason = entry.reason;
    const why = diffReason(entry);
    why.title = entry.reason;
    item.append(el("span", "record", entry.record.id), clipped(entry.record.content || ""), why);
    return item;
  });
}

function diffValue(record) {
  return record ? record.id + ": " + record.content : "(none)";
}

function clearDiff() {
  state.comparing = false;
  for (const id of ["diff-a-title", "diff-b-title", "diff-note"]) $(id).textContent = "";
  $("diff-a").replaceChildren();
  $("diff-b").replaceChildren();
  $("diff-keys").tBodies[0].replaceChildren();
  delete document.body.dataset.diff;
}

// The other message: the one picked while it is in this conversation and is not the anchor;
// else the head, or a leaf off the anchor's path.
function fillDiffChoices() {
  const select = $("diff-other");
  const previous = select.value === state.anchor ? "" : select.value;
  const onPath = state.anchor ? pathTo(state.anchor) : new Set();
  const ids = state.events.map((e) => e.id);
  select.replaceChildren(...state.events.map((event) => {
    const option = el("option", null, shortText(event.content || event.id) + " (" + event.id + ")");
    option.value = event.id;
    return option;
  }));
  const parents = new Set(state.events.map((e) => e.parent));
  const leafOff = state.events.find((e) => !parents.has(e.id) && !onPath.has(e.id));
  const fallback = state.head && state.head !== state.anchor ? state.head : leafOff && leafOff.id;
  select.value = ids.includes(previous) ? previous : fallback || ids[0] || "";
}

async function runDiff() {
  const other = $("diff-other").value;
  const anchor = state.anchor;
  const namespace = state.namespace;
  if (!anchor || !other) return;
  state.comparing = true;
  try {
    const found = await api(nsPath("/diff?anchor_a=" + encodeURIComponent(anchor) +
      "&anchor_b=" + encodeURIComponent(other)));
    const current = state.anchor === anchor && state.namespace === namespace;
    if (!current || $("diff-other").value !== other) return;  // the page moved on meanwhile
    $("diff-a-title").textContent = "only at the anchor " + messageName(found.anchor_a);
    $("diff-b-title").textContent = "only at " + messageName(found.anchor_b);
    $("diff-a").replaceChildren(...diffSide(found.only_a));
    $("diff-b").replaceChildren(...diffSide(found.only_b));
    $("diff-keys").tBodies[0].replaceChildren(...found.keys.map((change) => {
      const row = el("tr");
      row.dataset.key = change.key;
      for (const text of [change.key, change.scope || "", diffValue(change.a), diffValue(change.b)]) {
        row.append(el("td", null, text));
      }
      return row;
    }));
    $("diff-note").textContent = found.only_a.length + found.only_b.length + found.keys.length
      ? "" : "Both messages see the same records.";
    document.body.dataset.diff = found.anchor_a + " " + found.anchor_b;
  } catch (error) {
    if (state.anchor === anchor && state.namespace === namespace) explainFailure(error);
  }
}

$("diff-form").addEventListener("submit", (event) => {
  event.preventDefault();
  runDiff();
});
$("diff-other").addEventListener("change", () => { if (state.comparing) runDiff(); });
// the choices follow the tree: refreshed whenever the tree is drawn again
new MutationObserver(fillDiffChoices).observe($("tree"), { childList: true });
