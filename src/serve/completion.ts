// One /v1/chat/completions or /v1/completions request: the prompt's ids (through the chat
// template for chat), the sampling options (the request's, else generation_config.json's, else
// OpenAI's defaults), then the engine's tokens turned into text and sent whole or as a stream
// of OpenAI chunks. The client leaving, or the request's time running out, cancels it in the
// engine (its KV blocks are freed at once).
import { randomBytes, randomInt } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PretrainedLlama } from '../models/pretrained.ts';
import type { SamplingOptions } from '../models/sampling.ts';
import type { TextTokenizer } from '../text/tokenizer.ts';
import type { Engine } from './engine.ts';
import { BadRequestError, ServeError } from './errors.ts';
import { EventStream, describeError, sendJson } from './http-io.ts';
import { HTTP_NAMES, parseChat, parseCompletion, type CommonParams } from './openai-params.ts';
import type { FinishReason, SequenceUsage } from './sequence.ts';
import { TextOutput } from './text-output.ts';

export interface CompletionContext {
  readonly model: PretrainedLlama;
  readonly tokenizer: TextTokenizer;
  readonly engine: Engine;
  readonly name: string;
  /** milliseconds a request may take; 0: no limit */
  readonly timeoutMs: number;
  readonly log: (line: string) => void;
}

export type CompletionKind = 'chat' | 'completion';

/** the finish the client is told: OpenAI knows 'stop' and 'length' */
type ApiFinish = 'stop' | 'length';

