// The tiny CNN of `npm start` (conv2d, relu, maxPool2d, matmul, softmax) on the best device,
// checked against the CPU reference.
//   npx tsx examples/tiny-cnn.ts
import { Device } from '../src/index.ts';
import { runTinyCnn } from '../src/cli/tiny-cnn.ts';

const r = await runTinyCnn(Device.best());
console.log(`ran on ${r.device} in ${r.ms.toFixed(2)} ms${r.reason ? ` (fell back: ${r.reason})` : ''}`);
if (r.maxDiffVsCpu !== null) console.log(`max |p - p_cpu| = ${r.maxDiffVsCpu.toExponential(2)}`);
for (const [i, p] of r.probs.entries()) console.log(`image ${i}: [${p.map((v) => v.toFixed(3)).join(', ')}]`);
