// TextTokenizer on small byte-level BPE tokenizers made from a corpus: round trips over ASCII,
// accents, CJK and emoji, special tokens, BOS/EOS handling and where the ids come from, merges
// doing their job, and clear errors for broken folders.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { TextTokenizer, TokenizerError } from '../../src/index.ts';
import { makeBpeTokenizer, SAMPLE_CORPUS } from '../fixtures/bpe-tokenizer.ts';
import { removeTextDirs, textDir, withConfig } from '../fixtures/text-dir.ts';

const made = makeBpeTokenizer({ corpus: SAMPLE_CORPUS, vocabSize: 700 });
const VOCAB = 700,
  BOS = 695,
  EOT = 696 /* <|end_of_text|> */,
  EOT_ID = 697 /* <|eot_id|> */;
const load = (extra: Record<string, object | string> = {}, tok = made) => TextTokenizer.load(textDir(tok, extra));

async function rejects(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  try {
    await p;
  } catch (e) {
    assert.instance(e, TokenizerError);
    assert.match((e as Error).message, pattern);
    return;
  }
  assert.unreachable(`expected a TokenizerError matching ${pattern}`);
}

test.after(removeTextDirs);

const TEXTS = [
  'The tokenizer turns text into ids.',
  'Hello, world!  Two  spaces,\ttabs\nand new lines\r\n',
  'Déjà vu, crème brûlée, Straße',
  '東京は日本の首都です。你好，世界！',
  'Emoji 🙂🚀, skin tone 👍🏽, family 👨‍👩‍👧 and ❤️',
  'unseen words: quizzical zephyr Ωμέγα',
  '',
];

test('load: vocabulary size, BOS and EOS ids from a made tokenizer', async () => {
  const tok = await load();
  assert.is(tok.vocabSize, VOCAB);
  assert.is(tok.bosId, BOS);
  assert.equal(tok.eosIds, [EOT]);
  assert.is(tok.tokenToId('<|eot_id|>'), EOT_ID);
  assert.is(tok.idToToken(BOS), '<|begin_of_text|>');
  assert.ok(tok.hasChatTemplate);
});

test('round trip: ASCII, accents, CJK, emoji, empty', async () => {
  const tok = await load();
  for (const t of TEXTS) {
    const ids = tok.encode(t, { addSpecialTokens: false });
    assert.is(tok.decode(ids), t, JSON.stringify(t));
    assert.ok(
      ids.every((id) => id >= 0 && id < BOS),
      'ordinary text never yields special ids',
    );
  }
});

test('multi-byte characters the vocabulary does not know fall back to one id per byte', async () => {
  const tok = await load();
  const thai = 'สวัสดี'; // no Thai in the corpus: no merge covers its bytes
  const ids = tok.encode(thai, { addSpecialTokens: false });
  assert.equal(ids, [...new TextEncoder().encode(thai)]);
  assert.is(tok.decode(ids), thai);
});

test('BOS: added by default, not with addSpecialTokens false', async () => {
  const tok = await load();
  const plain = tok.encode('The model', { addSpecialTokens: false });
  const withBos = tok.encode('The model');
  assert.equal(withBos, [BOS, ...plain]);
  assert.is(tok.decode(withBos), '<|begin_of_text|>The model');
  assert.is(tok.decode(withBos, { skipSpecialTokens: true }), 'The model');
  assert.equal(tok.encode(''), [BOS]);
});

test('special tokens in text: one id each, round trip, skipped on request', async () => {
  const tok = await load();
  const text = '<|start_header_id|>user<|end_header_id|>\n\nHi 🙂<|eot_id|>';
  const ids = tok.encode(text, { addSpecialTokens: false });
  assert.is(ids[0], tok.tokenToId('<|start_header_id|>'));
  assert.is(ids.at(-1), EOT_ID);
  assert.is(ids.filter((id) => id >= BOS).length, 3);
  assert.is(tok.decode(ids), text);
  assert.is(tok.decode(ids, { skipSpecialTokens: true }), 'user\n\nHi 🙂');
});

