// The streaming detokenizer: pieces put together equal decode() of all ids, no piece carries
// half a character (U+FFFD), and the space cleanup streams exactly as it decodes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TextTokenizer } from '../../src/index.ts';
import { cleanUpSpaces, StreamingCleanup } from '../../src/text/cleanup.ts';
import { makeBpeTokenizer, SAMPLE_CORPUS } from '../fixtures/bpe-tokenizer.ts';
import { removeTextDirs, textDir, withConfig } from '../fixtures/text-dir.ts';

// a small vocabulary, so most non-ASCII characters are split over several ids
const made = makeBpeTokenizer({ corpus: SAMPLE_CORPUS, vocabSize: 400 });
const load = (tok = made) => TextTokenizer.load(textDir(tok));
test.after(removeTextDirs);

const TEXTS = [
  'Plain ASCII text, with punctuation!',
  'Déjà vu: crème brûlée à São Paulo',
  '東京は日本の首都です。你好，世界！',
  'Emoji 🙂🚀 👍🏽 👨‍👩‍👧 ❤️ ∑∫√',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHé 🙂<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n東京',
  'สวัสดี ครับ',
];

function streamAll(tok: TextTokenizer, ids: number[], skipSpecialTokens: boolean): string[] {
  const s = tok.streamer({ skipSpecialTokens });
  const pieces = ids.map((id) => s.push(id));
  pieces.push(s.flush());
  return pieces;
}

test('the texts really split characters over ids (else the streaming tests prove nothing)', async () => {
  const tok = await load();
  for (const t of TEXTS.slice(1)) {
    const ids = tok.encode(t, { addSpecialTokens: false });
    assert.ok(
      ids.some((id) => tok.decode([id]).includes('\uFFFD')),
      `${JSON.stringify(t)} has an id that is half a character`,
    );
  }
});

test('streamed pieces join to decode(all), never contain U+FFFD, with and without special tokens', async () => {
  const tok = await load();
  for (const t of TEXTS) {
    const ids = tok.encode(t);
    for (const skip of [false, true]) {
      const pieces = streamAll(tok, ids, skip);
      assert.is(pieces.join(''), tok.decode(ids, { skipSpecialTokens: skip }), `${JSON.stringify(t)} skip=${skip}`);
      for (const p of pieces) assert.not.ok(p.includes('\uFFFD'), `piece ${JSON.stringify(p)} of ${JSON.stringify(t)}`);
    }
  }
});

test('text comes out as soon as it is complete', async () => {
  const tok = await load();
  const ids = tok.encode('東', { addSpecialTokens: false });
  assert.is(ids.length, 3);
  const s = tok.streamer();
  assert.is(s.push(ids[0]!), '');
  assert.is(s.push(ids[1]!), '');
  assert.is(s.push(ids[2]!), '東');
  const word = tok.encode(' model', { addSpecialTokens: false });
  assert.is(word.length, 1);
  assert.is(s.push(word[0]!), ' model');
  assert.is(s.flush(), '');
});

test('flush gives what is held back, as decode would (a cut-off character stays U+FFFD)', async () => {
  const tok = await load();
  const ids = tok.encode('ab東', { addSpecialTokens: false }).slice(0, -1);
  const s = tok.streamer();
  const pieces = ids.map((id) => s.push(id));
  assert.is(pieces.join(''), 'ab');
  assert.is(s.flush(), '\uFFFD');
  assert.is('ab\uFFFD', tok.decode(ids));
  // the streamer starts afresh after flush
  assert.is(s.push(tok.encode('Z', { addSpecialTokens: false })[0]!), 'Z');
});

test('invalid UTF-8 in the middle is let through once later text completes it, as decode does', async () => {
  const tok = await load();
  const e9 = tok.encode('é', { addSpecialTokens: false })[0]!; // the lead byte alone
  const ids = [e9, ...tok.encode('ok', { addSpecialTokens: false })];
  assert.is(streamAll(tok, ids, false).join(''), tok.decode(ids));
});

