// The Fashion-MNIST example on the GPU with the real data set: one epoch over the 60,000
// training images must reach 85% test accuracy. The data is read from FASHION_MNIST_DIR, else
// from /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist); without the four
// files there the test is skipped and says so.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gpuSuite } from './harness.ts';
import { REPO_ROOT, runtime, tsCommand } from '../runtime.ts';

const FILES = [
  'train-images-idx3-ubyte.gz',
  'train-labels-idx1-ubyte.gz',
  't10k-images-idx3-ubyte.gz',
  't10k-labels-idx1-ubyte.gz',
];
const dir = process.env.FASHION_MNIST_DIR ?? '/usr/share/datasets/fashion-mnist';
const missing = FILES.filter((f) => !existsSync(join(dir, f)));

const s = gpuSuite('gpu/fashion-mnist');
const NAME = 'one epoch of the Fashion-MNIST example reaches 85% test accuracy';

if (missing.length > 0 || s.device?.isCpu) {
  console.log(
    missing.length > 0
      ? `gpu/fashion-mnist: skipped, ${dir} lacks ${missing.join(', ')} (set FASHION_MNIST_DIR)`
      : 'gpu/fashion-mnist: skipped, a whole epoch is for a GPU',
  );
  test.skip(NAME, () => {});
} else {
  s.test(NAME, (dev) => {
    const { cmd, args } = tsCommand(runtime, join(REPO_ROOT, 'examples', 'train-fashion-mnist.ts'), [
      '--data',
      dir,
      '--device',
      String(dev),
      '--epochs',
      '1',
    ]);
    const r = spawnSync(cmd, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 });
    assert.is(r.status, 0, `exit ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
    const m = /epoch 1: train loss [\d.]+, test accuracy ([\d.]+)%/.exec(r.stdout);
    assert.ok(m, `no accuracy line in:\n${r.stdout}`);
    const acc = Number(m![1]);
    console.log(`  gpu/fashion-mnist: ${m![0]} on ${dev}`);
    assert.ok(acc >= 85, `test accuracy ${acc}% after one epoch`);
  });
}

s.run();
