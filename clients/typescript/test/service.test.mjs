// The client against a running `branchmem serve`: the README's Chengdu story, then the
// typed errors. tests/test_ts_client.py starts the server and sets BRANCHMEM_URL,
// BRANCHMEM_API_KEY and BRANCHMEM_NAMESPACE (a namespace the key is bound to, and only it).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import {
  BranchmemError,
  Client,
  ConflictError,
  Forbidden,
  InvalidInput,
  NotFoundError,
  Unauthorized,
  Unavailable,
} from "../dist/index.js";

const url = process.env.BRANCHMEM_URL;
const apiKey = process.env.BRANCHMEM_API_KEY;
const namespace = process.env.BRANCHMEM_NAMESPACE ?? "default";
const skip = url ? false : "BRANCHMEM_URL is not set (tests/test_ts_client.py starts a server)";
const mem = new Client(url ?? "http://127.0.0.1:9", { apiKey, namespace });

test("the Chengdu story: an edited message takes its memory with it", { skip }, async () => {
  await mem.addEvent({ id: "u1", content: "I need help planning a move." });
  await mem.addEvent({ id: "u2", parent: "u1", content: "I'm moving to Chengdu next month." });
  await mem.addRecord({ id: "city-1", sources: ["u2"], content: "moving to Chengdu", key: "city" });
  await mem.addEvent({ id: "u2b", parent: "u1", content: "I'm moving to Hangzhou next month." });
  await mem.addRecord({
    id: "city-2",
    sources: ["u2b"],
    content: "moving to Hangzhou",
    key: "city",
  });

  assert.equal((await mem.current("city", "u2b"))?.content, "moving to Hangzhou");
  assert.equal((await mem.current("city", "u2"))?.content, "moving to Chengdu");
  const why = await mem.explain("city-1", "u2b");
  assert.equal(why.visible, false);
  assert.equal(why.reason, "off_path");
  assert.deepEqual(
    (await mem.visible("u2b")).map((r) => r.content),
    ["moving to Hangzhou"],
  );
  assert.deepEqual(
    (await mem.visible(null)).map((r) => r.id),
    [],
  ); // no anchor, nothing
  assert.deepEqual(
    (await mem.path("u2b")).map((e) => e.id),
    ["u1", "u2b"],
  );
  const hits = await mem.search("Hangzhou", "u2b", { k: 5 });
  assert.deepEqual(
    hits.map((h) => h.record.id),
    ["city-2"],
  );
  const context = await mem.context("u2b", { budget: 200 });
  assert.match(context.text, /Hangzhou/);
  assert.doesNotMatch(context.text, /Chengdu/);
  assert.equal(await mem.current("city", null), null);
});

test("revise keeps the sources; erase names what it erased", { skip }, async () => {
  await mem.addEvent({ id: "r-root", content: "My dog is called Rex." });
  await mem.addRecord({ id: "dog", sources: ["r-root"], content: "dog: Rex" });
  const revised = await mem.revise("dog", { content: "dog's name: Rex" });
  assert.equal(revised.revision, 2);
  assert.deepEqual(revised.sources, ["r-root"]);
  assert.equal((await mem.getRecord("dog", { revision: 1 })).content, "dog: Rex");
  assert.ok((await mem.history("dog")).length >= 2);
  const erased = await mem.erase("r-root", "test");
  assert.ok(erased.includes("r-root"), JSON.stringify(erased));
});

test("ids travel as one path segment each", { skip }, async () => {
  for (const id of ["a/b", "搬家", "100%", "q?x=1#f", "...", ".a", "%2e%2E", " "]) {
    const stored = await mem.addEvent({ id, content: `event ${id}` });
    assert.equal(stored.id, id);
    assert.equal((await mem.getEvent(id)).content, `event ${id}`);
  }
  // fetch folds "." and ".." segments into the path: refused before anything is sent
  assert.equal((await mem.addEvent({ id: "..", content: "dots" })).id, "..");
  for (const id of [".", ".."]) {
    const refused = await mem.getEvent(id).catch((e) => e);
    assert.ok(refused instanceof InvalidInput, String(refused));
    assert.match(refused.message, /^id /);
  }
  const refused = await mem
    .withNamespace("..")
    .heads()
    .catch((e) => e);
  assert.ok(
    refused instanceof InvalidInput && /^namespace /.test(refused.message),
    String(refused),
  );
});

