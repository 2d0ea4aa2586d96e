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
export type TreeOut = Schemas["TreeOut"];
export type ImportSummary = Schemas["ImportSummary"];
export type WhoAmI = Schemas["WhoAmI"];
export type AddEventIn = Schemas["AddEventIn"];
export type AddRecordIn = Schemas["AddRecordIn"];
export type ReviseIn = Schemas["ReviseIn"];
export type RetractIn = Schemas["RetractIn"];
export type ContextIn = Schemas["ContextIn"];

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
export type ExplanationsOptions = Options<
  "explanations_v1_ns__namespace__explanations_get",
  "anchor"
>;
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

  // -- views --------------------------------------------------------------------------

  /** The records visible at `anchor` (`null`: no anchor, which shows nothing in strict mode). */
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

  /** The latest visible record under `key` at `anchor`, or `null`. */
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

  /** The best visible matches for `query` at `anchor` (bounded by `k`, not paged). */
  search(query: string, anchor: string | null, options: SearchOptions = {}): Promise<Hit[]> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/search", {
        params: { path: this.ns, query: { ...options, query, anchor } },
      }),
    );
  }

  /** A prompt-ready context of what is visible at `anchor`; a delivery, so a write. */
  context(anchor: string | null, options: Omit<ContextIn, "anchor"> = {}): Promise<Context> {
    return this.call(
      this.http.POST("/v1/ns/{namespace}/context", {
        params: { path: this.ns },
        body: { ...options, anchor },
      }),
    );
  }

  deliveries(session: string): Promise<Delivery[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/deliveries", {
        params: { path: this.ns, query: { session, limit: PAGE, cursor } },
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

  // -- imports and the explorer's views ------------------------------------------------

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

  trees(): Promise<TreeSummary[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/trees", {
        params: { path: this.ns, query: { limit: PAGE, cursor } },
      }),
    );
  }

  tree(tree: string): Promise<TreeOut> {
    return this.call(
      this.http.GET("/v1/ns/{namespace}/trees/{tree}", { params: { path: { ...this.ns, tree } } }),
    );
  }

  /** `explain` for every record of the namespace at once (what the explorer shows). */
  explanations(anchor: string | null, options: ExplanationsOptions = {}): Promise<RecordView[]> {
    return this.pages((cursor) =>
      this.http.GET("/v1/ns/{namespace}/explanations", {
        params: { path: this.ns, query: { ...options, anchor, limit: PAGE, cursor } },
      }),
    );
  }
}
