// Errors of the server, each with the HTTP status and the OpenAI error type it is answered with.
import { TensorError } from '../core/errors.ts';

export type ApiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'service_unavailable'
  | 'timeout_error';

export class ServeError extends TensorError {
  constructor(
    message: string,
    readonly status: number,
    readonly type: ApiErrorType,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

/** a request the server cannot take as sent (400) */
export class BadRequestError extends ServeError {
  constructor(message: string, param: string | null = null, code: string | null = null) {
    super(message, 400, 'invalid_request_error', param, code);
  }
}

/** the waiting queue is full (429): try again later */
export class QueueFullError extends ServeError {
  constructor(limit: number) {
    super(`the server's queue is full (${limit} requests waiting); try again later`, 429, 'rate_limit_error');
  }
}

/** the engine is shutting down or not ready (503) */
export class UnavailableError extends ServeError {
  constructor(message: string) {
    super(message, 503, 'service_unavailable');
  }
}
