/**
 * The service's one error shape, `{"error": {"code", "message", "fields"}}`, as exceptions.
 *
 * Branch on the class (chosen by `code`, then by HTTP status for a code this version does not
 * know) or on `.code`; never on `.message`, which is for people and may change.
 */
import type { ErrorCode } from "./types.js";

/** Problems by input field, e.g. `{"events.3.role": ["..."]}`. */
export type FieldErrors = Record<string, string[]>;

export interface ErrorDetails {
  status?: number | undefined;
  code?: string | undefined;
  fields?: FieldErrors | undefined;
  /** Seconds the answer's `Retry-After` asked to wait. */
  retryAfterSeconds?: number | undefined;
  /** The decoded error body (or its text when it was not JSON). */
  body?: unknown;
  cause?: unknown;
}

/** Any failed call: an error answer of the service, or no answer at all. */
export class MemoryServiceError extends Error {
  static readonly defaultCode: string = "error";
  /** The HTTP status; undefined when no answer came. */
  readonly status: number | undefined;
  /** The service's machine-readable code (an `ErrorCode`, or a newer one). */
  readonly code: ErrorCode | (string & {});
  readonly fields: FieldErrors;
  readonly retryAfterSeconds: number | undefined;
  readonly body: unknown;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.status = details.status;
    this.code = details.code || (new.target as typeof MemoryServiceError).defaultCode;
    this.fields = details.fields ?? {};
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.body = details.body;
  }
}

/** The service did not answer: connection refused or reset, DNS, CORS, or a timeout. */
export class TransportError extends MemoryServiceError {
  static override readonly defaultCode: string = "transport_error";
}

/** No answer within the client's `timeoutMs`. */
export class RequestTimeout extends TransportError {
  static override readonly defaultCode: string = "timeout";
}

/** 400 `invalid` (see `fields`) or `invalid_json`: nothing changed. */
export class InvalidRequest extends MemoryServiceError {
  static override readonly defaultCode: string = "invalid";
}

/** 401: no key, or an unknown or revoked one. */
export class Unauthenticated extends MemoryServiceError {
  static override readonly defaultCode: string = "unauthenticated";
}

/** 403: the key lacks the scope this operation needs. */
export class PermissionDenied extends MemoryServiceError {
  static override readonly defaultCode: string = "permission_denied";
}

/** 404: no such object in the key's tenant. */
export class NotFound extends MemoryServiceError {
  static override readonly defaultCode: string = "not_found";
}

export class MethodNotAllowed extends MemoryServiceError {
  static override readonly defaultCode: string = "method_not_allowed";
}

export class NotAcceptable extends MemoryServiceError {
  static override readonly defaultCode: string = "not_acceptable";
}

/** 409: the request contradicts stored state (e.g. `duplicate_event_id`: the same event id
 * with other content, or a session of another user). */
export class Conflict extends MemoryServiceError {
  static override readonly defaultCode: string = "conflict";
}

/** 410: the object was erased. */
export class Gone extends MemoryServiceError {
  static override readonly defaultCode: string = "gone";
}

export class PayloadTooLarge extends MemoryServiceError {
  static override readonly defaultCode: string = "payload_too_large";
}

export class UriTooLong extends MemoryServiceError {
  static override readonly defaultCode: string = "uri_too_long";
}

export class UnsupportedMediaType extends MemoryServiceError {
  static override readonly defaultCode: string = "unsupported_media_type";
}

/** 429: over the key's rate limit (retried by the client until its retries run out). */
export class Throttled extends MemoryServiceError {
  static override readonly defaultCode: string = "throttled";
}

export class HeadersTooLarge extends MemoryServiceError {
  static override readonly defaultCode: string = "headers_too_large";
}

/** 503: a store did not answer, or holds data of another layout; nothing was written
 * (retried by the client). */
export class StoreUnavailable extends MemoryServiceError {
  static override readonly defaultCode: string = "store_unavailable";
}

/** 500 (or another 5xx): a bug in the service; it has been logged there. */
export class ServerError extends MemoryServiceError {
  static override readonly defaultCode: string = "server_error";
}

type ErrorClass = typeof MemoryServiceError;

// Every code of the schema must be listed: a new code fails the type check until it is.
const BY_CODE = {
  invalid: InvalidRequest,
  invalid_json: InvalidRequest,
  unauthenticated: Unauthenticated,
  permission_denied: PermissionDenied,
  not_found: NotFound,
  method_not_allowed: MethodNotAllowed,
  not_acceptable: NotAcceptable,
  conflict: Conflict,
  already_decided: Conflict,
  duplicate: Conflict,
  duplicate_event_id: Conflict,
  user_gone: Conflict,
  repeats_card: Conflict,
  gone: Gone,
  payload_too_large: PayloadTooLarge,
  uri_too_long: UriTooLong,
  unsupported_media_type: UnsupportedMediaType,
  throttled: Throttled,
  headers_too_large: HeadersTooLarge,
  store_unavailable: StoreUnavailable,
  schema_mismatch: StoreUnavailable,
  embedding_mismatch: StoreUnavailable,
  server_error: ServerError,
  error: MemoryServiceError,
} as const satisfies Record<ErrorCode, ErrorClass>;

const BY_STATUS: Record<number, ErrorClass> = {
  400: InvalidRequest,
  401: Unauthenticated,
  403: PermissionDenied,
  404: NotFound,
  405: MethodNotAllowed,
  406: NotAcceptable,
  409: Conflict,
  410: Gone,
  413: PayloadTooLarge,
  414: UriTooLong,
  415: UnsupportedMediaType,
  429: Throttled,
  431: HeadersTooLarge,
  503: StoreUnavailable,
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fieldErrors(value: unknown): FieldErrors | undefined {
  if (!isRecord(value)) return undefined;
  const fields: FieldErrors = {};
  for (const [key, problems] of Object.entries(value)) {
    fields[key] = Array.isArray(problems) ? problems.map(String) : [String(problems)];
  }
  return fields;
}

/** The exception for an error answer: by its `code`, else by its status. */
export function errorFor(
  status: number,
  body: unknown,
  retryAfterSeconds?: number,
): MemoryServiceError {
  const error = isRecord(body) ? body["error"] : undefined;
  let code = "";
  let message = `HTTP ${status}`;
  let fields: FieldErrors | undefined;
  if (isRecord(error) && typeof error["code"] === "string") {
    code = error["code"];
    message = typeof error["message"] === "string" && error["message"] ? error["message"] : code;
    fields = fieldErrors(error["fields"]);
  }
  const known = Object.hasOwn(BY_CODE, code) ? BY_CODE[code as ErrorCode] : undefined;
  const cls =
    (known !== MemoryServiceError ? known : undefined) ??
    BY_STATUS[status] ??
    (status >= 500 ? ServerError : MemoryServiceError);
  return new cls(message, { status, code: code || undefined, fields, retryAfterSeconds, body });
}
