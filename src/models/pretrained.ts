// A Hugging Face model folder as one object: config.json, the safetensors weights (one file or
// sharded), the tokenizer and chat template where present, and generation_config.json's
// sampling defaults. Text in, text out, streamed as tokens are made.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Checkpoint } from '../io/safetensors.ts';
import { TextTokenizer, type ChatMessage } from '../text/tokenizer.ts';
import { TensorError } from '../core/errors.ts';
import { LlamaModel, type ModelLoadOptions } from './llama.ts';
import { generateIds, type GenerateOptions, type GenerateTimings } from './generate.ts';
import { readGenerationConfig, type GenerationDefaults } from './generation-config.ts';

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
  ) {}

  static async load(dir: string, opts: ModelLoadOptions = {}): Promise<PretrainedLlama> {
    const config = await LlamaModel.readConfig(dir);
    const defaults = await readGenerationConfig(dir);
    const tokenizer = existsSync(join(dir, 'tokenizer.json')) ? await TextTokenizer.load(dir) : null;
    const ckpt = await Checkpoint.open(dir);
    try {
      const model = await LlamaModel.fromWeights(config, ckpt, opts);
      return new PretrainedLlama(dir, model, tokenizer, defaults);
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
   * Sampling defaults come from generation_config.json (greedy when it has none).
   */
  async *generate(
    prompt: string | readonly ChatMessage[] | readonly number[],
    opts: GenerateOptions & { chat?: boolean } = {},
    timings?: GenerateTimings,
  ): AsyncGenerator<GeneratedToken> {
    const ids = isIds(prompt) ? [...prompt] : this.encode(prompt, opts);
    const stream = this.tokenizer?.streamer({ skipSpecialTokens: true }) ?? null;
    const merged: GenerateOptions = { ...this.defaults.sampling, stopIds: this.stopIds, ...opts };
    for await (const step of generateIds(this.model, [ids], merged, timings)) {
      const id = step.ids[0]!;
      yield { id, text: stream ? stream.push(id) : '' };
    }
    const rest = stream?.flush() ?? '';
    if (rest) yield { id: null, text: rest };
  }

  dispose(): void {
    this.model.dispose();
  }
}

function isIds(p: unknown): p is readonly number[] {
  return Array.isArray(p) && p.every((x) => typeof x === 'number');
}
