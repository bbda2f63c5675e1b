// TextOutput, the stop-string logic of the server: the text ends before the first stop string
// wherever token boundaries fall; text that may begin a stop string is held back until the next
// piece decides it; the earliest of several stops wins; the end flushes what was held.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TextOutput } from '../../src/serve/text-output.ts';
import type { TextStreamer } from '../../src/text/tokenizer.ts';

/** a streamer whose id i decodes to pieces[i]; `tail` comes out at flush */
function pieces(ps: string[], tail = ''): TextStreamer {
  return { push: (id) => ps[id]!, flush: () => tail };
}

/** every piece pushed in order, then the end: what was handed out, and where it stopped */
function run(ps: string[], stops: string[], tail = '') {
  const out = new TextOutput(pieces(ps, tail), stops);
  const handed: string[] = [];
  for (let i = 0; i < ps.length; i++) {
    const r = out.push(i);
    handed.push(r.text);
    if (r.stopped) return { handed, stoppedAt: i, text: handed.join('') };
  }
  const r = out.end();
  handed.push(r.text);
  return { handed, stoppedAt: r.stopped ? ps.length : -1, text: handed.join('') };
}

test('no stop strings: every piece as it comes', () => {
  const r = run(['a', 'b', 'c'], [], 'd');
  assert.equal(r.handed, ['a', 'b', 'c', 'd']);
  assert.is(r.stoppedAt, -1);
});

test('a stop string inside one piece, and across pieces', () => {
  assert.equal(run(['hello', ' wor', 'ld'], ['o w']), { handed: ['hell', ''], stoppedAt: 1, text: 'hell' });
  // 'END' begins in one piece and ends two pieces later: nothing of it is handed out
  const r = run(['xx E', 'N', 'D yy'], ['END']);
  assert.is(r.text, 'xx ');
  assert.is(r.stoppedAt, 2);
  assert.equal(r.handed, ['xx ', '', '']);
});

test('held-back text that turns out not to be a stop is handed out with the next piece', () => {
  const r = run(['ab', 'c', 'x', 'y'], ['cd']);
  assert.equal(r.handed, ['ab', '', 'cx', 'y', '']);
  assert.is(r.stoppedAt, -1);
});

test('the earliest of several stop strings wins; a stop in the final flush still stops', () => {
  assert.is(run(['one two three'], ['three', 'two']).text, 'one ');
  const r = run(['abc', 'de'], ['ef'], 'fg');
  assert.is(r.text, 'abcd');
  assert.is(r.stoppedAt, 2);
});

test('after a stop, nothing more comes out', () => {
  const out = new TextOutput(pieces(['a.', 'b']), ['.']);
  assert.equal(out.push(0), { text: 'a', stopped: true });
  assert.equal(out.push(1), { text: '', stopped: true });
  assert.equal(out.end(), { text: '', stopped: true });
});

test.run();
