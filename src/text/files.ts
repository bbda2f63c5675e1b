// Reads the JSON files of a Hugging Face model folder. Only tokenizer.json is required; the
// others are read when present. Every failure names the file's full path.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TokenizerError } from './errors.ts';

export type JsonObject = { [key: string]: unknown };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The files a tokenizer may take settings from, parsed; absent optional files are `undefined`. */
export interface ModelTextFiles {
  dir: string;
  tokenizer: JsonObject;
  tokenizerConfig?: JsonObject;
  specialTokensMap?: JsonObject;
  generationConfig?: JsonObject;
  config?: JsonObject;
  /** chat_template.jinja: where newer exports keep the template instead of tokenizer_config.json */
  chatTemplateFile?: string;
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new TokenizerError(`${path}: cannot be read: ${(e as Error).message}`);
  }
}

async function readJson(dir: string, name: string): Promise<JsonObject | undefined> {
  const path = join(dir, name);
  const text = await readText(path);
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new TokenizerError(`${path}: invalid JSON: ${(e as Error).message}`);
  }
  if (!isObject(value)) throw new TokenizerError(`${path}: expected a JSON object at the top level`);
  return value;
}

export async function readModelTextFiles(dir: string): Promise<ModelTextFiles> {
  const info = await stat(dir).catch(() => undefined);
  if (!info)
    throw new TokenizerError(`${dir}: no such folder (expected a Hugging Face model folder with tokenizer.json)`);
  if (!info.isDirectory())
    throw new TokenizerError(`${dir}: not a folder (expected a Hugging Face model folder with tokenizer.json)`);
  const tokenizer = await readJson(dir, 'tokenizer.json');
  if (!tokenizer) {
    throw new TokenizerError(
      `${join(dir, 'tokenizer.json')}: not found; only the fast-tokenizer format ` +
        `(tokenizer.json) is supported, not tokenizer.model / vocab.json + merges.txt alone`,
    );
  }
  const [tokenizerConfig, specialTokensMap, generationConfig, config, chatTemplateFile] = await Promise.all([
    readJson(dir, 'tokenizer_config.json'),
    readJson(dir, 'special_tokens_map.json'),
    readJson(dir, 'generation_config.json'),
    readJson(dir, 'config.json'),
    readText(join(dir, 'chat_template.jinja')),
  ]);
  return { dir, tokenizer, tokenizerConfig, specialTokensMap, generationConfig, config, chatTemplateFile };
}
