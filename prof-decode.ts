// temporary: eager decode of a few tokens for ncu
import { Device } from './src/index.ts';
import { PretrainedLlama } from './src/models/pretrained.ts';
import { generateIds } from './src/models/generate.ts';
const dev = Device.bestGpu()!;
const p = await PretrainedLlama.load(process.argv[2]!, { device: dev, dtype: 'bf16' });
const graph = process.argv[3] === 'graph';
for await (const st of generateIds(p.model, [[1, 2, 3, 4]], { maxTokens: 3, stopIds: [], graph })) console.log(st.ids[0]);
