// TextTokenizer: a Hugging Face model folder's tokenizer (tokenizer.json run by
// @huggingface/tokenizers), its special ids and chat template, behind a small typed API.
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { ChatTemplate, findChatTemplate, type ChatMessage } from './chat.ts';
import { TokenizerError } from './errors.ts';
import { isObject, readModelTextFiles, type JsonObject, type ModelTextFiles } from './files.ts';
import { resolveBosId, resolveEosIds, specialTokenText } from './special.ts';
import { createStreamer, type TextStreamer } from './stream.ts';

export type { ChatMessage } from './chat.ts';
export type { TextStreamer } from './stream.ts';

export interface EncodeOptions {
  /** add BOS (and whatever else the post-processor adds) as the model expects; default true */
  addSpecialTokens?: boolean;
}
export interface DecodeOptions {
  /** leave out special tokens (BOS, EOS, chat headers...); default false */
  skipSpecialTokens?: boolean;
}
export interface ChatTemplateOptions {
  /** end with the header that opens the assistant's turn; default false */
  addGenerationPrompt?: boolean;
}

/** The model types @huggingface/tokenizers implements; anything else it would silently guess at. */
const MODEL_TYPES = new Set(['BPE', 'WordPiece', 'Unigram']);

/**
 * The runtime requires the five pipeline keys to be present (null is fine) and added_tokens to
 * be a list; files written by hand or by older tools can leave them out, which means "none".
 */
