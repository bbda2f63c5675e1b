// GPU path of the indexing family: not written yet. The dispatcher hands these fully validated
// parameters; ids must still be range-checked on the device (an IndexError, nothing written).
import type { Shape } from '../../layout.ts';
import type { Tensor } from '../../tensor.ts';
import { notOnDevice } from '../dispatch.ts';

export function indexSelect(x: Tensor, _ids: Tensor, _dim: number, _outShape: Shape): Tensor { return notOnDevice('indexSelect', x); }
export function gather(x: Tensor, _ids: Tensor, _dim: number): Tensor { return notOnDevice('gather', x); }
export function scatter(x: Tensor, _ids: Tensor, _src: Tensor, _dim: number, add: boolean): Tensor { return notOnDevice(add ? 'scatterAdd' : 'scatter', x); }
export function indexAdd(x: Tensor, _ids: Tensor, _src: Tensor, _dim: number): Tensor { return notOnDevice('indexAdd', x); }
export function embedding(_ids: Tensor, table: Tensor, _outShape: Shape): Tensor { return notOnDevice('embedding', table); }
