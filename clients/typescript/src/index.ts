/** `@branchmem/client`: the branchmem HTTP service from TypeScript / JavaScript. */
export * from "./client.js";
export * from "./errors.js";
export type { components, operations, paths } from "./schema.js";
