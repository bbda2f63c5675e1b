// The HTTP plumbing of the server, on node:http: JSON and error answers in OpenAI's error-object
// format, request bodies read with a size limit, and server-sent events.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { TensorError } from '../core/errors.ts';
import { BadRequestError, ServeError, type ApiErrorType } from './errors.ts';

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** OpenAI's error object */
export function errorBody(
  message: string,
  type: ApiErrorType,
  param: string | null = null,
  code: string | null = null,
) {
  return { error: { message, type, param, code } };
}

/** the status and error object an exception is answered with */
export function describeError(e: unknown): { status: number; body: ReturnType<typeof errorBody> } {
  if (e instanceof ServeError) return { status: e.status, body: errorBody(e.message, e.type, e.param, e.code) };
  // the library's own checks (a tokenizer refusing an id, a chat template failing) name the mistake
  if (e instanceof TensorError) return { status: 400, body: errorBody(e.message, 'invalid_request_error') };
  const message = e instanceof Error ? e.message : String(e);
  return { status: 500, body: errorBody(`internal error: ${message}`, 'server_error') };
}

export function sendError(res: ServerResponse, e: unknown): number {
  const { status, body } = describeError(e);
  sendJson(res, status, body);
  return status;
}

/** the request's JSON body, an object; 400 when it is not one, 413 past `limit` bytes */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit)
      throw new ServeError(`the request body is larger than ${limit} bytes`, 413, 'invalid_request_error');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new BadRequestError(`the request body is not valid JSON: ${(e as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new BadRequestError('the request body must be a JSON object');
  return body as Record<string, unknown>;
}

/** a server-sent event stream: `data: {json}` events, then `data: [DONE]` */
export class EventStream {
  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders();
  }
  send(data: unknown): void {
    if (!this.res.writableEnded && !this.res.destroyed) this.res.write(`data: ${JSON.stringify(data)}\n\n`);
  }
  done(): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    this.res.write('data: [DONE]\n\n');
    this.res.end();
  }
}