test("lists follow every page", { skip }, async () => {
  const events = [{ id: "p0", content: "0" }];
  for (let i = 1; i < 1203; i++) events.push({ id: `p${i}`, parent: `p${i - 1}`, content: `${i}` });
  await mem.addEvents(events);
  const path = await mem.path("p1202");
  assert.equal(path.length, 1203);
  assert.equal(path[1202]?.id, "p1202");
});

test("problems become typed errors", { skip }, async () => {
  const missing = await mem.getEvent("u9").catch((e) => e);
  assert.ok(missing instanceof NotFoundError, String(missing));
  assert.ok(missing instanceof BranchmemError);
  assert.equal(missing.code, "not_found");
  assert.equal(missing.status, 404);
  assert.match(missing.message, /u9/);

  const badK = await mem.search("x", "u2b", { k: -3 }).catch((e) => e);
  assert.ok(badK instanceof InvalidInput, String(badK));
  assert.equal(badK.code, "invalid_input");
  assert.match(badK.detail, /\bk\b/);

  await mem.addEvent({ id: "c1", content: "first" });
  const clash = await mem.addEvent({ id: "c1", content: "something else" }).catch((e) => e);
  assert.ok(clash instanceof ConflictError, String(clash));
  assert.equal(clash.status, 409);

  const stranger = new Client(url, { apiKey: "bm_nosuchkey_secret", namespace });
  const unauthorized = await stranger.visible("u2b").catch((e) => e);
  assert.ok(unauthorized instanceof Unauthorized, String(unauthorized));
  assert.equal(unauthorized.status, 401);

  const elsewhere = await mem
    .withNamespace(`${namespace}-other`)
    .visible("u2b")
    .catch((e) => e);
  assert.ok(elsewhere instanceof Forbidden, String(elsewhere));
  assert.equal(elsewhere.code, "forbidden");

  const nobody = new Client("http://127.0.0.1:9", { apiKey, namespace });
  const down = await nobody.heads().catch((e) => e);
  assert.ok(down instanceof Unavailable, String(down));
  assert.equal(down.code, "unavailable");
});

test("every other method answers in the documented shape", { skip }, async () => {
  const ns = mem.withNamespace(namespace); // the same server and key
  await ns.addEvents([
    { id: "h1", content: "I like tea." },
    { id: "h2", parent: "h1", content: "Actually, coffee." },
    { id: "h2b", parent: "h1", content: "Actually, green tea." },
  ]);
  await ns.addRecords([
    { id: "drink-1", sources: ["h2"], content: "likes coffee", key: "drink" },
    { id: "drink-2", sources: ["h2"], content: "likes strong coffee", key: "drink" },
  ]);
  await ns.supersede("drink-2", "drink-1");
  assert.deepEqual(
    (await ns.visible("h2", { key: "drink" })).map((r) => r.id),
    ["drink-2"],
  );
  assert.deepEqual(
    (await ns.visible("h2", { key: "drink", include_superseded: true })).map((r) => r.id).sort(),
    ["drink-1", "drink-2"],
  );
  await ns.retract({ id: "no-drink", sources: ["h2"], targets: ["drink-2"], reason: "test" });
  assert.deepEqual(
    (await ns.visible("h2", { key: "drink" })).map((r) => r.id),
    [],
  );
  await ns.withdraw("no-drink", "changed my mind");
  assert.deepEqual(
    (await ns.visible("h2", { key: "drink" })).map((r) => r.id),
    ["drink-2"],
  );
  await ns.restore("no-drink");
  assert.deepEqual(
    (await ns.visible("h2", { key: "drink" })).map((r) => r.id),
    [],
  );

  await ns.setHead("h2b");
  assert.equal(await ns.head("h1"), "h2b");
  assert.equal((await ns.heads()).h1, "h2b");
  assert.ok((await ns.conversations()).some((c) => c.tree === "h1" && c.head === "h2b"));
  assert.ok((await ns.trees()).some((t) => t.tree === "h1"));
  const tree = await ns.treeEvents("h1");
  assert.deepEqual(tree.events.map((e) => e.id).sort(), ["h1", "h2", "h2b"]);
  assert.equal(tree.head, "h2b");
  const views = await ns.recordViews("h2b", { tree: "h1" });
  assert.ok(views.some((v) => v.explanation.record_id === "drink-2" && !v.explanation.visible));
  assert.deepEqual(views.find((v) => v.explanation.record_id === "drink-2")?.tree_sources, ["h2"]);
  const why = await ns.explanations("h2b");
  assert.ok(why.some((e) => e.record_id === "drink-2" && e.reason === "off_path"));

  assert.deepEqual(await ns.dependents("h2"), ["drink-1", "drink-2", "no-drink"]);
  await ns.context("h2", { session: "s1" });
  assert.equal((await ns.deliveries("s1")).length, 1);
  assert.ok(Array.isArray(await ns.staleDeliveries("s1", "h2b")));
  assert.ok(Array.isArray(await ns.stale("h2")));
  assert.ok(Array.isArray(await ns.repairQueue()));
  assert.ok(
    (await ns.audit({ id: "drink-2" })).some((a) => a.op === "supersede"),
    "audit",
  );
  assert.equal(typeof (await ns.report()), "object");

  const bytes = await readFile(
    new URL("../../../tests/fixtures/importers/chatgpt-conversations.json", import.meta.url),
  );
  const summary = await ns.importData(bytes, { filename: "conversations.json" });
  assert.equal(summary.format, "chatgpt");
  assert.ok(summary.imported >= 1 && summary.failed === 0, JSON.stringify(summary));
});

