/**
 * A thin, typed wrapper over the generated schema (`schema.ts`, from docs/openapi.json).
 *
 * Every call goes through openapi-fetch with a path literal of the generated `paths`, so the
 * compiler refuses a route, parameter or body field the OpenAPI document does not have. The
 * wrapper adds what a generator cannot know: Python's method names (camelCase), one bound
 * namespace, the key header, following every page of a list (as `branchmem.Client` does),
 * and typed errors for problem answers.
 */

import createClient, { type Client as FetchClient } from "openapi-fetch";

import { BranchmemError, InvalidInput, problemError, Unavailable } from "./errors.js";
import type { components, operations, paths } from "./schema.js";

export type Schemas = components["schemas"];
export type Event = Schemas["Event"];
/** `Record` in Python; renamed so it does not shadow TypeScript's `Record`. */
export type MemoryRecord = Schemas["Record"];
export type Explanation = Schemas["Explanation"];
export type Hit = Schemas["Hit"];
export type Context = Schemas["Context"];
export type Conversation = Schemas["Conversation"];
export type AuditEntry = Schemas["AuditEntry"];
export type Delivery = Schemas["Delivery"];
export type StaleDelivery = Schemas["StaleDelivery"];
export type RepairItem = Schemas["RepairItem"];
export type RecordView = Schemas["RecordView"];
export type TreeSummary = Schemas["TreeSummary"];
export type TreeEvents = Schemas["TreeEvents"];
/** @deprecated renamed `TreeEvents` (as in Python). */
export type TreeOut = TreeEvents;
/** What `forget` erased (or would erase); `verifyReceipt` takes it back as it came. */
export type Receipt = Schemas["Receipt-Output"];
export type ReceiptCheck = Schemas["ReceiptCheck"];
export type ByteCheck = Schemas["ByteCheck-Output"];
export type Shown = Schemas["Shown-Output"];
export type Diff = Schemas["Diff"];
export type DiffEntry = Schemas["DiffEntry"];
export type KeyChange = Schemas["KeyChange"];
export type Citation = Schemas["Citation"];
export type Blame = Schemas["Blame"];
export type BlamedLine = Schemas["BlamedLine"];
export type BlamedMessage = Schemas["BlamedMessage"];
export type ImportSummary = Schemas["ImportSummary"];
export type WhoAmI = Schemas["WhoAmI"];
export type AddEventIn = Schemas["AddEventIn"];
export type AddRecordIn = Schemas["AddRecordIn"];
export type ReviseIn = Schemas["ReviseIn"];
export type RetractIn = Schemas["RetractIn"];
export type ContextIn = Schemas["ContextIn"];
export type ForgetIn = Schemas["ForgetIn"];
export type PromoteIn = Schemas["PromoteIn"];
export type VerifyReceiptIn = Schemas["VerifyReceiptIn"];

/** The query options of an operation, less paging (the client follows every page). */
type QueryOf<O extends keyof operations> = NonNullable<operations[O]["parameters"]["query"]>;
type Options<O extends keyof operations, Given extends string = never> = Omit<
  QueryOf<O>,
  "limit" | "cursor" | Given
>;

export type VisibleOptions = Options<"visible_v1_ns__namespace__visible_get", "anchor">;
export type ExplainOptions = Options<
  "explain_v1_ns__namespace__records__record_id__explain_get",
  "anchor"
>;
export type CurrentOptions = Options<"current_v1_ns__namespace__current_get", "key" | "anchor">;
export type StaleOptions = Options<"stale_v1_ns__namespace__stale_get", "anchor">;
export type SearchOptions = Options<"search_v1_ns__namespace__search_get", "query" | "anchor">;
export type AuditOptions = Options<"audit_v1_ns__namespace__audit_get">;
export type DiffOptions = Options<"diff_v1_ns__namespace__diff_get", "anchor_a" | "anchor_b">;
export type DeliveriesOptions = Options<"deliveries_v1_ns__namespace__deliveries_get", "session">;
export type RecordViewsOptions = Options<
  "record_views_v1_ns__namespace__explanations_get",
  "anchor"
