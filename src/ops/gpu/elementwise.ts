// GPU path for element-wise ops: not written yet (the GPU agents replace these bodies). The
// dispatcher hands over validated arguments: output shape already broadcast, scalars already
// rounded to the output dtype.
import type { DType } from '../../dtype.ts';
import type { Shape } from '../../layout.ts';
import type { Tensor } from '../../tensor.ts';
import type { BinaryOp, CmpOp, ParamUnary, UnaryOp } from '../types.ts';
import { notOnDevice } from '../dispatch.ts';

/** x is f32/f64/f16/bf16; the result has x's shape and dtype */
export function unary(x: Tensor, op: UnaryOp): Tensor { return notOnDevice(op, x); }
/** x is f32/f64/f16/bf16; the result has x's shape and dtype */
export function paramUnary(x: Tensor, p: ParamUnary): Tensor { return notOnDevice(p.op, x); }
/** b: a tensor of a's dtype or a scalar rounded to it; both broadcast to outShape */
export function binary(op: BinaryOp, a: Tensor, _b: Tensor | number, _outShape: Shape): Tensor { return notOnDevice(op, a); }
/** like binary; the result is u8 */
export function compare(op: CmpOp, a: Tensor, _b: Tensor | number, _outShape: Shape): Tensor { return notOnDevice(op, a); }
/** cond u8/u32/i64; a, b tensors of dtype or scalars rounded to it; all broadcast to outShape */
export function where(cond: Tensor, _a: Tensor | number, _b: Tensor | number, _outShape: Shape, _dtype: DType): Tensor { return notOnDevice('where', cond); }