test("healthz and whoami", { skip }, async () => {
  assert.equal((await mem.health()).status, "ok");
  const who = await mem.whoami();
  assert.deepEqual(who.namespaces, [namespace]);
});

// The Chengdu story again (the first test wrote it): as_of, a cited context and its blame,
// then diff and promote, which change what the Hangzhou branch remembers.
test("as_of reads the memory as it stood then", { skip }, async () => {
  const hangzhou = await mem.getRecord("city-2");
  assert.ok(typeof hangzhou.seq === "number" && hangzhou.seq > 0, JSON.stringify(hangzhou));
  const before = hangzhou.seq - 1;
  assert.deepEqual(
    (await mem.visible("u2b", { as_of: before })).map((r) => r.id),
    [],
  );
  assert.deepEqual(
    (await mem.visible("u2b", { as_of: hangzhou.seq })).map((r) => r.id),
    ["city-2"],
  );
  assert.deepEqual(
    (await mem.visible("u2b", { as_of: new Date().toISOString() })).map((r) => r.id),
    ["city-2"],
  );
  assert.equal(await mem.current("city", "u2b", { as_of: before }), null);
  assert.equal((await mem.current("city", "u2b", { as_of: hangzhou.seq }))?.id, "city-2");
  assert.deepEqual((await mem.context("u2b", { as_of: before })).items, []);
  assert.deepEqual(await mem.search("Hangzhou", "u2b", { as_of: before }), []);
  assert.deepEqual(
    (await mem.search("Hangzhou", "u2b", { as_of: hangzhou.seq })).map((h) => h.record.id),
    ["city-2"],
  );
  const bad = await mem.visible("u2b", { as_of: "yesterday" }).catch((e) => e);
  assert.ok(bad instanceof InvalidInput, String(bad));
  assert.match(bad.detail, /as_of/);
});

test("a cited context is blamed back to its messages", { skip }, async () => {
  const context = await mem.context("u2b", { cite: true, session: "cited" });
  assert.match(context.text, /moving to Hangzhou \[1\]/);
  assert.deepEqual(
    context.citations?.map((c) => [c.marker, c.record_id, c.messages, c.trees]),
    [[1, "city-2", ["u2b"], ["u1"]]],
  );
  assert.equal(typeof context.delivery, "number");
  const delivery = context.delivery ?? -1;
  const blame = await mem.blame("cited", delivery);
  assert.equal(blame.anchor, "u2b");
  assert.equal(blame.tree, "u1");
  assert.deepEqual(blame.path, ["u1", "u2b"]);
  assert.deepEqual(
    blame.lines.map((l) => [l.line, l.record_id, l.text]),
    [[1, "city-2", "moving to Hangzhou"]],
  );
  const [message] = blame.lines[0]?.messages ?? [];
  assert.equal(message?.id, "u2b");
  assert.equal(message?.on_path, true);
  assert.equal((await mem.blame("cited", delivery, 1)).lines.length, 1);
  const missing = await mem.blame("cited", delivery + 1000).catch((e) => e);
  assert.ok(missing instanceof NotFoundError, String(missing));

  assert.deepEqual(
    (await mem.deliveries("cited")).map((d) => d.seq),
    [delivery],
  );
  assert.deepEqual(await mem.deliveries("cited", { as_of: delivery - 1 }), []);
});