>;
export type ExplanationsOptions = Omit<RecordViewsOptions, "tree">;
export type ImportOptions = Options<"import_export_v1_ns__namespace__import_post">;

export interface ClientOptions {
  /** `bm_<key id>_<secret>`; sent as `Authorization: Bearer`. Omit for `serve --no-auth`. */
  apiKey?: string;
  /** The namespace every call acts in (`default` as in Python); see `withNamespace`. */
  namespace?: string;
  /** A `fetch` to use instead of the global one (a proxy agent, a test double). */
  fetch?: typeof globalThis.fetch;
}

/** The largest page the service gives: a list of up to 1,000 items is one request. */
const PAGE = 1000;

/**
 * One path segment, percent-encoded (ids like `a/b`, `搬家` and `100%` are ids like any
 * other). `.` and `..` cannot be sent: fetch parses every URL by the WHATWG rules, which
 * fold such a segment into the path (`%2E` too, so encoding cannot help) and the request
 * would reach another route. They are refused before sending; the Python client and curl
 * can still address them.
 */
export function segment(value: string, field = "id"): string {
  if (value === "." || value === "..") {
    throw new InvalidInput({
      type: "https://branchmem.dev/problems/invalid_input",
      title: "invalid input",
      status: 422,
      detail:
        `${field} ${JSON.stringify(value)} cannot be sent as a URL path segment from ` +
        "JavaScript (fetch folds '.' and '..' segments); use the Python client for it",
      code: "invalid_input",
    });
  }
  return encodeURIComponent(value);
}

function pathSerializer(pathname: string, params: Record<string, unknown>): string {
  return pathname.replace(/\{([^}]+)\}/g, (match, name: string) => {
    const value = params[name];
    return value === undefined || value === null ? match : segment(String(value), name);
  });
}

interface Answer<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** The branchmem service, one namespace at a time. */
export class Client {
  /** The generated openapi-fetch client, for a route the wrapper does not name. */
  readonly http: FetchClient<paths>;
  readonly baseUrl: string;
  readonly namespace: string;
  private readonly options: ClientOptions;

  constructor(baseUrl: string, options: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.namespace = options.namespace ?? "default";
    this.options = options;
    const headers: Record<string, string> = {};
    if (options.apiKey !== undefined) headers.Authorization = `Bearer ${options.apiKey}`;
    this.http = createClient<paths>({
      baseUrl: this.baseUrl,
      headers,
      pathSerializer,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  /** The same server and key, acting in another namespace. */
  withNamespace(namespace: string): Client {
    return new Client(this.baseUrl, { ...this.options, namespace });
  }

  private get ns(): { namespace: string } {
    return { namespace: this.namespace };
  }

  /** The answer's data, or the problem as a typed error; no server reached is `Unavailable`. */
  private async call<D>(pending: Promise<Answer<D>>): Promise<D> {
    let answer: Answer<D>;
    try {
      answer = await pending;
    } catch (error) {
      if (error instanceof BranchmemError || !(error instanceof TypeError)) throw error;
      throw new Unavailable({
        type: "https://branchmem.dev/problems/unavailable",
        title: "unavailable",
        status: 503,
        detail: `${this.baseUrl}: no answer (${error.message}); the request may or may not have been applied`,
        code: "unavailable",
        cause: String(error.cause ?? error),
      });
    }
    if (!answer.response.ok) throw problemError(answer.response.status, answer.error);
    return answer.data as D;
  }

  /** Every item of a paged list, one request per 1,000. */
  private async pages<T>(
    page: (cursor: string | undefined) => Promise<Answer<Page<T>>>,
  ): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    for (;;) {
      const data = await this.call(page(cursor));
      items.push(...data.items);
      if (!data.next_cursor) return items;
      cursor = data.next_cursor;
    }
  }

  // -- the service --------------------------------------------------------------------

  /** `GET /healthz`: `{status, version}`, no key needed. */
  health(): Promise<Record<string, string>> {
    return this.call(this.http.GET("/healthz"));
  }

  /** The key's tenant and namespace bindings. */
  whoami(): Promise<WhoAmI> {
    return this.call(this.http.GET("/v1/whoami"));
  }

  /** `GET /v1/namespaces`: every namespace something was written to that the key may read. */
  async namespaces(): Promise<string[]> {
    const data = await this.call(this.http.GET("/v1/namespaces"));
    return data.namespaces;
  }

  // -- events and heads ---------------------------------------------------------------

  /** `Memory.add_event`: a child may arrive before its parent (it stays detached). */
  addEvent(event: AddEventIn): Promise<Event> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/events", { params: { path: this.ns }, body: event }),
    );
  }

