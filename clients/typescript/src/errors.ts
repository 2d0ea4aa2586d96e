/**
 * Typed errors for the service's `application/problem+json` answers.
 *
 * Every problem carries a `code`: the `.code` of the `branchmem.errors` class the library
 * raised, or one of the service's own. Each code has a class here, named as in Python where
 * Python has one, so a caller branches with `instanceof` (or on `.code`) as a Python caller
 * does with `except`. `PROBLEM_STATUS` mirrors `STATUS` in `branchmem/server/problems.py`;
 * a test fails when the two disagree.
 */

/** The problem codes the service answers with, and the HTTP status of each. */
export const PROBLEM_STATUS = {
  invalid_input: 422,
  import_format: 422,
  malformed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  cycle: 409,
  erased: 410,
  too_large: 413,
  unsupported_media_type: 415,
  embedder_unavailable: 501,
  not_implemented: 501,
  missing_extra: 501,
  storage: 503,
  schema_version: 503,
  unavailable: 503,
  memory_not_visible: 404,
  memory_unknown: 404,
  ambiguous_head: 422,
  unsupported_saver: 422,
  missing_anchor: 422,
  checkpoint_not_mirrored: 409,
  error: 400,
  internal: 500,
} as const;

export type ProblemCode = keyof typeof PROBLEM_STATUS;

/** An RFC 9457 problem as the service writes it (extra members kept as they came). */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  [member: string]: unknown;
}

/** Base of every error the client throws; `code` is the problem's code as received. */
export class BranchmemError extends Error {
  readonly code: string;
  readonly status: number;
  readonly detail: string;
  readonly problem: Problem;

  constructor(problem: Problem) {
    super(problem.detail);
    this.name = new.target.name;
    this.code = problem.code;
    this.status = problem.status;
    this.detail = problem.detail;
    this.problem = problem;
  }
}

/** An argument is malformed: wrong type, out of range, unknown field (422). */
export class InvalidInput extends BranchmemError {}
/** The request body is not JSON (400). */
export class Malformed extends InvalidInput {}
/** A body or upload over the server's limits (413). */
export class TooLarge extends InvalidInput {}
/** An import whose bytes are no export format branchmem reads (422). */
export class ImportFormatError extends InvalidInput {}
/** A body sent with a media type the route does not take (415). */
export class UnsupportedMediaType extends InvalidInput {}
/** No such event, record or tree in the namespace (404). */
export class NotFoundError extends BranchmemError {}
/** An id already holds something different (409). */
export class ConflictError extends BranchmemError {}
/** The write would make a cycle of parents or supersessions (409). */
export class CycleError extends BranchmemError {}
/** The item was erased and its content is gone (410). */
export class ErasedError extends BranchmemError {}
/** The store failed or is unreachable (503). */
export class StorageError extends BranchmemError {}
/** The store's schema is not the one this server reads (503). */
export class SchemaVersionError extends StorageError {}
/** Search needs an embedder the server does not have (501). */
export class EmbedderUnavailable extends BranchmemError {}
/** The server lacks an optional extra the call needs (501). */
export class MissingExtra extends BranchmemError {}
/** The service itself refused or failed (500); base of its own refusals. */
export class ServiceError extends BranchmemError {}
/** No key, or a key the server does not know (401). */
export class Unauthorized extends ServiceError {}
/** The key is not bound to the namespace (403). */
export class Forbidden extends ServiceError {}
/** The route does not take this method (405). */
export class MethodNotAllowed extends ServiceError {}
/** The server's branchmem lacks the operation (501). */
export class NotImplementedError extends ServiceError {}
/** No worker answered: the request may or may not have been applied (503). */
export class Unavailable extends ServiceError {}
/** The Mem0 wrapper's memory does not exist or is not visible here (404). */
export class MemoryNotVisible extends NotFoundError {}
/** The Mem0 wrapper never wrote this memory: it has no history (404). */
export class UnknownMemory extends NotFoundError {}
/** The Mem0 wrapper's conversation has no head and several leaves to stand at (422). */
export class AmbiguousHead extends InvalidInput {}
/** The LangGraph saver keeps no checkpoint tree (422). */
export class UnsupportedSaver extends InvalidInput {}
/** A LangGraph store write has no checkpoint to be sourced at, in strict mode (422). */
export class MissingAnchor extends InvalidInput {}
/** The running LangGraph step's input checkpoint never reached the Memory (409). */
export class CheckpointNotMirrored extends BranchmemError {}

type ErrorClass = new (problem: Problem) => BranchmemError;

/** The class thrown for each code; the mapped type makes a missing code a compile error. */
export const ERROR_CLASSES: { readonly [C in ProblemCode]: ErrorClass } = {
  invalid_input: InvalidInput,
  import_format: ImportFormatError,
  malformed: Malformed,
  unauthorized: Unauthorized,
  forbidden: Forbidden,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowed,
  conflict: ConflictError,
  cycle: CycleError,
  erased: ErasedError,
  too_large: TooLarge,
  unsupported_media_type: UnsupportedMediaType,
  embedder_unavailable: EmbedderUnavailable,
  not_implemented: NotImplementedError,
  missing_extra: MissingExtra,
  storage: StorageError,
  schema_version: SchemaVersionError,
  unavailable: Unavailable,
  memory_not_visible: MemoryNotVisible,
  memory_unknown: UnknownMemory,
  ambiguous_head: AmbiguousHead,
  unsupported_saver: UnsupportedSaver,
  missing_anchor: MissingAnchor,
  checkpoint_not_mirrored: CheckpointNotMirrored,
  error: BranchmemError,
  internal: ServiceError,
};

function isCode(code: string): code is ProblemCode {
  return Object.prototype.hasOwnProperty.call(PROBLEM_STATUS, code);
}

/**
 * The error for an answer with status >= 400. A body that is not a problem (a proxy's HTML
 * page, say) still becomes a typed error, `internal` like an unknown code, as in Python.
 */
export function problemError(status: number, body: unknown): BranchmemError {
  const data = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  const code = typeof data.code === "string" && data.code ? data.code : "internal";
  const detail = typeof data.detail === "string" && data.detail ? data.detail : `HTTP ${status}`;
  const problem: Problem = {
    ...data,
    type: typeof data.type === "string" ? data.type : `https://branchmem.dev/problems/${code}`,
    title: typeof data.title === "string" ? data.title : code.replace(/_/g, " "),
    status,
    detail,
    code,
  };
  const Class = isCode(code) ? ERROR_CLASSES[code] : ServiceError;
  return new Class(problem);
}
