// A Hugging Face model folder as one object: config.json, the safetensors weights (one file or
// sharded), the tokenizer and chat template where present, and generation_config.json's
// sampling defaults. Text in, text out, streamed as tokens are made. What the folder holds but
// the model does not use (tensors, generation settings) is named in a warning, once per load;
// ids the model can produce but the tokenizer cannot decode are never sampled.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Checkpoint } from '../io/safetensors.ts';
import { TextTokenizer, type ChatMessage } from '../text/tokenizer.ts';
import { TensorError } from '../core/errors.ts';
import type { WeightSource } from '../nn/weights.ts';
import { LlamaModel, type ModelLoadOptions } from './llama.ts';
import { generateIds, type GenerateOptions, type GenerateTimings } from './generate.ts';
import { readGenerationConfig, type GenerationDefaults } from './generation-config.ts';
import { VocabMask } from './sampling.ts';

export interface PretrainedLoadOptions extends ModelLoadOptions {
  /**
   * hears each warning of the load (tensors the model does not use, generation_config fields
   * not implemented); default: process.emitWarning (stderr, as a RocmTensorWarning)
   */
  onWarning?: (message: string) => void;
}

/** a warning of the library: process.emitWarning, which prints to stderr and can be silenced */
export function emitModelWarning(message: string): void {
  process.emitWarning(message, { type: 'RocmTensorWarning' });
}

/** buffers some checkpoints carry that no model reads (transformers ignores them too) */
const NEVER_USED = /(^|\.)rotary_emb\.inv_freq$/;

/**
 * A model argument that is not a folder: one that reads like a Hugging Face Hub id
 * ("owner/name") is told that downloading is not done here and how to get the folder.
 */
function checkFolder(dir: string): void {
  if (existsSync(dir)) return;
  if (/^[A-Za-z0-9][\w.-]*\/[\w.-]+$/.test(dir) && !dir.includes('..')) {
    const name = dir.split('/')[1]!;
    throw new TensorError(
      `${dir}: no such folder. It looks like a Hugging Face Hub id; models are not downloaded here. ` +
        `Get the folder first, e.g. huggingface-cli download ${dir} --local-dir ${name}, then pass ${name}`,
    );
  }
}

export interface GeneratedToken {
  /** null for a last piece of text the streamer held back (an unfinished character) */
  readonly id: number | null;
  /** the text this token completes (may be '' while a multi-byte character is still open) */
  readonly text: string;
}

export class PretrainedLlama {
  private constructor(
    readonly dir: string,
    readonly model: LlamaModel,
    readonly tokenizer: TextTokenizer | null,
    readonly defaults: GenerationDefaults,
    /** ids the model can produce that the tokenizer cannot decode; null when there are none */
    readonly vocabMask: VocabMask | null,
  ) {}

  static async load(dir: string, opts: PretrainedLoadOptions = {}): Promise<PretrainedLlama> {
    checkFolder(dir);
    const config = await LlamaModel.readConfig(dir);
    // under tensor parallelism every rank loads the same folder: rank 0 alone warns
    const speaks = !opts.tp || ('rank' in opts.tp ? opts.tp.rank === 0 : opts.tp.ranks[0] === 0);
    const warn = speaks ? (opts.onWarning ?? emitModelWarning) : () => undefined;
    const defaults = await readGenerationConfig(dir, warn);
    const tokenizer = existsSync(join(dir, 'tokenizer.json')) ? await TextTokenizer.load(dir) : null;
    const ckpt = await Checkpoint.open(dir);
    let model: LlamaModel | null = null;
    try {
      // the names the model asks for, to tell which tensors of the checkpoint it leaves unused
      const asked = new Set<string>();
      const src: WeightSource = {
        label: ckpt.label,
        has: (name) => {
          asked.add(name);
          return ckpt.has(name);
        },
        info: (name) => ckpt.info(name),
        load: (name, o) => ckpt.load(name, o),
      };
      model = await LlamaModel.fromWeights(config, src, opts);
      const unused = ckpt.names().filter((n) => !asked.has(n) && !NEVER_USED.test(n));
      if (unused.length > 0) {
        const shown = unused.slice(0, 5).map((n) => `'${n}'`);
        warn(
          `${ckpt.label}: ${unused.length} tensor${unused.length === 1 ? ' is' : 's are'} not used by the ${config.modelType} model and ignored: ` +
            `${shown.join(', ')}${unused.length > shown.length ? `, and ${unused.length - shown.length} more` : ''}`,
        );
      }
      const known = tokenizer?.knownIds(config.vocabSize) ?? null;
      const vocabMask = known ? VocabMask.of(known, model.device) : null;
      return new PretrainedLlama(dir, model, tokenizer, defaults, vocabMask);
    } catch (e) {
      model?.dispose();
      throw e;
    } finally {
      await ckpt.close();
    }
  }

  /** the ids that end generation: generation_config, else the tokenizer's, else config.json's */
  get stopIds(): readonly number[] {
    return (
      this.defaults.eosTokenIds ??
      (this.tokenizer?.eosIds.length ? this.tokenizer.eosIds : this.model.config.eosTokenIds)
    );
  }

  private requireTokenizer(what: string): TextTokenizer {
    if (!this.tokenizer) throw new TensorError(`${what}: ${this.dir} has no tokenizer.json; pass token ids instead`);
    return this.tokenizer;
  }

  /** prompt text (or chat messages, rendered with the model's chat template) -> ids */
  encode(prompt: string | readonly ChatMessage[], opts: { chat?: boolean } = {}): number[] {
    const tok = this.requireTokenizer('encode');
    if (typeof prompt !== 'string' || opts.chat) {
      const messages = typeof prompt === 'string' ? [{ role: 'user', content: prompt }] : prompt;
      // the template writes the BOS token itself
      return tok.encode(tok.applyChatTemplate(messages, { addGenerationPrompt: true }), { addSpecialTokens: false });
    }
    return tok.encode(prompt);
  }

  /**
   * Generates from a prompt (text, chat messages or ids), yielding each new token with its text.
   * Sampling defaults come from generation_config.json (greedy when it has none). topK, topP or
   * a seed without a temperature sample: at generation_config's temperature when it samples,
   * else at 1 (an explicit temperature 0 stays greedy). Ids the tokenizer cannot decode are
   * never sampled.
   */
  async *generate(
    prompt: string | readonly ChatMessage[] | readonly number[],
    opts: GenerateOptions & { chat?: boolean } = {},
    timings?: GenerateTimings,
  ): AsyncGenerator<GeneratedToken> {
    const ids = isIds(prompt) ? [...prompt] : this.encode(prompt, opts);
    const stream = this.tokenizer?.streamer({ skipSpecialTokens: true }) ?? null;
    const merged: GenerateOptions = {
      ...this.defaults.sampling,
      stopIds: this.stopIds,
      vocabMask: this.vocabMask,
      ...opts,
    };
    const asksToSample = opts.topK !== undefined || opts.topP !== undefined || opts.seed !== undefined;
    if (opts.temperature === undefined && asksToSample && !(merged.temperature! > 0)) merged.temperature = 1;
    for await (const step of generateIds(this.model, [ids], merged, timings)) {
      const id = step.ids[0]!;
      yield { id, text: stream ? stream.push(id) : '' };
    }
    const rest = stream?.flush() ?? '';
    if (rest) yield { id: null, text: rest };
  }

  dispose(): void {
    this.model.dispose();
    this.vocabMask?.dispose();
  }
}

function isIds(p: unknown): p is readonly number[] {
  return Array.isArray(p) && p.every((x) => typeof x === 'number');
}