function normalizeTokenizerJson(json: JsonObject, path: string): JsonObject {
  const model = json.model;
  if (!isObject(model)) throw new TokenizerError(`${path}: no "model" object (is this a tokenizer.json?)`);
  if (model.type !== undefined && !MODEL_TYPES.has(String(model.type))) {
    throw new TokenizerError(
      `${path}: unsupported tokenizer model type ${JSON.stringify(model.type)} ` +
        `(supported: ${[...MODEL_TYPES].join(', ')})`,
    );
  }
  const out: JsonObject = { ...json };
  for (const key of ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder']) out[key] ??= null;
  out.added_tokens ??= [];
  if (!Array.isArray(out.added_tokens)) throw new TokenizerError(`${path}: "added_tokens" must be a list`);
  return out;
}

/** tokenizer_config's optional booleans, checked. */
function flag(files: ModelTextFiles, key: string): boolean | undefined {
  const v = files.tokenizerConfig?.[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean')
    throw new TokenizerError(
      `${join(files.dir, 'tokenizer_config.json')}: ${key} must be true or false, got ${JSON.stringify(v)}`,
    );
  return v;
}

export class TextTokenizer {
  readonly bosId: number | null;
  readonly eosIds: readonly number[];
  readonly hasChatTemplate: boolean;
  /** highest token id + 1, added tokens included: the fewest embedding rows a model needs */
  readonly vocabSize: number;
  /** the folder the tokenizer was loaded from */
  readonly dir: string;

  private readonly tok: Tokenizer;
  private readonly files: ModelTextFiles;
  /** ids the runtime's post-processor puts around an empty text: tells whether it adds BOS/EOS itself */
  private readonly specialsAround: readonly number[];
  private readonly addBos: boolean | undefined;
  private readonly addEos: boolean | undefined;
  private readonly eosTokenId: number | undefined;
  /** clean_up_tokenization_spaces: off unless the config says so, as recent transformers do (the runtime's own default is on) */
  private readonly cleanup: boolean;
  private readonly chat: ChatTemplate | null;
  private readonly chatMissing: string;

  private constructor(files: ModelTextFiles) {
    this.files = files;
    this.dir = files.dir;
    const path = join(files.dir, 'tokenizer.json');
    const json = normalizeTokenizerJson(files.tokenizer, path);
    const config = { ...(files.tokenizerConfig ?? {}) };
    this.cleanup = flag(files, 'clean_up_tokenization_spaces') ?? false;
    config.clean_up_tokenization_spaces = this.cleanup;
    try {
      this.tok = new Tokenizer(json, config);
    } catch (e) {
      throw new TokenizerError(`${path}: the tokenizer runtime cannot load it: ${(e as Error).message}`);
    }
    let maxId = -1; // a loop: spreading 128k ids into Math.max can overflow the stack
    for (const id of this.tok.get_vocab(true).values()) if (id > maxId) maxId = id;
    this.vocabSize = maxId + 1;
    const tokenToId = (t: string) => this.tok.token_to_id(t);
    this.bosId = resolveBosId(files, tokenToId);
    this.eosIds = Object.freeze(resolveEosIds(files, tokenToId));
    const eosText = specialTokenText(files, 'eos_token');
    this.eosTokenId = eosText === undefined ? undefined : tokenToId(eosText);
    this.addBos = flag(files, 'add_bos_token');
    this.addEos = flag(files, 'add_eos_token');
    this.specialsAround = this.tok.encode('', { add_special_tokens: true }).ids;
    const found = findChatTemplate(files);
    this.chat = 'text' in found ? new ChatTemplate(found) : null;
    this.chatMissing = 'missing' in found ? found.missing : '';
    this.hasChatTemplate = this.chat !== null;
  }

  /**
   * Reads tokenizer.json, and tokenizer_config.json / special_tokens_map.json /
   * generation_config.json / config.json / chat_template.jinja where present, from a Hugging
   * Face model folder.
   */
  static async load(dir: string): Promise<TextTokenizer> {
    return new TextTokenizer(await readModelTextFiles(dir));
  }

  encode(text: string, opts: EncodeOptions = {}): number[] {
    const add = opts.addSpecialTokens ?? true;
    const ids = this.tok.encode(text, { add_special_tokens: add }).ids;
    if (!add) return ids;
    // tokenizer_config's add_bos_token / add_eos_token, where set, override what the
    // post-processor does (as transformers' Llama tokenizers rebuild their post-processor)
    const bos = this.bosId;
    if (bos !== null && this.addBos !== undefined) {
      const hasBos = this.specialsAround[0] === bos;
      if (this.addBos && !hasBos) ids.unshift(bos);
      else if (!this.addBos && hasBos && ids[0] === bos) ids.shift();
    }
    const eos = this.eosTokenId;
    if (eos !== undefined && this.addEos !== undefined) {
      const hasEos = this.specialsAround[this.specialsAround.length - 1] === eos;
      if (this.addEos && !hasEos) ids.push(eos);
      else if (!this.addEos && hasEos && ids[ids.length - 1] === eos) ids.pop();
    }
    return ids;
  }

  decode(ids: readonly number[], opts: DecodeOptions = {}): string {
    return this.decodeWith(ids, opts.skipSpecialTokens ?? false, this.cleanup);
  }

  /** Token text of one id (byte-level tokens show their mapped characters, e.g. "Ġthe"). */
  idToToken(id: number): string {
    this.checkIds([id]);
    return this.tok.id_to_token(id)!;
  }

  tokenToId(token: string): number | undefined {
    return this.tok.token_to_id(token);
  }

  /** one byte per id in [0, n): 1 where the tokenizer has a token for the id (decode() takes it), 0 where not */
  knownIds(n: number): Uint8Array {
    const known = new Uint8Array(n);
    for (const id of this.tok.get_vocab(true).values()) if (id >= 0 && id < n) known[id] = 1;
    return known;
  }

  applyChatTemplate(messages: readonly ChatMessage[], opts: ChatTemplateOptions = {}): string {
    if (!this.chat) throw new TokenizerError(this.chatMissing);
    const vars: Record<string, string | boolean> = { add_generation_prompt: opts.addGenerationPrompt ?? false };
    for (const key of ['bos_token', 'eos_token', 'unk_token', 'pad_token'] as const) {
      const text = specialTokenText(this.files, key);
      if (text !== undefined) vars[key] = text;
    }
    return this.chat.render(messages, vars);
  }

  /**
   * Incremental detokenizer for streaming: push ids one at a time and get back the text that is
   * complete so far (never half a UTF-8 character); flush() at the end. The pieces put together
   * equal decode() of all the ids with the same options.
   */
  streamer(opts: DecodeOptions = {}): TextStreamer {
    const skip = opts.skipSpecialTokens ?? false;
    return createStreamer((ids) => this.decodeWith(ids, skip, false), this.cleanup);
  }

  private decodeWith(ids: readonly number[], skipSpecialTokens: boolean, cleanup: boolean): string {
    if (ids.length === 0) return ''; // the runtime throws on an empty list
    this.checkIds(ids);
    return this.tok.decode(ids.slice(), {
      skip_special_tokens: skipSpecialTokens,
      clean_up_tokenization_spaces: cleanup,
    });
  }

  /** the runtime would turn an unknown id into "undefined" text or a crash deep inside */
  private checkIds(ids: readonly number[]): void {
    for (const id of ids) {
      if (!Number.isInteger(id) || this.tok.id_to_token(id) === undefined) {
        throw new TokenizerError(`token id ${id} is not in the vocabulary of ${join(this.dir, 'tokenizer.json')}`);
      }
    }
  }
}
