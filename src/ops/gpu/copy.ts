import type { Tensor } from '../../tensor.ts';
import { notOnDevice } from '../dispatch.ts';
export function copyInto(dst: Tensor, _src: Tensor): void { notOnDevice('copy', dst); }
export function constSet(x: Tensor, _value: number): void { notOnDevice('constSet', x); }
