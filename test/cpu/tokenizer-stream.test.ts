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
    assert.ok(ids.some((id) => tok.decode([id]).includes('\uFFFD')), `${JSON.stringify(t)} has an id that is half a character`);
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
    let out = '', pos = 0;
    while (pos < text.length) {
      const len = 1 + Math.floor(rand() * 4);
      out += c.push(text.slice(pos, pos + len));
      pos += len;
    }
    out += c.end();
    assert.is(out, cleanUpSpaces(text), JSON.stringify(text));
  }
});

test('cleanUpSpaces agrees with the tokenizer runtime\'s own cleanup', async () => {
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
