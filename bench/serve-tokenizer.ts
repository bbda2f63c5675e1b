// A model folder for the server when the checkpoint has no tokenizer.json (the random-weight
// models of scripts/llm/make_random_model.py): a folder of links to the checkpoint's files plus
// a tokenizer that names every id of the vocabulary (" t<id>", plain ASCII), so that every id
// the model draws decodes to text of its own and the stream sends one chunk per token. The
// benchmark sends token ids, so the tokenizer is never asked to encode.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** the folder to serve: `dir` itself when it has a tokenizer.json, else a linked copy with one */
export function servableFolder(dir: string, vocab: number): { dir: string; synthetic: boolean } {
  if (existsSync(join(dir, 'tokenizer.json'))) return { dir, synthetic: false };
  const out = join(mkdtempSync(join(tmpdir(), 'bench-serve-model-')), 'model');
  mkdirSync(out);
  for (const f of readdirSync(dir)) symlinkSync(resolve(dir, f), join(out, f));
  const tokens: Record<string, number> = {};
  // byte-level text: 'Ġ' is the space
  for (let id = 0; id < vocab; id++) tokens[`Ġt${id}`] = id;
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: tokens,
      merges: [],
    },
  };
  writeFileSync(join(out, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(join(out, 'tokenizer_config.json'), JSON.stringify({ model_max_length: 1 << 30 }));
  return { dir: out, synthetic: true };
}
