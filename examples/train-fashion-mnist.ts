// Trains a small CNN on Fashion-MNIST (conv 1->32, pool, conv 32->64, pool, linear 3136->128->10)
// with Adam and cross entropy, and prints the test accuracy after each epoch.
//
//   npx tsx examples/train-fashion-mnist.ts [--data DIR] [--device cpu|rocm:0|cuda:0]
//       [--epochs 2] [--batch 64] [--lr 0.001] [--limit N] [--seed 1] [--eager]
//
// --data: the folder with the four gzip'd IDX files (default /usr/share/datasets/fashion-mnist,
// where Debian's dataset-fashion-mnist package installs them). --device: default the best device
// present. --limit: train on the first N training images (and test on the first N/6 test
// images), for a quick run on the CPU. On a GPU the forward and backward of a full batch are
// recorded once and replayed (captureBackward); --eager runs every op of every step instead.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { Device, Tensor, captureBackward, nn, noGrad, optim, tidy } from '../src/index.ts';

const FILES = {
  trainImages: 'train-images-idx3-ubyte.gz',
  trainLabels: 'train-labels-idx1-ubyte.gz',
  testImages: 't10k-images-idx3-ubyte.gz',
  testLabels: 't10k-labels-idx1-ubyte.gz',
};
// the training set's pixel mean and standard deviation (of x / 255)
const MEAN = 0.286,
  STD = 0.353;

const { values: args } = parseArgs({
  options: {
    data: { type: 'string', default: '/usr/share/datasets/fashion-mnist' },
    device: { type: 'string' },
    epochs: { type: 'string', default: '2' },
    batch: { type: 'string', default: '64' },
    lr: { type: 'string', default: '0.001' },
    limit: { type: 'string' },
    seed: { type: 'string', default: '1' },
    eager: { type: 'boolean', default: false },
  },
});

