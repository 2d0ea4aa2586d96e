// Problems to typed errors, without a server: a fetch that answers as a server or a proxy would.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  BranchmemError,
  Client,
  ERROR_CLASSES,
  InvalidInput,
  PROBLEM_STATUS,
  SchemaVersionError,
  ServiceError,
  StorageError,
  TooLarge,
  problemError,
} from "../dist/index.js";

function answering(status, body, type = "application/problem+json") {
  return async () => new Response(body, { status, headers: { "content-type": type } });
}

test("each problem code becomes its own class", () => {
  for (const [code, status] of Object.entries(PROBLEM_STATUS)) {
    const error = problemError(status, {
      code,
      detail: `a ${code}`,
      status,
      title: code,
      type: "t",
    });
    assert.ok(error instanceof ERROR_CLASSES[code], code);
    assert.ok(error instanceof BranchmemError);
    assert.equal(error.code, code);
    assert.equal(error.status, status);
    assert.equal(error.message, `a ${code}`);
  }
  assert.ok(problemError(413, { code: "too_large", detail: "x" }) instanceof InvalidInput);
  assert.ok(problemError(503, { code: "schema_version", detail: "x" }) instanceof StorageError);
});

test("an answer that is no problem is still a typed error", async () => {
  const proxy = new Client("http://proxy.invalid", {
    fetch: answering(502, "<html>bad gateway</html>", "text/html"),
  });
  const error = await proxy.visible("u1").catch((e) => e);
  assert.ok(error instanceof ServiceError, String(error));
  assert.equal(error.code, "internal");
  assert.equal(error.status, 502);
  assert.equal(error.message, "HTTP 502");

  const newer = new Client("http://x.invalid", {
    fetch: answering(
      418,
      JSON.stringify({ code: "teapot", detail: "a newer server's code", extra: 1 }),
    ),
  });
  const unknown = await newer.heads().catch((e) => e);
  assert.ok(unknown instanceof ServiceError && unknown.code === "teapot", String(unknown));
  assert.equal(unknown.problem.extra, 1);
});

test("the problem's own fields reach the caller", async () => {
  const body = {
    type: "https://branchmem.dev/problems/too_large",
    title: "too large",
    status: 413,
    detail: "body over 1 MiB",
    code: "too_large",
  };
  const server = new Client("http://x.invalid", { fetch: answering(413, JSON.stringify(body)) });
  const error = await server.addEvents([]).catch((e) => e);
  assert.ok(error instanceof TooLarge, String(error));
  assert.deepEqual(error.problem, body);
  const old = await new Client("http://x.invalid", {
    fetch: answering(503, JSON.stringify({ code: "schema_version", detail: "store is schema 9" })),
  })
    .report()
    .catch((e) => e);
  assert.ok(old instanceof SchemaVersionError && old.detail === "store is schema 9");
});
