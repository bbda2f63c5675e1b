// placeholder signatures: replaced by the family's real dispatcher
import type { Tensor } from '../tensor.ts';
import type { ConvOptions, ConvTransposeOptions } from './options.ts';
export function conv1d(_x: Tensor, _w: Tensor, _o: ConvOptions): Tensor { throw new Error('not written yet'); }
export function conv2d(_x: Tensor, _w: Tensor, _o: ConvOptions): Tensor { throw new Error('not written yet'); }
export function convTranspose1d(_x: Tensor, _w: Tensor, _o: ConvTransposeOptions): Tensor { throw new Error('not written yet'); }
export function convTranspose2d(_x: Tensor, _w: Tensor, _o: ConvTransposeOptions): Tensor { throw new Error('not written yet'); }
