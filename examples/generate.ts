// Text from a Hugging Face Llama-family folder (llama, mistral, qwen2):
//   npx tsx examples/generate.ts ./Llama-3.2-1B-Instruct "Why is the sky blue?"
import { Device, PretrainedLlama } from '../src/index.ts';

const [dir, prompt = 'Tell me about GPUs.'] = process.argv.slice(2);
if (!dir) {
  console.error('usage: tsx examples/generate.ts MODEL_DIR [PROMPT]');
  process.exit(2);
}
const m = await PretrainedLlama.load(dir, { device: Device.best() });
const input = m.tokenizer?.hasChatTemplate ? [{ role: 'user', content: prompt }] : prompt;
let n = 0;
for await (const tok of m.generate(input, { maxTokens: 128 })) {
  process.stdout.write(tok.text);
  if (tok.id !== null) n++;
}
process.stdout.write(`\n[${n} tokens on ${m.model.device}]\n`);
m.dispose();