function positiveInt(name: string, v: string | undefined): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got '${v}'`);
  return n;
}
const epochs = positiveInt('epochs', args.epochs);
const batch = positiveInt('batch', args.batch);
const seed = positiveInt('seed', args.seed);
const limit = args.limit === undefined ? Infinity : positiveInt('limit', args.limit);
const lr = Number(args.lr);
if (!(lr > 0)) throw new Error(`--lr must be a positive number, got '${args.lr}'`);

/** an IDX file's dims and bytes (unsigned bytes only: what Fashion-MNIST uses) */
function readIdx(path: string, rank: number): { dims: number[]; data: Uint8Array } {
  const buf = gunzipSync(readFileSync(path));
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const magic = view.getUint32(0);
  if (magic !== 0x0800 + rank) throw new Error(`${path}: not an IDX file of unsigned bytes with ${rank} dims`);
  const dims = Array.from({ length: rank }, (_, i) => view.getUint32(4 + 4 * i));
  const start = 4 + 4 * rank;
  const count = dims.reduce((a, b) => a * b, 1);
  if (buf.byteLength - start !== count)
    throw new Error(`${path}: ${buf.byteLength - start} data bytes, dims say ${count}`);
  return { dims, data: buf.subarray(start) };
}

interface Split {
  images: Uint8Array;
  labels: Uint8Array;
  count: number;
}
function loadSplit(images: string, labels: string, max: number): Split {
  const im = readIdx(join(args.data!, images), 3),
    lb = readIdx(join(args.data!, labels), 1);
  if (im.dims[1] !== 28 || im.dims[2] !== 28 || im.dims[0] !== lb.dims[0])
    throw new Error(
      `${args.data}: expected 28x28 images with one label each, got images [${im.dims}] and labels [${lb.dims}]`,
    );
  const count = Math.min(im.dims[0]!, max);
  return { images: im.data, labels: lb.data, count };
}

const missing = Object.values(FILES).filter((f) => !existsSync(join(args.data!, f)));
if (missing.length > 0) {
  console.error(
    `Fashion-MNIST not found in ${args.data} (missing ${missing.join(', ')}).\n` +
      "Install Debian's dataset-fashion-mnist package (apt-get install dataset-fashion-mnist), or put the four\n" +
      "gzip'd IDX files of the Fashion-MNIST project (github.com/zalandoresearch/fashion-mnist) in a folder\n" +
      'and pass it with --data.',
  );
  process.exit(2);
}

const device = args.device === undefined ? Device.best() : Device.parse(args.device);
const train = loadSplit(FILES.trainImages, FILES.trainLabels, limit);
const test = loadSplit(
  FILES.testImages,
  FILES.testLabels,
  limit === Infinity ? Infinity : Math.max(1, Math.floor(limit / 6)),
);

/** images idx[from..to) as a normalised [n, 1, 28, 28] f32 batch and i64 labels, on the device */
function batchOf(split: Split, idx: Uint32Array, from: number, to: number): { x: Tensor; y: Tensor } {
  const n = to - from;
  const px = new Float32Array(n * 784);
  const ids = new BigInt64Array(n);
  for (let i = 0; i < n; i++) {
    const k = idx[from + i]!;
    const src = split.images.subarray(k * 784, (k + 1) * 784);
    for (let j = 0; j < 784; j++) px[i * 784 + j] = (src[j]! / 255 - MEAN) / STD;
    ids[i] = BigInt(split.labels[k]!);
  }
  return { x: Tensor.from(px, { shape: [n, 1, 28, 28], device }), y: Tensor.from(ids, { shape: [n], device }) };
}

/** a seeded shuffle (xorshift32 driving Fisher-Yates) */
function shuffled(n: number, s: number): Uint32Array {
  const idx = Uint32Array.from({ length: n }, (_, i) => i);
  let state = s >>> 0 || 1;
  for (let i = n - 1; i > 0; i--) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const j = (state >>> 0) % (i + 1);
    [idx[i], idx[j]] = [idx[j]!, idx[i]!];
  }
  return idx;
}

/** a progress bar on a terminal; loss() reads the running loss back (only then) */
function progress(epoch: number, done: number, total: number, loss: () => number): void {
  if (!process.stderr.isTTY) return;
  const width = 30,
    filled = Math.round((done / total) * width);
  const bar = `${'='.repeat(filled)}${filled < width ? '>' : ''}${' '.repeat(Math.max(0, width - filled - 1))}`;
  process.stderr.write(`\repoch ${epoch} [${bar}] ${done}/${total} loss ${loss().toFixed(4)}  `);
  if (done === total) process.stderr.write('\n');
}

nn.manualSeed(seed);
const model = new nn.Sequential(
  new nn.Conv2d(1, 32, 3, { padding: 1, device }),
  new nn.ReLU(),
  new nn.MaxPool2d(2),
  new nn.Conv2d(32, 64, 3, { padding: 1, device }),
  new nn.ReLU(),
  new nn.MaxPool2d(2),
  new nn.Flatten(),
  new nn.Linear(64 * 7 * 7, 128, { device }),
  new nn.ReLU(),
  new nn.Linear(128, 10, { device }),
);
const opt = new optim.Adam(model.parameters(), { lr });
const params = model.parameters().reduce((a, p) => a + p.numel, 0);
console.log(`device: ${device}; ${train.count} training and ${test.count} test images; ${params} parameters`);

// on a GPU, full batches replay one recorded forward and backward: each step's images go into
// the same two tensors; a last, smaller batch of an epoch runs eagerly
const graphed = !device.isCpu && !args.eager && train.count >= batch;
const X = graphed ? Tensor.zeros([batch, 1, 28, 28], { device }) : null;
const Y = graphed ? Tensor.zeros([batch], { device, dtype: 'i64' }) : null;
const step = graphed ? captureBackward(() => nn.crossEntropy(model.forward(X!), Y!), model.parameters()) : null;

for (let epoch = 1; epoch <= epochs; epoch++) {
  const t0 = performance.now();
  model.train();
  const order = shuffled(train.count, seed * 7919 + epoch);
  const steps = Math.ceil(train.count / batch);
  // the losses add up on the device; the sum is read back only for the progress bar
  let lossSum = Tensor.zeros([], { device });
  for (let s = 0; s < steps; s++) {
    const from = s * batch,
      to = Math.min(train.count, from + batch);
    const { x, y } = batchOf(train, order, from, to);
    const sum = tidy(() => {
      let loss: Tensor;
      if (step && to - from === batch) {
        X!.sliceSet(x, 0, 0);
        Y!.sliceSet(y, 0, 0);
        loss = step.run();
      } else {
        loss = nn.crossEntropy(model.forward(x), y);
        loss.backward();
      }
      return noGrad(() => lossSum.add(loss.mul(to - from)));
    });
    lossSum.dispose();
    lossSum = sum;
    opt.step();
    opt.zeroGrad();
    x.dispose();
    y.dispose();
    if (s % 20 === 19 || s === steps - 1) progress(epoch, s + 1, steps, () => lossSum.itemSync() / to);
  }
  const trainLoss = lossSum.itemSync() / train.count;
  lossSum.dispose();
  model.eval();
  let correct = 0;
  const all = Uint32Array.from({ length: test.count }, (_, i) => i);
  noGrad(() => {
    for (let from = 0; from < test.count; from += 500) {
      const to = Math.min(test.count, from + 500);
      const { x, y } = batchOf(test, all, from, to);
      correct += tidy(() => model.forward(x).argmax(1).toDtype('i64').eq(y).toDtype('f32').sum().itemSync());
      x.dispose();
      y.dispose();
    }
  });
  const secs = (performance.now() - t0) / 1000;
  console.log(
    `epoch ${epoch}: train loss ${trainLoss.toFixed(4)}, test accuracy ${((100 * correct) / test.count).toFixed(2)}% (${secs.toFixed(1)} s)`,
  );
}
step?.dispose();
X?.dispose();
Y?.dispose();
opt.dispose();
model.dispose();
