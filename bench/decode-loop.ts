// npm run bench:decode-loop -- [--torch] [--python CMD] [--steps 50]
//
// The decode loop of bench/decode-loop-run.ts alone (npm run bench runs it too, after the op
// table), with the copy ceiling measured in the same run.
import { parseArgs } from 'node:util';
import { Device } from '../src/index.ts';
import { measureCopyGBs } from './ours.ts';
import { printDecodeLoop, runDecodeLoop } from './decode-loop-run.ts';

const { values: opt } = parseArgs({
  options: {
    torch: { type: 'boolean', default: false },
    python: { type: 'string', default: 'python3' },
    steps: { type: 'string', default: '50' },
  },
});
const dev = Device.bestGpu();
if (!dev) {
  console.log('bench:decode-loop: no ROCm or CUDA device found');
  process.exit(0);
}
const copyGBs = measureCopyGBs(dev);
printDecodeLoop(dev, runDecodeLoop(dev, copyGBs, Number(opt.steps), opt.torch ? opt.python! : null), copyGBs);