test('merges apply: frequent words take fewer ids than bytes', async () => {
  const tok = await load();
  for (const w of [' the', ' model', ' tokenizer', 'The']) {
    const ids = tok.encode(w, { addSpecialTokens: false });
    assert.ok(ids.length < new TextEncoder().encode(w).length, `${JSON.stringify(w)} -> ${ids.length} ids`);
  }
  assert.equal(tok.encode(' the', { addSpecialTokens: false }), [tok.tokenToId('\u0120the')!]);
  // with no merges learned (vocab = bytes + specials) the same word is one id per byte
  const bare = await load({}, makeBpeTokenizer({ corpus: SAMPLE_CORPUS, vocabSize: 261 }));
  assert.is(bare.encode(' tokenizer', { addSpecialTokens: false }).length, 10);
});

test('add_bos_token / add_eos_token in tokenizer_config override the post-processor', async () => {
  const noBos = await load({}, withConfig(made, { add_bos_token: false }));
  assert.equal(noBos.encode('The'), noBos.encode('The', { addSpecialTokens: false }));
  // a tokenizer.json without a post-processor, where the config asks for BOS (older Llama folders)
  const json = { ...(made.tokenizerJson as Record<string, unknown>), post_processor: null };
  const bare = { tokenizerJson: json, tokenizerConfig: made.tokenizerConfig };
  const noPost = await load({}, bare);
  assert.equal(
    noPost.encode('The'),
    noPost.encode('The', { addSpecialTokens: false }),
    'no post-processor, no flag: nothing added',
  );
  const askBos = await load({}, withConfig(bare, { add_bos_token: true, add_eos_token: true }));
  const plain = askBos.encode('The', { addSpecialTokens: false });
  assert.equal(askBos.encode('The'), [BOS, ...plain, EOT]);
  assert.equal(askBos.encode('The', { addSpecialTokens: false }), plain);
});

test('EOS ids: generation_config, then config.json (or its text_config), then tokenizer_config', async () => {
  assert.equal((await load({ 'generation_config.json': { eos_token_id: [EOT, EOT_ID, EOT] } })).eosIds, [EOT, EOT_ID]);
  assert.equal(
    (await load({ 'generation_config.json': { eos_token_id: EOT_ID }, 'config.json': { eos_token_id: 5 } })).eosIds,
    [EOT_ID],
  );
  assert.equal(
    (await load({ 'generation_config.json': { eos_token_id: null }, 'config.json': { eos_token_id: 5 } })).eosIds,
    [5],
  );
  assert.equal((await load({ 'config.json': { text_config: { eos_token_id: [7, 8] } } })).eosIds, [7, 8]);
  assert.equal((await load({}, withConfig(made, { eos_token: { content: '<|eot_id|>', special: true } }))).eosIds, [
    EOT_ID,
  ]);
  assert.equal((await load({}, withConfig(made, { eos_token: undefined }))).eosIds, []);
});

test('BOS id: tokenizer_config, else special_tokens_map, else config ids, else null', async () => {
  const noBos = withConfig(made, { bos_token: undefined });
  assert.is((await load({ 'special_tokens_map.json': { bos_token: '<|eot_id|>' } }, noBos)).bosId, EOT_ID);
  assert.is((await load({ 'config.json': { bos_token_id: 3 } }, noBos)).bosId, 3);
  assert.is((await load({}, noBos)).bosId, null);
});

test('clean_up_tokenization_spaces: off by default (lossless), on when the config says so', async () => {
  const text = "Hello . Do n't stop , it 's fine !";
  const off = await load();
  assert.is(off.decode(off.encode(text, { addSpecialTokens: false })), text);
  const on = await load({}, withConfig(made, { clean_up_tokenization_spaces: true }));
  assert.is(on.decode(on.encode(text, { addSpecialTokens: false })), "Hello. Don't stop, it's fine!");
  const unset = await load({}, withConfig(made, { clean_up_tokenization_spaces: undefined }));
  assert.is(unset.decode(unset.encode(text, { addSpecialTokens: false })), text);
});

