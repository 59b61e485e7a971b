/** TypeScript client of the agent memory service (its /v1 API), on fetch alone. */
export {
  DEFAULT_BASE_URL,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_MS,
  ENV_API_KEY,
  ENV_BASE_URL,
  MemoryClient,
  NO_RETRIES,
  newEventId,
  retryAfterSeconds,
} from "./client.js";
export type { MemoryClientOptions, RetryPolicy } from "./client.js";
export {
  Conflict,
  errorFor,
  Gone,
  HeadersTooLarge,
  InvalidRequest,
  MemoryServiceError,
  MethodNotAllowed,
  NotAcceptable,
  NotFound,
  PayloadTooLarge,
  PermissionDenied,
  RequestTimeout,
  ServerError,
  StoreUnavailable,
  Throttled,
  TransportError,
  Unauthenticated,
  UnsupportedMediaType,
  UriTooLong,
} from "./errors.js";
export type { ErrorDetails, FieldErrors } from "./errors.js";
export type * from "./types.js";
