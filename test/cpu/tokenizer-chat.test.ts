// Chat templates: the made tokenizer's Llama-3-like template rendered against hand-written
// strings, where templates come from (string, named list, chat_template.jinja), and errors.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TextTokenizer, TokenizerError, type ChatMessage } from '../../src/index.ts';
import { makeBpeTokenizer, SAMPLE_CORPUS } from '../fixtures/bpe-tokenizer.ts';
import { removeTextDirs, textDir, withConfig } from '../fixtures/text-dir.ts';

const made = makeBpeTokenizer({ corpus: SAMPLE_CORPUS, vocabSize: 600 });
const load = (tok = made, extra: Record<string, object | string> = {}) => TextTokenizer.load(textDir(tok, extra));
test.after(removeTextDirs);

const CHAT: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: '  Hi, what is 2+2?\n' },
  { role: 'assistant', content: '4' },
  { role: 'user', content: 'Thanks! 🙂' },
];
const EXPECTED =
  '<|begin_of_text|>' +
  '<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>' +
  '<|start_header_id|>user<|end_header_id|>\n\nHi, what is 2+2?<|eot_id|>' +
  '<|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|>' +
  '<|start_header_id|>user<|end_header_id|>\n\nThanks! 🙂<|eot_id|>';
const GEN = '<|start_header_id|>assistant<|end_header_id|>\n\n';

test('the Llama-3-like template, with and without a generation prompt', async () => {
  const tok = await load();
  assert.ok(tok.hasChatTemplate);
  assert.is(tok.applyChatTemplate(CHAT), EXPECTED);
  assert.is(tok.applyChatTemplate(CHAT, { addGenerationPrompt: false }), EXPECTED);
  assert.is(tok.applyChatTemplate(CHAT, { addGenerationPrompt: true }), EXPECTED + GEN);
  assert.is(tok.applyChatTemplate([], { addGenerationPrompt: true }), '<|begin_of_text|>' + GEN);
});

test('a rendered chat encodes to one BOS and one id per header token', async () => {
  const tok = await load();
  const ids = tok.encode(tok.applyChatTemplate(CHAT, { addGenerationPrompt: true }), { addSpecialTokens: false });
  assert.is(ids[0], tok.bosId);
  assert.is(ids.filter((id) => id === tok.bosId).length, 1);
  assert.is(ids.filter((id) => id === tok.tokenToId('<|eot_id|>')).length, 4);
  assert.is(ids.filter((id) => id === tok.tokenToId('<|start_header_id|>')).length, 5);
  assert.is(ids.at(-1), tok.encode('\n\n', { addSpecialTokens: false }).at(-1));
});

test('templates see bos_token, eos_token and the messages as given', async () => {
  const template =
    '{{ bos_token }}|{{ eos_token }}|{% for m in messages %}{{ m.role }}={{ m.content }};{% endfor %}{{ add_generation_prompt }}';
  const tok = await load(withConfig(made, { chat_template: template }));
  assert.is(
    tok.applyChatTemplate([{ role: 'user', content: ' a ' }]),
    '<|begin_of_text|>|<|end_of_text|>|user= a ;false',
  );
  assert.is(tok.applyChatTemplate([], { addGenerationPrompt: true }), '<|begin_of_text|>|<|end_of_text|>|true');
});

test('a named list of templates: the one named "default"', async () => {
  const list = [
    { name: 'tool_use', template: 'TOOLS' },
    { name: 'default', template: 'DEFAULT {{ messages | length }}' },
  ];
  const tok = await load(withConfig(made, { chat_template: list }));
  assert.ok(tok.hasChatTemplate);
  assert.is(tok.applyChatTemplate(CHAT), 'DEFAULT 4');
});

test('chat_template.jinja takes precedence over tokenizer_config.json', async () => {
  const tok = await load(made, { 'chat_template.jinja': 'FILE {{ messages[0].content }}' });
  assert.is(tok.applyChatTemplate(CHAT), 'FILE You are terse.');
});

function throwsTokenizer(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: Error) => e instanceof TokenizerError && pattern.test(e.message));
}

test('errors: no template, no default among named ones, a template that raises or does not parse', async () => {
  const none = await load(withConfig(made, { chat_template: undefined }));
  assert.not.ok(none.hasChatTemplate);
  throwsTokenizer(
    () => none.applyChatTemplate(CHAT),
    /the model has no chat template \(no chat_template in tokenizer_config\.json, no chat_template\.jinja\)/,
  );
  const noDefault = await load(withConfig(made, { chat_template: [{ name: 'rag', template: 'x' }] }));
  assert.not.ok(noDefault.hasChatTemplate);
  throwsTokenizer(
    () => noDefault.applyChatTemplate(CHAT),
    /tokenizer_config\.json: chat_template lists templates named "rag" but none named "default"/,
  );
  const raising = await load(
    withConfig(made, {
      chat_template:
        "{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must start with a user message') }}{% endif %}ok",
    }),
  );
  throwsTokenizer(
    () => raising.applyChatTemplate(CHAT),
    /tokenizer_config\.json: rendering the chat template failed: Conversations must start with a user message/,
  );
  assert.is(raising.applyChatTemplate(CHAT.slice(1)), 'ok');
  const broken = await load(withConfig(made, { chat_template: '{% for m in messages %}{{ m.content }}' }));
  assert.is(
    broken.encode('ok', { addSpecialTokens: false }).length > 0,
    true,
    'a broken template does not stop encoding',
  );
  throwsTokenizer(() => broken.applyChatTemplate(CHAT), /tokenizer_config\.json: the chat template does not parse/);
});

test.run();
