// The OpenAI request bodies, checked: what each field must be, named by its API name in the
// error (400, with `param`). Fields that would change the result but are not implemented are
// refused by name rather than ignored; fields that change nothing here (user, metadata, ...)
// and unknown fields are ignored.
import type { OptionNames, SamplingOptions } from '../models/sampling.ts';
import type { ChatMessage } from '../text/tokenizer.ts';
import { BadRequestError } from './errors.ts';

/** the sampling options by their names in the HTTP API */
export const HTTP_NAMES: OptionNames = {
  temperature: 'temperature',
  topK: 'top_k',
  topP: 'top_p',
  seed: 'seed',
  repetitionPenalty: 'repetition_penalty',
  presencePenalty: 'presence_penalty',
  frequencyPenalty: 'frequency_penalty',
};

export interface CommonParams {
  readonly model: string | null;
  /** null: as many as the context leaves */
  readonly maxTokens: number | null;
  readonly sampling: SamplingOptions;
  readonly stop: readonly string[];
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** vLLM's extension: the model's end-of-sequence ids do not end the completion (benchmarks) */
  readonly ignoreEos: boolean;
}

export interface ChatParams extends CommonParams {
  readonly messages: readonly ChatMessage[];
}

export interface CompletionParams extends CommonParams {
  /** text, or token ids */
  readonly prompt: string | readonly number[];
}

type Body = Record<string, unknown>;

const bad = (param: string, want: string, v: unknown): never => {
  throw new BadRequestError(`${param} must be ${want}, got ${JSON.stringify(v) ?? String(v)}`, param);
};
const given = (b: Body, k: string): boolean => b[k] !== undefined && b[k] !== null;

function num(b: Body, k: string, lo: number, hi: number): number | undefined {
  if (!given(b, k)) return undefined;
  const v = b[k];
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi) bad(k, `a number in [${lo}, ${hi}]`, v);
  return v as number;
}

function int(b: Body, k: string, lo: number): number | undefined {
  if (!given(b, k)) return undefined;
  const v = b[k];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < lo) bad(k, `an integer >= ${lo}`, v);
  return v as number;
}

function bool(b: Body, k: string): boolean {
  if (!given(b, k)) return false;
  if (typeof b[k] !== 'boolean') bad(k, 'true or false', b[k]);
  return b[k] as boolean;
}

/** refuses a field that is set to anything but its "off" values */
function refuse(b: Body, k: string, off: readonly unknown[], what: string): void {
  if (given(b, k) && !off.some((o) => JSON.stringify(o) === JSON.stringify(b[k])))
    throw new BadRequestError(`${k}: ${what} is not supported by this server`, k);
}

function common(b: Body): CommonParams {
  if (given(b, 'model') && typeof b.model !== 'string') bad('model', 'a string', b.model);
  const maxTokens = int(b, 'max_completion_tokens', 1) ?? int(b, 'max_tokens', 1) ?? null;
  const topK = int(b, 'top_k', -1);
  const sampling: SamplingOptions = {};
  const set = <K extends keyof SamplingOptions>(k: K, v: SamplingOptions[K] | undefined) => {
    if (v !== undefined) sampling[k] = v;
  };
  set('temperature', num(b, 'temperature', 0, 2));
  set('topP', num(b, 'top_p', Number.MIN_VALUE, 1));
  // -1 (vLLM's "off") and 0 both mean every token
  set('topK', topK === undefined ? undefined : Math.max(topK, 0));
  set('seed', int(b, 'seed', Number.MIN_SAFE_INTEGER));
  set('presencePenalty', num(b, 'presence_penalty', -2, 2));
  set('frequencyPenalty', num(b, 'frequency_penalty', -2, 2));
  const rep = num(b, 'repetition_penalty', 0, Number.MAX_VALUE);
  if (rep === 0) bad('repetition_penalty', 'a number > 0', 0);
  set('repetitionPenalty', rep);
  let stop: string[] = [];
  if (given(b, 'stop')) {
    const s = b.stop;
    if (typeof s === 'string') stop = [s];
    else if (Array.isArray(s) && s.every((x) => typeof x === 'string')) stop = s as string[];
    else bad('stop', 'a string or a list of strings', s);
    if (stop.some((x) => x === '')) bad('stop', 'non-empty strings', s);
  }
  const stream = bool(b, 'stream');
  let includeUsage = false;
  if (given(b, 'stream_options')) {
    const so = b.stream_options;
    if (typeof so !== 'object' || Array.isArray(so)) bad('stream_options', 'an object', so);
    if (!stream) throw new BadRequestError('stream_options is only allowed with stream: true', 'stream_options');
    includeUsage = bool(so as Body, 'include_usage');
  }
  const n = int(b, 'n', 1);
  if (n !== undefined && n > 1)
    throw new BadRequestError(`n: ${n} choices per request are not supported; send n: 1`, 'n');
  refuse(b, 'logit_bias', [{}], 'logit_bias');
  const ignoreEos = bool(b, 'ignore_eos');
  return { model: (b.model as string | undefined) ?? null, maxTokens, sampling, stop, stream, includeUsage, ignoreEos };
}

function content(v: unknown, at: string): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    return v
      .map((p, i) => {
        const part = p as Body;
        if (typeof p !== 'object' || p === null || part.type !== 'text' || typeof part.text !== 'string')
          throw new BadRequestError(`${at}[${i}]: only text parts ({ type: 'text', text }) are supported`, at);
        return part.text;
      })
      .join('');
  }
  return bad(at, 'a string or a list of text parts', v);
}

export function parseChat(b: Body): ChatParams {
  const c = common(b);
  refuse(b, 'logprobs', [false], 'logprobs');
  refuse(b, 'top_logprobs', [0], 'top_logprobs');
  refuse(b, 'tools', [[]], 'tool calling');
  refuse(b, 'functions', [[]], 'function calling');
  refuse(b, 'response_format', [{ type: 'text' }], 'a response_format other than text');
  const ms = b.messages;
  if (!Array.isArray(ms) || ms.length === 0) bad('messages', 'a non-empty list of messages', ms);
  const messages = (ms as unknown[]).map((m, i): ChatMessage => {
    const at = `messages[${i}]`;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return bad(at, 'an object', m);
    const mb = m as Body;
    if (typeof mb.role !== 'string' || mb.role === '') bad(`${at}.role`, 'a string', mb.role);
    return { role: mb.role as string, content: mb.content === null ? '' : content(mb.content, `${at}.content`) };
  });
  return { ...c, messages };
}

export function parseCompletion(b: Body): CompletionParams {
  const c = common(b);
  refuse(b, 'logprobs', [0], 'logprobs');
  refuse(b, 'echo', [false], 'echo');
  refuse(b, 'suffix', [''], 'suffix');
  refuse(b, 'best_of', [1], 'best_of');
  let p = b.prompt;
  // a batch of one prompt is that prompt
  if (Array.isArray(p) && p.length === 1 && (typeof p[0] === 'string' || Array.isArray(p[0]))) p = p[0];
  if (typeof p === 'string') return { ...c, prompt: p };
  if (Array.isArray(p) && p.length > 0 && p.every((x) => typeof x === 'number')) {
    if (!p.every((x) => Number.isInteger(x) && x >= 0)) bad('prompt', 'token ids (integers >= 0)', p);
    return { ...c, prompt: p as number[] };
  }
  if (Array.isArray(p) && p.length > 1)
    throw new BadRequestError(
      'prompt: several prompts in one request are not supported; send one request each',
      'prompt',
    );
  return bad('prompt', 'a string or a non-empty list of token ids', p);
}