test("diff names what differs; promote carries Chengdu over", { skip }, async () => {
  const diff = await mem.diff("u2", "u2b");
  assert.deepEqual(
    diff.only_a?.map((e) => [e.record.id, e.reason, e.source, e.fork]),
    [["city-1", "off_path", "u2", "u1"]],
  );
  assert.deepEqual(
    diff.only_b?.map((e) => e.record.id),
    ["city-2"],
  );
  assert.deepEqual(
    diff.keys?.map((k) => [k.key, k.a?.id, k.b?.id]),
    [["city", "city-1", "city-2"]],
  );

  const copy = await mem.promote("city-1", { onto: "u2b" });
  assert.equal(copy.id, "city-1~u2b");
  assert.equal(copy.content, "moving to Chengdu");
  assert.deepEqual(copy.sources, ["u2b"]);
  assert.deepEqual(copy.meta?.copied_from, { id: "city-1", revision: 1 });
  assert.equal((await mem.promote("city-1", { onto: "u2b" })).id, copy.id); // a repeat
  assert.equal((await mem.current("city", "u2b"))?.id, "city-1~u2b");
  assert.equal((await mem.current("city", "u2"))?.id, "city-1"); // the original is untouched
  assert.deepEqual(
    (await mem.diff("u2", "u2b")).keys?.map((k) => [k.key, k.a?.id, k.b?.id]),
    [["city", "city-1", "city-1~u2b"]],
  );
  const nowhere = await mem.promote("city-1", { onto: null }).catch((e) => e);
  assert.ok(nowhere instanceof InvalidInput, String(nowhere));
  const noEvent = await mem.promote("city-1", { onto: "u404" }).catch((e) => e);
  assert.ok(noEvent instanceof NotFoundError, String(noEvent));
});

test("forget erases with a receipt that verifies", { skip }, async () => {
  await mem.addEvent({ id: "f1", content: "My locker code is 4711." });
  await mem.addEvent({ id: "f2", parent: "f1", content: "Thanks." });
  await mem.addRecord({ id: "locker", sources: ["f1"], content: "locker code: 4711" });

  const dry = await mem.forget("message", "f1", { dry_run: true });
  assert.equal(dry.dry_run, true);
  assert.deepEqual(dry.erased.events, ["f1"]);
  assert.deepEqual(dry.erased.records, ["locker"]);
  assert.equal((await mem.getRecord("locker")).content, "locker code: 4711"); // nothing went

  const receipt = await mem.forget("message", "f1");
  assert.equal(receipt.dry_run, false);
  assert.equal(receipt.namespace, namespace);
  assert.equal(receipt.kind, "message");
  assert.equal(receipt.target, "f1");
  assert.deepEqual(receipt.erased.records, ["locker"]);
  assert.equal(receipt.check.clean, true, JSON.stringify(receipt.check));
  assert.match(receipt.content_hash, /^sha256:/);
  assert.equal((await mem.getEvent("f1")).content, "");
  assert.equal((await mem.getEvent("f2")).content, "Thanks."); // a message, not the branch
  assert.ok((await mem.audit({ op: "forget" })).some((a) => a.reason === receipt.content_hash));

  const check = await mem.verifyReceipt(receipt);
  assert.deepEqual(
    [check.ok, check.hash_matches, check.in_audit, check.reappeared],
    [true, true, true, []],
  );
  assert.equal(check.content_hash, receipt.content_hash);
  const forged = await mem.verifyReceipt({ ...receipt, target: "f2" });
  assert.equal(forged.hash_matches, false);
  assert.equal(forged.ok, false);

  const unknown = await mem.forget("everything", "f1").catch((e) => e);
  assert.ok(unknown instanceof InvalidInput, String(unknown));
  assert.match(unknown.detail, /kind/);
});
