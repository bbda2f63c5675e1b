// Which ids begin and end a sequence. Models spread this over several files, and the files
// disagree in practice (Llama 3 Instruct's tokenizer_config names one EOS, its
// generation_config lists three), so each answer has an order of precedence:
//   BOS: tokenizer_config bos_token (what encode adds), else special_tokens_map, else
//        generation_config / config.json bos_token_id
//   EOS: generation_config eos_token_id (what generation stops on), else config.json
//        (or its text_config), else the tokenizer's eos_token
import { join } from 'node:path';
import { TokenizerError } from './errors.ts';
import { isObject, type JsonObject, type ModelTextFiles } from './files.ts';

type TokenToId = (token: string) => number | undefined;
export type SpecialTokenKey = 'bos_token' | 'eos_token' | 'unk_token' | 'pad_token';

/** A special token as the config files write it: "<s>", or an AddedToken object {content: "<s>", ...}. */
function tokenContent(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v.content === 'string') return v.content;
  return undefined;
}

/** The special token's text from tokenizer_config.json, else special_tokens_map.json. */
export function specialTokenText(files: ModelTextFiles, key: SpecialTokenKey): string | undefined {
  return tokenContent(files.tokenizerConfig?.[key]) ?? tokenContent(files.specialTokensMap?.[key]);
}

/** eos_token_id / bos_token_id: a number, a list of numbers, or null (= not set). */
function idList(obj: JsonObject | undefined, key: string, where: string): number[] | undefined {
  const v = obj?.[key];
  if (v === undefined || v === null) return undefined;
  const list = Array.isArray(v) ? v : [v];
  for (const id of list) {
    if (!Number.isInteger(id) || (id as number) < 0) {
      throw new TokenizerError(
        `${where}: ${key} must be a non-negative integer or a list of them, got ${JSON.stringify(v)}`,
      );
    }
  }
  return list as number[];
}

function configIds(files: ModelTextFiles, key: string): number[] | undefined {
  const gen = idList(files.generationConfig, key, join(files.dir, 'generation_config.json'));
  if (gen?.length) return gen;
  const cfgPath = join(files.dir, 'config.json');
  const cfg = idList(files.config, key, cfgPath);
  if (cfg?.length) return cfg;
  // multimodal configs keep the language model's settings under text_config
  const text = files.config?.text_config;
  return isObject(text) ? idList(text, key, `${cfgPath} (text_config)`) : undefined;
}

function idOfToken(files: ModelTextFiles, key: SpecialTokenKey, tokenToId: TokenToId): number | undefined {
  const text = specialTokenText(files, key);
  if (text === undefined) return undefined;
  const id = tokenToId(text);
  if (id === undefined) {
    throw new TokenizerError(
      `${files.dir}: the tokenizer settings name ${key} ${JSON.stringify(text)}, ` +
        `which tokenizer.json's vocabulary does not contain`,
    );
  }
  return id;
}

export function resolveBosId(files: ModelTextFiles, tokenToId: TokenToId): number | null {
  return idOfToken(files, 'bos_token', tokenToId) ?? configIds(files, 'bos_token_id')?.[0] ?? null;
}

export function resolveEosIds(files: ModelTextFiles, tokenToId: TokenToId): number[] {
  const fromConfig = configIds(files, 'eos_token_id');
  if (fromConfig?.length) return [...new Set(fromConfig)];
  const id = idOfToken(files, 'eos_token', tokenToId);
  return id === undefined ? [] : [id];
}
