// The small model of `npm start`: a tiny CNN forward pass (conv2d, relu, maxPool2d, matmul,
// softmax) with seeded weights, on a device, checked against the same pass on the CPU.
import { Tensor } from '../tensor/tensor.ts';
import { Device } from '../device/device.ts';
import { tidy } from '../core/scope.ts';

export interface TinyCnn {
  conv1: Tensor;
  conv2: Tensor;
  fc: Tensor;
}

export function tinyCnn(device: Device, seed = 7): TinyCnn {
  return {
    conv1: Tensor.randn([8, 1, 3, 3], { seed, device }).affine(1 / 3, 0),
    conv2: Tensor.randn([16, 8, 3, 3], { seed: seed + 1, device }).affine(1 / Math.sqrt(72), 0),
    fc: Tensor.randn([16 * 7 * 7, 10], { seed: seed + 2, device }).affine(1 / Math.sqrt(784), 0),
  };
}

/** images [n, 1, 28, 28] -> class probabilities [n, 10] */
export function forward(m: TinyCnn, images: Tensor): Tensor {
  return tidy(() => {
    const n = images.dim(0);
    let h = images.conv2d(m.conv1, { padding: 1 }).relu().maxPool2d({ kernel: 2 }); // [n, 8, 14, 14]
    h = h.conv2d(m.conv2, { padding: 1 }).relu().maxPool2d({ kernel: 2 }); // [n, 16, 7, 7]
    return h
      .reshape([n, 16 * 7 * 7])
      .matmul(m.fc)
      .softmax(-1);
  });
}

export interface ModelRun {
  device: string;
  ms: number;
  probs: number[][];
  maxDiffVsCpu: number | null;
  fellBackToCpu: boolean;
  reason?: string;
}

export async function runTinyCnn(device: Device): Promise<ModelRun> {
  const images = Tensor.rand([4, 1, 28, 28], { seed: 99 });
  const cpuModel = tinyCnn(Device.cpu());
  const cpuOut = forward(cpuModel, images);
  const cpuProbs = (await cpuOut.toNested()) as number[][];
  let run: ModelRun = { device: 'cpu', ms: 0, probs: cpuProbs, maxDiffVsCpu: null, fellBackToCpu: !device.isCpu };
  if (!device.isCpu) {
    try {
      const m = tinyCnn(device);
      const x = images.to(device);
      forward(m, x).dispose(); // warm-up: kernels load, libraries pick algorithms
      device.synchronize();
      const t0 = performance.now();
      const out = forward(m, x);
      const probs = (await out.toNested()) as number[][];
      const ms = performance.now() - t0;
      let diff = 0;
      probs.forEach((r, i) =>
        r.forEach((p, j) => {
          diff = Math.max(diff, Math.abs(p - cpuProbs[i]![j]!));
        }),
      );
      run = { device: String(device), ms, probs, maxDiffVsCpu: diff, fellBackToCpu: false };
      for (const t of [m.conv1, m.conv2, m.fc, x, out]) t.dispose();
    } catch (e) {
      run.reason = (e as Error).message.split('\n')[0];
    }
  }
  if (run.device === 'cpu') {
    const t0 = performance.now();
    forward(cpuModel, images).dispose();
    run.ms = performance.now() - t0;
  }
  for (const t of [cpuModel.conv1, cpuModel.conv2, cpuModel.fc, images, cpuOut]) t.dispose();
  return run;
}
