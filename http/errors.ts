import { ERROR_STATUS, type ErrorCode } from '../schemas/errors.js';

/** An error answer. Handlers throw it; the server turns it into the `{ error, meta }` envelope. */
export class HttpError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers?: Record<string, string>;
  constructor(code: ErrorCode, message: string, headers?: Record<string, string>) {
    super(message);
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.headers = headers;
  }
}

export const httpError = (code: ErrorCode, message: string, headers?: Record<string, string>) =>
  new HttpError(code, message, headers);

export const notFound = (what = 'resource') => new HttpError('not_found', `${what} not found`);