export function requestId(kind: CompletionKind): string {
  return `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
}

function promptIds(ctx: CompletionContext, kind: CompletionKind, body: Record<string, unknown>) {
  if (kind === 'chat') {
    const p = parseChat(body);
    if (!ctx.tokenizer.hasChatTemplate)
      throw new BadRequestError(
        `the model '${ctx.name}' has no chat template; send its prompt as text to /v1/completions`,
        'messages',
      );
    return { p: p as CommonParams, ids: ctx.model.encode(p.messages) };
  }
  const p = parseCompletion(body);
  return { p: p as CommonParams, ids: typeof p.prompt === 'string' ? ctx.tokenizer.encode(p.prompt) : [...p.prompt] };
}

/** the request's sampling over the model's defaults; OpenAI's temperature default is 1 */
function samplingOf(ctx: CompletionContext, p: CommonParams): SamplingOptions {
  const s: SamplingOptions = { ...ctx.model.defaults.sampling, ...p.sampling };
  s.temperature ??= 1;
  // without a seed each request draws its own stream (two requests in the same millisecond would
  // otherwise share one)
  s.seed ??= randomInt(2 ** 31);
  return s;
}

export function handleCompletion(
  ctx: CompletionContext,
  kind: CompletionKind,
  body: Record<string, unknown>,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const t0 = performance.now();
  const id = requestId(kind);
  const created = Math.floor(Date.now() / 1000);
  const { p, ids } = promptIds(ctx, kind, body);
  if (p.model !== null && p.model !== ctx.name)
    throw new ServeError(
      `the model '${p.model}' does not exist; this server serves '${ctx.name}'`,
      404,
      'not_found_error',
      'model',
      'model_not_found',
    );
  const maxLen = ctx.engine.maxSeqLen;
  if (ids.length >= maxLen)
    throw new BadRequestError(
      `this model's context is ${maxLen} tokens, prompt and completion together; the prompt has ${ids.length}`,
      kind === 'chat' ? 'messages' : 'prompt',
      'context_length_exceeded',
    );
  const maxTokens = p.maxTokens ?? maxLen - ids.length;
  if (ids.length + maxTokens > maxLen)
    throw new BadRequestError(
      `this model's context is ${maxLen} tokens; the prompt has ${ids.length} and max_tokens asks for ${maxTokens} more`,
      body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens',
      'context_length_exceeded',
    );
  const out = new TextOutput(ctx.tokenizer.streamer({ skipSpecialTokens: true }), p.stop);
  const object = kind === 'chat' ? 'chat.completion' : 'text_completion';
  /** a streamed choice: new text, or the end (chat sends the role first, in a chunk of its own) */
  const piece = (text: string) =>
    kind === 'chat'
      ? { index: 0, delta: { content: text }, logprobs: null, finish_reason: null }
      : { index: 0, text, logprobs: null, finish_reason: null };
  const last = (finish: ApiFinish) =>
    kind === 'chat'
      ? { index: 0, delta: {}, logprobs: null, finish_reason: finish }
      : { index: 0, text: '', logprobs: null, finish_reason: finish };
  const usageOf = (u: SequenceUsage) => ({
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
    prompt_tokens_details: { cached_tokens: u.cachedTokens },
  });
  // opened once the engine took the request, so a refusal can still answer with its status
  let stream: EventStream | null = null;
  const chunk = (choices: unknown[], usage?: unknown) => ({
    id,
    object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
    created,
    model: ctx.name,
    choices,
    ...(p.includeUsage ? { usage: usage ?? null } : {}),
  });
  let text = '';
  let ttft: number | null = null;
  let ended = false;
  let timedOut = false;
  const emit = (t: string): void => {
    if (t === '') return;
    if (stream) stream.send(chunk([piece(t)]));
    else text += t;
  };
  const finish = (reason: FinishReason, usage: SequenceUsage, error?: Error): void => {
    ended = true;
    clearTimeout(timer);
    let status = 200;
    let finishReason: string = reason;
    if (reason === 'stop' || reason === 'length') {
      const rest = out.end();
      emit(rest.text);
      const apiFinish: ApiFinish = rest.stopped ? 'stop' : reason;
      finishReason = apiFinish;
      if (stream) {
        stream.send(chunk([last(apiFinish)]));
        if (p.includeUsage) stream.send(chunk([], usageOf(usage)));
        stream.done();
      } else {
        const c =
          kind === 'chat'
            ? { index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: apiFinish }
            : { index: 0, text, logprobs: null, finish_reason: apiFinish };
        sendJson(res, 200, { id, object, created, model: ctx.name, choices: [c], usage: usageOf(usage) });
      }
    } else if (reason === 'error' || timedOut) {
      const e = timedOut
        ? new ServeError(`the request took longer than ${ctx.timeoutMs / 1000} s and was stopped`, 504, 'timeout_error')
        : new ServeError(`generation failed: ${error?.message ?? 'unknown error'}`, 500, 'server_error');
      finishReason = timedOut ? 'timeout' : 'error';
      const d = describeError(e);
      status = d.status;
      if (stream) {
        stream.send(d.body);
        stream.done();
      } else sendJson(res, d.status, d.body);
    } else {
      // the client left: nobody to answer
      status = 499;
    }
    const ms = (x: number | null) => (x === null ? '-' : `${x.toFixed(1)}ms`);
    ctx.log(
      `${id} ${req.method} ${req.url} ${status} prompt=${usage.promptTokens} completion=${usage.completionTokens} ` +
        `cached=${usage.cachedTokens} ttft=${ms(ttft === null ? null : ttft - t0)} duration=${ms(performance.now() - t0)} finish=${finishReason}`,
    );
  };

  const handle = ctx.engine.submit(
    {
      prompt: ids,
      maxTokens,
      stopIds: p.ignoreEos ? [] : ctx.model.stopIds,
      onToken: (tok) => {
        ttft ??= performance.now();
        const r = out.push(tok);
        emit(r.text);
        return r.stopped;
      },
      onFinish: finish,
    },
    samplingOf(ctx, p),
    HTTP_NAMES,
  );
  if (p.stream) {
    stream = new EventStream(res);
    if (kind === 'chat')
      stream.send(
        chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]),
      );
  }
  const timer =
    ctx.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          handle.cancel();
        }, ctx.timeoutMs)
      : undefined;
  timer?.unref();
  res.on('close', () => {
    if (!ended) handle.cancel();
  });
}
