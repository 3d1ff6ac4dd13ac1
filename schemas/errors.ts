// The one registry of error codes and their HTTP statuses (OpenAPI description, "Errors").
// The journey_* codes are execution failures, never HTTP statuses; they map to 500 only so that
// the table is total.
export const ERROR_STATUS = {
  malformed_request: 400,
  invalid_key: 401,
  forbidden: 403,
  deploy_key_scope: 403,
  not_found: 404,
  project_missing: 404,
  conflict: 409,
  project_exists: 409,
  release_not_ready: 409,
  payload_too_large: 413,
  artifact_too_large: 413,
  validation_failed: 422,
  trait_validation_failed: 422,
  event_denied: 422,
  trait_denied: 422,
  release_invalid: 422,
  over_quota: 429,
  rate_limited: 429,
  internal: 500,
  dependency_unavailable: 503,
  journey_fuel_exceeded: 500,
  journey_timeout: 500,
  journey_memory_exceeded: 500,
  journey_error: 500,
  journey_output_invalid: 500,
  journey_nondeterministic: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** A call's error result (an ingestion answer, alone or in a batch): the status comes from the code. */
export function callError(code: ErrorCode, message: string): { status: number; error: { code: ErrorCode; message: string } } {
  return { status: ERROR_STATUS[code], error: { code, message } };
}
