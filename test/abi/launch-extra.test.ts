// The packed-argument launch block handed to hipModuleLaunchKernel as `extra`: checks the bytes
// the HIP runtime will read (marker values come from HIP_CONST, which test/abi checks against
// the headers), including after the argument buffer grows.
import koffi from 'koffi';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HIP_CONST } from '../../src/ffi/hip.ts';
import { archKey, HIP_LAUNCH_MARKERS } from '../../src/runtime/rocm/runtime.ts';
import { LaunchBlock } from '../../src/runtime/launch-block.ts';

const u64 = (p: bigint, i: number): bigint => BigInt(koffi.decode(p, i * 8, 'uint64_t') as number | bigint);

function checkBlock(lb: LaunchBlock, args: Uint8Array): void {
  lb.pack(args);
  assert.is(u64(lb.extra, 0), BigInt(HIP_CONST.HIP_LAUNCH_PARAM_BUFFER_POINTER));
  assert.is(u64(lb.extra, 2), BigInt(HIP_CONST.HIP_LAUNCH_PARAM_BUFFER_SIZE));
  assert.is(u64(lb.extra, 4), BigInt(HIP_CONST.HIP_LAUNCH_PARAM_END));
  const buf = u64(lb.extra, 1);
  const sizeCell = u64(lb.extra, 3);
  assert.is(u64(sizeCell, 0), BigInt(args.length), 'size cell holds the argument byte count');
  assert.equal([...new Uint8Array(koffi.view(buf, args.length))], [...args]);
}

test('extra = {BUFFER_POINTER, buf, BUFFER_SIZE, &size, END} with the packed arguments', () => {
  const lb = new LaunchBlock(HIP_LAUNCH_MARKERS);
  checkBlock(
    lb,
    Uint8Array.from({ length: 24 }, (_, i) => i + 1),
  );
  checkBlock(
    lb,
    Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 0xff),
  ); // grows past 256
  checkBlock(lb, new Uint8Array([9, 9, 9, 9]));
});

test('arch key strips feature suffixes', () => {
  assert.is(archKey('gfx942:sramecc+:xnack-'), 'gfx942');
  assert.is(archKey('gfx1100'), 'gfx1100');
  assert.is(archKey('gfx90a:xnack+'), 'gfx90a');
});

test.run();