  addEvents(events: AddEventIn[]): Promise<Event[]> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/events/batch", {
        params: { path: this.ns },
        body: { events },
      }),
    );
  }

  getEvent(id: string): Promise<Event> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/events/{id}", { params: { path: { ...this.ns, id } } }),
    );
  }

  /** The events from the root down to `anchor`. */
  path(anchor: string): Promise<Event[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/events/{anchor}/path", {
        params: { path: { ...this.ns, anchor }, query: { limit: PAGE, cursor } },
      }),
    );
  }

  async setHead(eventId: string): Promise<void> {
    await this.call(
      this.http.POST("/v1/ns/{namespace}/heads", {
        params: { path: this.ns },
        body: { event_id: eventId },
      }),
    );
  }

  async head(tree: string): Promise<string | null> {
    const data = await this.call(
      this.http.GET("/v1/ns/{namespace}/heads/{tree}", { params: { path: { ...this.ns, tree } } }),
    );
    return data.head;
  }

  async heads(): Promise<Record<string, string>> {
    const data = await this.call(
      this.http.GET("/v1/ns/{namespace}/heads", { params: { path: this.ns } }),
    );
    return data.heads;
  }

  conversations(): Promise<Conversation[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/conversations", {
        params: { path: this.ns, query: { limit: PAGE, cursor } },
      }),
    );
  }

  // -- records ------------------------------------------------------------------------

  /** `Memory.add_record`: `sources` is required (`[]` is global, `null` legacy). */
  addRecord(record: AddRecordIn): Promise<MemoryRecord> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/records", { params: { path: this.ns }, body: record }),
    );
  }

  addRecords(records: AddRecordIn[]): Promise<MemoryRecord[]> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/records/batch", {
        params: { path: this.ns },
        body: { records },
      }),
    );
  }

  /** A new revision; without `sources` the record keeps its current ones. */
  revise(id: string, revision: ReviseIn): Promise<MemoryRecord> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/records/{id}/revisions", {
        params: { path: { ...this.ns, id } },
        body: revision,
      }),
    );
  }

  getRecord(id: string, options: { revision?: number } = {}): Promise<MemoryRecord> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/records/{id}", {
        params: { path: { ...this.ns, id }, query: options },
      }),
    );
  }

  async supersede(newId: string, oldId: string): Promise<void> {
    await this.call(
      this.http.POST("/v1/ns/{namespace}/supersede", {
        params: { path: this.ns },
        body: { new_id: newId, old_id: oldId },
      }),
    );
  }

  /** A retraction record; a branch-scope one needs its sources (its placement). */
  retract(retraction: RetractIn): Promise<MemoryRecord> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/retractions", {
        params: { path: this.ns },
        body: retraction,
      }),
    );
  }

  async withdraw(id: string, reason = ""): Promise<void> {
    await this.call(
      this.http.POST("/v1/ns/{namespace}/items/{id}/withdraw", {
        params: { path: { ...this.ns, id } },
        body: { reason },
      }),
    );
  }

  async restore(id: string): Promise<void> {
    await this.call(
      this.http.POST("/v1/ns/{namespace}/items/{id}/restore", {
        params: { path: { ...this.ns, id } },
      }),
    );
  }

  /** Erases the item and what was derived from it; the ids erased. */
  async erase(id: string, reason = ""): Promise<string[]> {
    const data = await this.call(
      this.http.POST("/v1/ns/{namespace}/items/{id}/erase", {
        params: { path: { ...this.ns, id } },
        body: { reason },
      }),
    );
    return data.erased;
  }

  dependents(id: string): Promise<string[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/items/{id}/dependents", {
        params: { path: { ...this.ns, id }, query: { limit: PAGE, cursor } },
      }),
    );
  }

  // -- forget and receipts ------------------------------------------------------------

  /**
   * Erases a `message` (event id), a `branch` (an event and every event below it), a
   * `conversation` (tree id) or a `subject` (records whose key, scope or a meta value names
   * the id), with everything built on them; the receipt lists what went, the sessions shown
   * it and a byte check of the store. `dry_run`: what would go, nothing erased or recorded.
   */
  forget(
    kind: ForgetIn["kind"],
    id: string,
    options: Omit<ForgetIn, "kind" | "id"> = {},
  ): Promise<Receipt> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/forget", {
        params: { path: this.ns },
        body: { ...options, kind, id },
      }),
    );
  }

  /** Re-checks a `forget` receipt: its hash, the audit log, the ids, the stored bytes. */
  verifyReceipt(receipt: Receipt | VerifyReceiptIn["receipt"]): Promise<ReceiptCheck> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/receipts/verify", {
        params: { path: this.ns },
        body: { receipt },
      }),
    );
  }

  // -- views --------------------------------------------------------------------------

  /**
   * The records visible at `anchor` (`null`: no anchor, which shows nothing in strict mode),
   * in path order; `as_of` (a seq or an ISO 8601 time): as the memory stood then.
   */
  visible(anchor: string | null, options: VisibleOptions = {}): Promise<MemoryRecord[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/visible", {
        params: { path: this.ns, query: { ...options, anchor, limit: PAGE, cursor } },
      }),
    );
  }

  /** Visible or hidden at `anchor`, and why (`reason`, e.g. `off_path`). */
  explain(
    recordId: string,
    anchor: string | null,
    options: ExplainOptions = {},
  ): Promise<Explanation> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/records/{record_id}/explain", {
        params: { path: { ...this.ns, record_id: recordId }, query: { ...options, anchor } },
      }),
    );
  }

  /** The value of `key` that holds at `anchor` (`as_of`: held then), or `null`. */
  async current(
    key: string,
    anchor: string | null,
    options: CurrentOptions = {},
  ): Promise<MemoryRecord | null> {
    const data = await this.call(
      this.http.GET("/v1/ns/{namespace}/current", {
        params: { path: this.ns, query: { ...options, key, anchor } },
      }),
    );
    return data ?? null;
  }

  stale(anchor: string | null, options: StaleOptions = {}): Promise<MemoryRecord[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/stale", {
        params: { path: this.ns, query: { ...options, anchor, limit: PAGE, cursor } },
      }),
    );
  }

  /**
   * Records visible at one anchor and not the other, with why (`off_path` with its `source`
   * and `fork`, `superseded`, `retracted`, `stale`, or `revised`), and the keys whose current
   * value differs. Nothing is written.
   */
  diff(anchorA: string, anchorB: string, options: DiffOptions = {}): Promise<Diff> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/diff", {
        params: { path: this.ns, query: { ...options, anchor_a: anchorA, anchor_b: anchorB } },
      }),
    );
  }

  /**
   * Copies a record onto the branch of event `onto` as a new record citing only `onto` (id
   * `RECORD~ONTO` unless `id` is given; `meta.copied_from` names the original, which is
   * untouched). A repeat with the same arguments answers the copy already written.
   */
  promote(recordId: string, options: PromoteIn): Promise<MemoryRecord> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/records/{record_id}/promote", {
        params: { path: { ...this.ns, record_id: recordId } },
        body: options,
      }),
    );
  }

  /**
   * The best visible matches for `query` at `anchor` (bounded by `k`, not paged); `as_of`
   * (a seq or an ISO 8601 time): among the records as they stood then.
   */
  search(query: string, anchor: string | null, options: SearchOptions = {}): Promise<Hit[]> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/search", {
        params: { path: this.ns, query: { ...options, query, anchor } },
      }),
    );
  }

  /**
   * The prompt text at `anchor` within the token budget; with a `session`, remembered (a
   * delivery, so a write; its seq is `delivery`, what `blame` takes); with `cite`, each memory
   * line marked `[n]` and its record and messages listed in `citations`; `as_of`: the prompt
   * as it stood then (never delivered: no session with it).
   */
  context(anchor: string | null, options: Omit<ContextIn, "anchor"> = {}): Promise<Context> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/context", {
        params: { path: this.ns },
        body: { ...options, anchor },
      }),
    );
  }

  /** What `context(..., { session })` handed out (`as_of`: by then), oldest first (ids only). */
  deliveries(session: string, options: DeliveriesOptions = {}): Promise<Delivery[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/deliveries", {
        params: { path: this.ns, query: { ...options, session, limit: PAGE, cursor } },
      }),
    );
  }

  staleDeliveries(session: string, anchor: string | null = null): Promise<StaleDelivery[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/stale-deliveries", {
        params: { path: this.ns, query: { session, anchor, limit: PAGE, cursor } },
      }),
    );
  }

  /**
   * Delivery `delivery` (its `seq`, `Context.delivery`) of `session` (or its memory line
   * `[line]`) traced back to its records, their source messages and the branch it was given on.
   */
  blame(session: string, delivery: number, line: number | null = null): Promise<Blame> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/blame", {
        params: { path: this.ns, query: { session, delivery, line } },
      }),
    );
  }

  repairQueue(): Promise<RepairItem[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/repair-queue", {
        params: { path: this.ns, query: { limit: PAGE, cursor } },
      }),
    );
  }

  report(): Promise<Record<string, unknown>> {
    return this.call(this.http.GET("/v1/ns/{namespace}/report", { params: { path: this.ns } }));
  }

  audit(options: AuditOptions = {}): Promise<AuditEntry[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/audit", {
        params: { path: this.ns, query: { ...options, limit: PAGE, cursor } },
      }),
    );
  }

  history(recordId: string): Promise<Record<string, unknown>[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/records/{record_id}/history", {
        params: { path: { ...this.ns, record_id: recordId }, query: { limit: PAGE, cursor } },
      }),
    );
  }

  // -- imports and the explorer's reads ------------------------------------------------

  /** `POST /import`: an export's bytes (ChatGPT, Claude, ...), as `branchmem import` takes. */
  importData(
    data: Uint8Array | ArrayBuffer | Blob | string,
    options: ImportOptions = {},
  ): Promise<ImportSummary> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/import", {
        params: { path: this.ns, query: options },
        body: data as unknown as string,
        bodySerializer: (body: unknown) => body as BodyInit,
        headers: { "Content-Type": "application/octet-stream" },
      }),
    );
  }

  /** Every tree with its roots, size and head, by tree id. */
  trees(): Promise<TreeSummary[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/trees", {
        params: { path: this.ns, query: { limit: PAGE, cursor } },
      }),
    );
  }

  /** One tree's attached events in arrival order, and its head. */
  treeEvents(tree: string): Promise<TreeEvents> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/trees/{tree}", { params: { path: { ...this.ns, tree } } }),
    );
  }

  /** @deprecated renamed `treeEvents` (Python's `tree_events`). */
  tree(tree: string): Promise<TreeEvents> {
    return this.treeEvents(tree);
  }

  /**
   * Every record decided at `anchor` with its text, by id, from one snapshot; with `tree`,
   * only those built from it, each with the tree's events it draws on (`tree_sources`).
   */
  recordViews(anchor: string | null, options: RecordViewsOptions = {}): Promise<RecordView[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/explanations", {
        params: { path: this.ns, query: { ...options, anchor, limit: PAGE, cursor } },
      }),
    );
  }

  /** `explain` for every record of the namespace at once (`recordViews`' explanations). */
  async explanations(
    anchor: string | null,
    options: ExplanationsOptions = {},
  ): Promise<Explanation[]> {
    return (await this.recordViews(anchor, options)).map((view) => view.explanation);
  }
}