test('with clean_up_tokenization_spaces, the stream equals the cleaned-up decode', async () => {
  const tok = await load(withConfig(made, { clean_up_tokenization_spaces: true }));
  const text = "Hello . Do n't stop , it 's fine ! Is it ? We 've a ' quote ' you 're  .  x";
  const ids = tok.encode(text, { addSpecialTokens: false });
  const whole = tok.decode(ids);
  assert.is.not(whole, text, 'the cleanup changes this text');
  assert.is(streamAll(tok, ids, false).join(''), whole);
});

/**
 * A SentencePiece-style tokenizer laid out like Llama 2's tokenizer.json: "▁" for spaces, bytes
 * as <0xNN> fallback tokens, and a decoder that strips the first space of the text, so a token's
 * text depends on what came before it.
 */
function sentencePieceDir(): string {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  for (const t of ['▁', ...'acehtz', '▁t', 'he', '▁the', '▁c', 'at', '▁cat']) vocab[t] = Object.keys(vocab).length;
  const special = (id: number, content: string) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [special(0, '<unk>'), special(1, '<s>'), special(2, '</s>')],
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Prepend', prepend: '▁' },
        { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
      ],
    },
    pre_tokenizer: null,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    },
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab,
      merges: ['▁ t', 'h e', '▁t he', '▁ c', 'a t', '▁c at'],
    },
  };
  return textDir(null, { 'tokenizer.json': json, 'tokenizer_config.json': { bos_token: '<s>', eos_token: '</s>' } });
}

test('a SentencePiece-style tokenizer (byte fallback, first space stripped) streams exactly too', async () => {
  const tok = await TextTokenizer.load(sentencePieceDir());
  for (const text of ['the cat 東 the', 'the 🙂cat zeta']) {
    const ids = tok.encode(text);
    assert.is(ids[0], 1);
    assert.ok(
      ids.some((id) => tok.decode([id]).includes('\uFFFD')),
      'some id is a lone byte',
    );
    assert.is(tok.decode(ids, { skipSpecialTokens: true }), text);
    for (const skip of [false, true]) {
      const pieces = streamAll(tok, ids, skip);
      assert.is(pieces.join(''), tok.decode(ids, { skipSpecialTokens: skip }), `${JSON.stringify(text)} skip=${skip}`);
      for (const p of pieces) assert.not.ok(p.includes('\uFFFD'));
    }
    assert.is(
      streamAll(tok, ids, true).find((p) => p !== ''),
      'the',
      'the first word keeps its space stripped',
    );
  }
});

/** a small deterministic generator, so failures reproduce */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => (x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

test('StreamingCleanup over random cuts equals cleanUpSpaces of the whole', () => {
  const rand = lcg(7);
  const alphabet = [' ', ' ', ' ', '.', '?', '!', ',', "'", 'n', 't', 's', 'm', 'v', 'e', 'r', 'a', 'x'];
  for (let trial = 0; trial < 2000; trial++) {
    let text = '';
    const n = 1 + Math.floor(rand() * 24);
    for (let i = 0; i < n; i++) text += alphabet[Math.floor(rand() * alphabet.length)];
    const c = new StreamingCleanup();
    let out = '',
      pos = 0;
    while (pos < text.length) {
      const len = 1 + Math.floor(rand() * 4);
      out += c.push(text.slice(pos, pos + len));
      pos += len;
    }
    out += c.end();
    assert.is(out, cleanUpSpaces(text), JSON.stringify(text));
  }
});

test("cleanUpSpaces agrees with the tokenizer runtime's own cleanup", async () => {
  const tok = await load(withConfig(made, { clean_up_tokenization_spaces: true }));
  const rand = lcg(11);
  const alphabet = [' ', ' ', '.', '?', '!', ',', "'", 'n', 't', 's', 'm', 'v', 'e', 'r', 'a'];
  for (let trial = 0; trial < 300; trial++) {
    let text = '';
    for (let i = 0; i < 16; i++) text += alphabet[Math.floor(rand() * alphabet.length)];
    assert.is(tok.decode(tok.encode(text, { addSpecialTokens: false })), cleanUpSpaces(text), JSON.stringify(text));
  }
  assert.is(cleanUpSpaces("a  ' m"), "a'm", 'one rule exposes a match for a later one');
});

test.run();