test('decode: empty list, ids outside the vocabulary', async () => {
  const tok = await load();
  assert.is(tok.decode([]), '');
  assert.throws(
    () => tok.decode([1, VOCAB]),
    (e: Error) =>
      e instanceof TokenizerError && /token id 700 is not in the vocabulary of .*tokenizer\.json/.test(e.message),
  );
  assert.throws(() => tok.decode([-1]), /token id -1/);
  assert.throws(() => tok.decode([1.5]), /token id 1.5/);
  assert.throws(() => tok.idToToken(VOCAB), /token id 700/);
});

test('errors: missing folder, a file instead, no tokenizer.json, invalid JSON, unsupported model', async () => {
  await rejects(TextTokenizer.load('/nonexistent/model-folder'), /\/nonexistent\/model-folder: no such folder/);
  const empty = textDir(null);
  await rejects(TextTokenizer.load(join(textDir(null, { 'x.txt': 'x' }), 'x.txt')), /x\.txt: not a folder/);
  await rejects(TextTokenizer.load(empty), new RegExp(`${empty}/tokenizer\\.json: not found`));
  const bad = textDir(null, { 'tokenizer.json': '{"model": {"type": "BPE",' });
  await rejects(TextTokenizer.load(bad), new RegExp(`${bad}/tokenizer\\.json: invalid JSON`));
  await rejects(
    TextTokenizer.load(textDir(null, { 'tokenizer.json': '[1, 2]' })),
    /tokenizer\.json: expected a JSON object/,
  );
  await rejects(
    TextTokenizer.load(textDir(made, { 'tokenizer_config.json': 'nope' })),
    /tokenizer_config\.json: invalid JSON/,
  );
  await rejects(
    TextTokenizer.load(textDir(made, { 'generation_config.json': '{' })),
    /generation_config\.json: invalid JSON/,
  );
  const wordLevel = { model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' } };
  await rejects(
    TextTokenizer.load(textDir(null, { 'tokenizer.json': wordLevel })),
    /unsupported tokenizer model type "WordLevel" \(supported: BPE, WordPiece, Unigram\)/,
  );
  await rejects(TextTokenizer.load(textDir(null, { 'tokenizer.json': { version: '1.0' } })), /no "model" object/);
  const badDecoder = { ...(made.tokenizerJson as Record<string, unknown>), decoder: { type: 'NoSuchDecoder' } };
  await rejects(
    TextTokenizer.load(textDir(null, { 'tokenizer.json': badDecoder })),
    /tokenizer\.json: the tokenizer runtime cannot load it: Unknown Decoder type: NoSuchDecoder/,
  );
});

test('errors: settings that do not fit the vocabulary or the schema', async () => {
  await rejects(
    load({}, withConfig(made, { bos_token: '<s>' })),
    /bos_token "<s>", which tokenizer\.json's vocabulary does not contain/,
  );
  await rejects(
    load({ 'generation_config.json': { eos_token_id: 'x' } }),
    /generation_config\.json: eos_token_id must be a non-negative integer/,
  );
  await rejects(
    load({}, withConfig(made, { add_bos_token: 'yes' })),
    /tokenizer_config\.json: add_bos_token must be true or false/,
  );
});

test('a minimal tokenizer.json (only a model) loads: the missing pipeline parts mean none', async () => {
  const vocab = { h: 0, i: 1, hi: 2 };
  const tok = await TextTokenizer.load(
    textDir(null, { 'tokenizer.json': { model: { type: 'BPE', vocab, merges: ['h i'] } } }),
  );
  assert.equal(tok.encode('hi'), [2]);
  assert.is(tok.bosId, null);
  assert.equal(tok.eosIds, []);
  assert.not.ok(tok.hasChatTemplate);
});

test.run();
