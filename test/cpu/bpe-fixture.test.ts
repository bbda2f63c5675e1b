// The test-tokenizer generator: schema details that other readers (Python tokenizers) rely on,
// determinism, vocabulary sizes, and its errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { byteToChar, makeBpeTokenizer, LLAMA3_SPECIAL_TOKENS, SAMPLE_CORPUS } from '../fixtures/bpe-tokenizer.ts';

interface Json {
  added_tokens: { id: number; content: string; special: boolean }[];
  model: {
    type: string;
    vocab: Record<string, number>;
    merges: string[];
    ignore_merges: boolean;
    byte_fallback: boolean;
  };
}
const json = (vocabSize: number, specialTokens?: string[]) =>
  makeBpeTokenizer({ corpus: SAMPLE_CORPUS, vocabSize, specialTokens }).tokenizerJson as unknown as Json;

test('byteToChar: 256 distinct printable characters, printable ASCII maps to itself', () => {
  const m = byteToChar();
  assert.is(new Set(m).size, 256);
  for (const c of m) assert.not.match(c, /[\s\p{Cc}]/u, `byte char ${JSON.stringify(c)} is whitespace or control`);
  assert.is(m[0x41], 'A');
  assert.is(m[0x20], '\u0120'); // 'Ġ', as in GPT-2 / Llama 3 vocabularies
  assert.is(m[0x0a], '\u010a'); // 'Ċ'
});

test('ids 0..255 are the bytes; merges are "a b" over known tokens; specials come last', () => {
  const j = json(600);
  const m = byteToChar();
  for (let b = 0; b < 256; b++) assert.is(j.model.vocab[m[b]!], b);
  const ids = Object.values(j.model.vocab).sort((a, b) => a - b);
  assert.equal(
    ids,
    Array.from({ length: 600 - LLAMA3_SPECIAL_TOKENS.length }, (_, i) => i),
    'model ids are 0..n-1 without gaps',
  );
  assert.ok(j.model.merges.length >= ids.length - 256);
  for (const mg of j.model.merges) {
    const parts = mg.split(' ');
    assert.is(parts.length, 2, mg);
    assert.ok(parts[0]! in j.model.vocab && parts[1]! in j.model.vocab && parts.join('') in j.model.vocab, mg);
  }
  assert.equal(
    j.added_tokens.map((t) => t.content),
    [...LLAMA3_SPECIAL_TOKENS],
  );
  assert.equal(
    j.added_tokens.map((t) => t.id),
    [595, 596, 597, 598, 599],
  );
  assert.ok(j.added_tokens.every((t) => t.special));
  assert.is(j.model.type, 'BPE');
  assert.is(j.model.ignore_merges, false);
  assert.is(j.model.byte_fallback, false);
});

test('the most frequent pair is merged first', () => {
  // "ab" occurs 3 times per word, "cd" once: ab must be merge 0
  const j = makeBpeTokenizer({ corpus: 'ababab cd '.repeat(5), vocabSize: 262 }).tokenizerJson as unknown as Json;
  assert.is(j.model.merges[0], 'a b');
});

test('deterministic: the same corpus gives the same files', () => {
  assert.equal(
    makeBpeTokenizer({ corpus: SAMPLE_CORPUS, vocabSize: 700 }),
    makeBpeTokenizer({ corpus: SAMPLE_CORPUS, vocabSize: 700 }),
  );
});

test('a vocabSize beyond what the corpus teaches is filled with two-letter tokens', () => {
  const small = json(300),
    big = json(3000);
  assert.is(Object.keys(big.model.vocab).length + big.added_tokens.length, 3000);
  // the filled vocabulary keeps the learned merges as its first, in the same order
  assert.equal(big.model.merges.slice(0, small.model.merges.length), small.model.merges);
  assert.ok(big.model.merges.at(-1)!.match(/^[A-Za-z0-9] [A-Za-z0-9]$/));
});

test('custom special tokens: the first is BOS, the second EOS', () => {
  const made = makeBpeTokenizer({ corpus: SAMPLE_CORPUS, vocabSize: 300, specialTokens: ['<s>', '</s>', '<pad>'] });
  const cfg = made.tokenizerConfig as { bos_token: string; eos_token: string };
  assert.is(cfg.bos_token, '<s>');
  assert.is(cfg.eos_token, '</s>');
  assert.equal(
    (made.tokenizerJson as unknown as Json).added_tokens.map((t) => t.id),
    [297, 298, 299],
  );
});

test('errors: too small a vocabulary, too few or repeated special tokens, too large a vocabulary', () => {
  assert.throws(() => makeBpeTokenizer({ corpus: 'abc', vocabSize: 200 }), /no room for 256 bytes/);
  assert.throws(
    () => makeBpeTokenizer({ corpus: 'abc', vocabSize: 300, specialTokens: ['<s>'] }),
    /at least BOS and EOS/,
  );
  assert.throws(() => makeBpeTokenizer({ corpus: 'abc', vocabSize: 300, specialTokens: ['<s>', '<s>'] }), /duplicates/);
  assert.throws(
    () => makeBpeTokenizer({ corpus: 'abc', vocabSize: 100000 }),
    /too large; this corpus allows at most \d+/,
  );
});

test.run();
